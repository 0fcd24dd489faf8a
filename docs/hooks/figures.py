"""The course's figures: drawn from ``solutions/`` into committed SVG files, shown on the pages and in the notebooks.

A page asks for a figure with a marker, e.g. ``<!-- kata:figure attention-4 -->``. ``figures.toml`` lists the
figures with their chapter, alt text and caption; figure ``NAME`` is drawn by ``draw_NAME`` below (as SVG, by
``charts.py``, from numbers the reference implementation computes) into ``docs/figures/NAME.svg``, a committed
file, so the picture is the same wherever the learner reads: one drawing, three readers.

- ``python scripts/figures.py`` draws every figure into ``docs/figures/`` (``--check``: change nothing, name each
  file that is out of date; ``tests/test_figures.py`` runs it, so a figure cannot go stale after a change to a
  solution, an answer key or a drawing);
- ``python scripts/pages.py`` writes each marker's block into its page (``fill``): a standard Markdown image
  and its caption, which GitHub, an editor's preview, MkDocs and Zensical all render;
- the site (this file as an MkDocs hook, ``on_page_markdown``) shows the same committed file, in a
  ``<figure>`` with its caption; it never draws;
- ``scripts/notebooks.py`` puts the same image and caption into the notebook's copy of the page section.

The student edition carries ``docs/figures/`` (it has no ``solutions/`` to draw from). ``python
docs/hooks/figures.py`` lists the figures and the pages that show them.
"""

from __future__ import annotations

import html
import importlib
import posixpath
import re
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for _path in (ROOT, HERE):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from kata.judge import answer_key  # noqa: E402

DOCS = ROOT / "docs"
FOLDER = "figures"  # docs/figures/: the committed drawings, copied into the built site as they are
MARKER = re.compile(r"<!--\s*kata:figure\s+([\w-]+)\s*-->")
# A marker and, when scripts/pages.py has written it, its block up to the closing marker.
BLOCK = re.compile(r"<!--\s*kata:figure\s+([\w-]+)\s*-->(?:(?:(?!<!--\s*kata:figure\s).)*?"
                   r"<!--\s*/kata:figure\s+\1\s*-->)?", re.S)
GENERATED = "<!-- written by scripts/pages.py from docs/hooks/figures.toml; the image by scripts/figures.py -->"
TOKENS = ("A", "B", "C", "D")


@dataclass(frozen=True)
class Figure:
    """A picture: the chapter whose solution it needs, its caption, and how to draw it."""

    name: str
    chapter: int
    alt: str
    caption: str
    draw: Callable[[], str]  # returns SVG text

    @property
    def path(self) -> str:
        """Where the figure is, relative to docs/ (and to the built site), e.g. ``figures/attention-4.svg``."""
        return f"{FOLDER}/{self.name}.svg"

    @property
    def file(self) -> Path:
        """The committed file, ``docs/figures/NAME.svg``."""
        return DOCS / self.path

    def link(self, page_path: str) -> str:
        """The figure's address from a page (``page_path`` relative to docs/), e.g. ``../figures/attention-4.svg``."""
        return posixpath.relpath(self.path, posixpath.dirname(page_path) or ".")

    def markdown(self, page_path: str) -> str:
        """The figure as plain Markdown for a page: the image, then its caption in italics."""
        return f"![{self.alt}]({self.link(page_path)})\n\n*{self.caption}*"


def _charts():
    """``charts.py``, imported only to draw: the site and the notebooks show the committed files, without matplotlib."""
    import charts

    return charts


def solution(chapter: int):
    """Import ``solutions.chapterNN_<topic>`` for a chapter number, found by file name (the authors' edition)."""
    found = sorted((ROOT / "solutions").glob(f"chapter{chapter:02d}_*.py"))
    if not found:
        raise LookupError(f"no solutions/chapter{chapter:02d}_*.py: figures are drawn in the authors' edition")
    return importlib.import_module(f"solutions.{found[0].stem}")


