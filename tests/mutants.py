"""Known mistakes, planted one at a time into a copy of solutions/, that the suite must catch and name.

Each mutant replaces one exact piece of text in one solution file (it must occur exactly once). The
suite runs that chapter's tests against the mutated copy and requires (1) that some test fails
and (2) that a failure message says "looks like: <named>", i.e. the mistake is named.
Chapter authors add their chapter's classic mistakes here.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    """One planted mistake."""

    chapter: int
    file: str  # file name in solutions/
    old: str  # exact text in the solution
    new: str  # what the mistake writes instead
    named: str  # words the failure must say after "looks like:"

    @property
    def id(self) -> str:
        return f"ch{self.chapter}-{self.named[:40]}"


MUTANTS = [
    Mutant(4, "chapter04_attention.py", "return S / np.sqrt(d_k)", "return S", "no 1/√d_k scaling"),
    Mutant(4, "chapter04_attention.py", "return S / np.sqrt(d_k)", "return S / d_k", "divided by d_k"),
    Mutant(4, "chapter04_attention.py", "e = np.exp(x - top)", "e = np.exp(x)", "subtract the max"),
    Mutant(4, "chapter04_attention.py", "e / np.sum(e, axis=axis, keepdims=True)", "e / np.sum(e, axis=0, keepdims=True)",
           "wrong axis"),
    Mutant(4, "chapter04_attention.py", "S = np.where(mask, S, -np.inf)", "S = S", "the mask was ignored"),
]