def _labels(ids) -> list[str]:
    return [f"{TOKENS[i] if i < len(TOKENS) else i} ({p})" for p, i in enumerate(ids)]


def draw_attention_4() -> str:
    """Chapter 4's worksheet: causal attention weights for "A B" (step 4.6's inputs)."""
    ch = solution(4)
    step = answer_key.load(4).step("4.6")
    Q, K, V = step.input("Q"), step.input("K"), step.input("V")
    mask = ch.causal_mask(len(Q))
    _, weights = ch.scaled_dot_product_attention(Q, K, V, mask)
    return _charts().heatmap(weights, ["A (0)", "B (1)"], ["A (0)", "B (1)"],
                          'Causal attention weights for "A B"', masked=~mask)


def draw_layer_norm_10() -> str:
    """Chapter 10: layer norm over 2 features sends every row with unequal entries to ±[1, −1]."""
    ch = solution(10)
    rng = np.random.default_rng(10)
    rows = rng.uniform(-2.6, 2.6, size=(24, 2))
    out = ch.layer_norm(rows, np.ones(2), np.zeros(2))
    return _charts().arrows_2d(
        rows, out, "Layer norm over 2 features: every row lands on one of two points",
        "feature 1", "feature 2",
        note="24 random rows, γ = 1, β = 0.\nSubtract the mean, divide by\nthe spread: with 2 features\n"
             "only the sign of x₁ − x₂\nsurvives, at ±[1, −1].")


def draw_loss_8() -> str:
    """Chapter 8: the worksheet's batch trained at η = 0.1, all four matrices vs W_O only (step 8.14's inputs)."""
    ch = solution(8)
    step = answer_key.load(8).step("8.14")
    examples = [([int(i) for i in ids], int(t)) for ids, t in zip(step.inputs["ids"], step.inputs["targets"],
                                                                   strict=True)]
    params = {name: step.input(name) for name in ("WQ", "WK", "WV", "WO")}
    lr, epochs = float(step.inputs["lr"]), int(step.inputs["epochs"])
    _, all_four = ch.train(examples, params, lr, epochs)
    only_wo, wo_losses = dict(params), []
    for _ in range(epochs):
        loss, grads = ch.batch_gradients(examples, only_wo)
        wo_losses.append(loss)
        only_wo = ch.apply_gradients(only_wo, {"WO": grads["WO"]}, lr)
    return _charts().line_chart({"all four matrices": list(all_four), "$W_O$ only": wo_losses},
                             "A B → C, A A → D, B A → C: mean loss per epoch (η = 0.1)", "epoch",
                             "mean loss before the update")


def draw_loss_10() -> str:
    """Chapter 10: the three patterns (2 layers), and [A, B, A] → C, [B, A, A] → D with and without positions."""
    ch = solution(10)
    patterns = [([0, 1], [-1, 2]), ([0, 0], [-1, 3]), ([1, 0], [-1, 2])]
    order = [([0, 1, 0], [-1, -1, 2]), ([1, 0, 0], [-1, -1, 3])]
    _, three = ch.train_transformer(patterns, ch.init_params(4, 8, 16, 2, 8, seed=0), 0.3, 100)
    _, learned = ch.train_transformer(order, ch.init_params(4, 8, 16, 1, 3, seed=0), 0.3, 100)

    def step(p, g1, g2):  # p − η · mean gradient, leaf by leaf
        if isinstance(p, dict):
            return {k: step(p[k], g1[k], g2[k]) for k in p}
        if isinstance(p, list):
            return [step(*leaf) for leaf in zip(p, g1, g2, strict=True)]
        return p - 0.3 * (g1 + g2) / 2

    params, frozen = ch.init_params(4, 8, 16, 1, 3, seed=0), []
    params["pos_emb"] = np.zeros_like(params["pos_emb"])
    for _ in range(100):  # the same steps, but the position table stays at zero
        (loss1, g1), (loss2, g2) = (ch.transformer_loss_and_grads(ids, t, params) for ids, t in order)
        frozen.append((loss1 + loss2) / 2)
        g1["pos_emb"] = g2["pos_emb"] = np.zeros_like(params["pos_emb"])
        params = step(params, g1, g2)
    return _charts().line_chart({"3 patterns, 2 layers": list(three), "A B A / B A A, positions": list(learned),
                              "A B A / B A A, none": frozen},
                             "d_model 8, d_ff 16, η = 0.3: mean loss per epoch", "epoch",
                             "mean loss before the update", note="without positions the loss stays above ln 2",
                             guide=(float(np.log(2)), "ln 2 ≈ 0.693"))


def draw_attention_10() -> str:
    """Chapter 10: where each position looks, in both layers of the model trained on "A B C D A B C D".

    The same run as the chapter's sequence test (d_model 8, d_ff 16, 2 layers, seed 0, η = 0.3, 100 epochs);
    the weights are recomputed layer by layer with chapter 4's attention from the documented parameters.
    """
    ch, ch4 = solution(10), solution(4)
    ids = [0, 1, 2, 3, 0, 1, 2, 3]
    targets = [1, 2, 3, 0, 1, 2, 3, -1]
    params, _ = ch.train_transformer([(ids, targets)], ch.init_params(4, 8, 16, 2, 8, seed=0), 0.3, 100)
    x = ch.embed(ids, params)
    mask = ch4.causal_mask(len(ids))
    labels = [f"{TOKENS[i]}{p}" for p, i in enumerate(ids)]
    maps = {}
    for number, block in enumerate(params["blocks"], start=1):
        h = ch.layer_norm(x, block["ln1_gamma"], block["ln1_beta"])
        _, maps[f"layer {number}"] = ch4.scaled_dot_product_attention(h @ block["WQ"], h @ block["WK"],
                                                                      h @ block["WV"], mask)
        x, _ = ch.block_forward(x, block)
    return _charts().heatmaps(maps, labels, labels, 'Attention weights after training on "A B C D A B C D"',
                           masked=~mask, digits=2)


def draw_rope_12() -> str:
    """Chapter 12: step 12.4's token at positions 0 … 5, each pair of features drawn as a point in the plane."""
    ch = solution(12)
    row = answer_key.load(12).step("12.4").input("X")[0]
    Y = ch.apply_rope(np.tile(row, (6, 1)))  # the same token at positions 0 … 5
    return _charts().circle_points({"pair (x₀, x₁), θ₀ = 1": Y[:, 0:2], "pair (x₂, x₃), θ₁ = 0.01": Y[:, 2:4]},
                                "RoPE turns each pair by position × θ", "first feature of the pair",
                                "second feature of the pair",
                                note="One token, d = 4, at positions\n0 … 5 (the numbers). The fast\npair "
                                     "turns 1 radian per\nposition; the slow pair only\n0.01, so its points "
                                     "overlap\nnear (1, 0). Lengths never\nchange.")


def draw_schedule_15() -> str:
    """Chapter 15: the worksheet's schedule (steps 15.3 and 15.4) at every step from 0 to 14."""
    ch = solution(15)
    step = answer_key.load(15).step("15.3")
    kw = {k: step.inputs[k] for k in ("max_lr", "min_lr", "warmup_steps", "total_steps")}
    return _charts().line_chart({"lr_at(step)": [ch.lr_at(s, **kw) for s in range(15)]},
                             "Warm-up for 4 steps, cosine decay to step 12, then the floor", "step (from 0)",
                             "learning rate", guide=(kw["min_lr"], "min_lr"))


TRAIN_STEPS = 1500  # the docs' run: the default model and settings of `nox -s train`, shortened to draw in seconds
_train_run: dict = {}


def _reference_training() -> dict:
    """The shortened `nox -s train` run of solutions/ on the Zen of Python (seed 0), computed once per drawing."""
    if not _train_run:
        from kata.learner import train

        corpus = train.load_corpus("zen")
        settings = train.Settings(steps=TRAIN_STEPS, sample_every=TRAIN_STEPS).resolved(corpus)
        _train_run.update(module=train, corpus=corpus,
                          run=train.train_model(solution(10), corpus, settings))
    return _train_run


def draw_train_loss() -> str:
    """`nox -s train`'s loss.png for the docs' run: the loss of every step and its running mean."""
    import matplotlib

    ref = _reference_training()
    title = f"Training loss on the Zen of Python, {TRAIN_STEPS:,} steps"
    with matplotlib.rc_context(_charts().STYLE):
        fig = ref["module"].loss_figure(ref["run"]["losses"], len(ref["corpus"].vocab), title)
        return _charts()._svg(fig, title)


def draw_train_attention() -> str:
    """`nox -s train`'s attention.png for the docs' run: both layers' weights on "Beautiful is better than"."""
    import matplotlib

    ref = _reference_training()
    text = ref["run"]["attention_text"]
    title = f"Attention weights on {text!r} after {TRAIN_STEPS:,} steps"
    with matplotlib.rc_context(_charts().STYLE):
        fig = ref["module"].attention_figure(text, ref["run"]["attention"], title)
        return _charts()._svg(fig, title)


def _figures(path: Path = HERE / "figures.toml") -> dict[str, Figure]:
    """The figures of ``figures.toml``, each with its ``draw_NAME`` function; a missing one is named."""
    found = {}
    for name, entry in tomllib.loads(path.read_text(encoding="utf-8")).items():
        function = "draw_" + name.replace("-", "_")
        if function not in globals():
            raise ValueError(f"{path.name}: figure {name!r} (chapter {entry.get('chapter')}) has no function "
                             f"{function} in figures.py")
        caption = entry["caption"].replace("{train_steps}", f"{TRAIN_STEPS:,}")
        found[name] = Figure(name, entry["chapter"], entry["alt"], caption, globals()[function])
    return found


FIGURES = _figures()


def _figure(name: str, where: str) -> Figure:
    if name not in FIGURES:
        raise ValueError(f"{where}: unknown figure {name!r}; known: {sorted(FIGURES)}")
    return FIGURES[name]


def fill(markdown: str, page_path: str) -> str:
    """The page with every figure's block written out afresh after its marker (what ``scripts/pages.py`` writes).

    ``page_path`` is the page relative to docs/ (the image's link is relative to it).
    """
    def replace(m: re.Match) -> str:
        name = m.group(1)
        body = _figure(name, page_path).markdown(page_path)
        return f"<!-- kata:figure {name} -->\n{GENERATED}\n\n{body}\n\n<!-- /kata:figure {name} -->"

    return BLOCK.sub(replace, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: D103 - MkDocs hook
    def replace(m: re.Match) -> str:
        figure = _figure(m.group(1), page.file.src_uri)
        if not figure.file.is_file():
            raise ValueError(f"{page.file.src_uri}: figure {figure.name!r} has no file docs/{figure.path}: "
                             "run python scripts/figures.py (it draws from solutions/)")
        return (f'<figure class="kata-figure" markdown>\n![{figure.alt}]({figure.link(page.file.src_uri)})\n'
                f"<figcaption>{html.escape(figure.caption, quote=False)}</figcaption>\n</figure>")

    return BLOCK.sub(replace, markdown)


def shown() -> dict[str, list[str]]:
    """{figure name: the pages (relative to docs/) whose markers show it}."""
    found: dict[str, list[str]] = {}
    for page in sorted(DOCS.rglob("*.md")):
        for name in MARKER.findall(page.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(page.relative_to(DOCS).as_posix())
    return found


if __name__ == "__main__":
    pages = shown()
    for name, figure in FIGURES.items():
        state = "committed" if figure.file.is_file() else "not drawn yet"
        print(f"{name:16} chapter {figure.chapter:<3} docs/{figure.path:28} {state:14} "
              f"{', '.join(pages.get(name, [])) or 'on no page'}")
