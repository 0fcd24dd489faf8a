"""Chapter 23: Supervised fine-tuning and DPO — a loss on the answer, and preferences turned into a loss.

A pretrained model continues text; an assistant answers. **Supervised fine-tuning** (SFT) trains on
prompt → response pairs with the same next-token cross-entropy as pretraining, counted on the response's
tokens only: the prompt is given, not learned. Row i of the model's logits predicts token i + 1, so the
log-probability of each next token is read one row before it, and a mask keeps the rows whose target is a
response token.

**Direct preference optimisation** (DPO) learns from pairs of answers to one prompt, one chosen and one
rejected. Each answer's log-probability under the policy being trained, minus its log-probability under a
frozen reference model, times β, is the answer's **implicit reward**; the loss is −log σ of the chosen
answer's reward minus the rejected one's. No reward model is trained: the policy's own log-probabilities are
the reward.

Worksheet: this course's own. A vocabulary of four tokens whose logits are multiples of ln 2, so that every
probability is a power of ½ and every log-probability a multiple of −ln 2; two preference pairs with
β = ¼.

Types, as every docstring below uses them: an array is a NumPy array of numbers (a Python list where an array
is documented fails its checks, the message naming list; token ids may be a list of ints); a number (β) is a
Python or NumPy int or float or a 0-d array of one, never a bool or a string; a whole number is a Python or
NumPy int (not a bool, not a float).
"""

import numpy as np


def token_log_probs(logits: np.ndarray, ids) -> np.ndarray:
    r"""The log-probability the model gives each next token of a sequence.

    Row i of the logits is the model's prediction for the token after position i, so token i + 1 is scored
    by row i (the last row predicts beyond the sequence and is not used):

    $$\ell_i = \log \mathrm{softmax}(\mathrm{logits}_i)_{\mathrm{ids}_{i+1}},$$

    $$\ell_i = \mathrm{logits}_{i,\,\mathrm{ids}_{i+1}} - \log \sum_v e^{\mathrm{logits}_{i,v}},$$

    $$i = 0, \dots, \mathrm{seq} - 2$$

    Finite for any finite logits, however far apart (a row [0, 1000, −1000] included): the log-sum-exp is
    taken after subtracting the row's maximum, never as the log of a softmax whose small entries underflow
    to 0.

    Args:
        logits: the model's output over the sequence, shape (seq, vocab), seq ≥ 2.
        ids: the sequence's tokens, shape (seq,): a 1-D array of whole numbers (or a list of ints), each in
            0 … vocab − 1.

    Returns:
        ℓ, float64, shape (seq − 1,): entry i is the log-probability of ids[i + 1], each ≤ 0.

    Raises:
        ValueError: if logits is not a 2-D array of finite numbers with at least two rows, or ids is not one
            whole number in range per row: the check given above the ``raise``, which hands you logits as
            float64 and ids as an integer array.

    See docs: chapter 23, step 23.1.
    """
    logits, ids = _check_sequence(logits, ids)
    raise NotImplementedError("23.1 token_log_probs: each row's log-probability of the token one position after it (none for the last row), its log-sum-exp safe for large logits (4 lines)")


def response_mask(prompt_len: int, seq_len: int) -> np.ndarray:
    r"""Which next-token log-probabilities belong to the response: 1 for those, 0 for the prompt's.

    Entry i scores token i + 1 (``token_log_probs``); it counts when that token is part of the response,
    the tokens from position ``prompt_len`` on:

    $$m_i = \begin{cases} 1 & i + 1 \ge \mathrm{prompt\_len} \\ 0 & \text{otherwise} \end{cases},$$

    $$i = 0, \dots, \mathrm{seq\_len} - 2$$

    Args:
        prompt_len: how many tokens the prompt has, a whole number.
        seq_len: how many tokens the whole sequence (prompt, then response) has, a whole number ≥ 2.

    Returns:
        m, float64, shape (seq_len − 1,), each entry 0.0 or 1.0.

    Raises:
        ValueError: unless 1 ≤ prompt_len < seq_len (the message names ``prompt_len``: the first token has no
            row that predicts it, so a prompt holds at least one token, and a response holds at least one),
            or if prompt_len or seq_len is not a whole number, or seq_len is below 2: the checks given above
            the ``raise``.

    See docs: chapter 23, step 23.2.
    """
    _check_lengths(prompt_len, seq_len)
    _check_prompt(prompt_len, seq_len)
    raise NotImplementedError("23.2 response_mask: 1.0 where the token an entry scores (one position after it) belongs to the response and 0.0 elsewhere (1 line)")


def sequence_log_prob(logits: np.ndarray, ids, prompt_len: int) -> float:
    r"""The log-probability of a response given its prompt: the sum over the response's tokens.

    $$\log \pi(\text{response} \mid \text{prompt}) = \sum_{i=0}^{\mathrm{seq}-2} m_i\, \ell_i$$

    with ℓ from ``token_log_probs`` and m from ``response_mask``: the prompt's tokens are given, not
    predicted, so they do not count. A sum, not a mean: the probability of a whole response is the product
    of its tokens' probabilities (DPO compares these).

    Args:
        logits: the model's output over prompt and response, shape (seq, vocab).
        ids: the tokens of prompt and response, shape (seq,) (an array of whole numbers or a list of ints).
        prompt_len: how many of the ids are the prompt's, a whole number with 1 ≤ prompt_len < seq.

    Returns:
        log π(response | prompt), a Python float ≤ 0.

    Raises:
        ValueError: if logits and ids do not fit (see ``token_log_probs``) or prompt_len is not a whole number
            with 1 ≤ prompt_len < seq: the check given above the ``raise``.

    See docs: chapter 23, step 23.3.
    """
    logits, ids = _check_sequence(logits, ids)
    _check_prompt(prompt_len, len(ids))
    raise NotImplementedError("23.3 sequence_log_prob: the docstring's sum from your two functions above, only what scores a response token counting (1 line)")


def sft_loss(log_probs: np.ndarray, mask: np.ndarray) -> float:
    r"""The fine-tuning loss of a batch: the mean negative log-probability over every response token.

    $$L = -\frac{\sum_{b,i} m_{b,i}\, \ell_{b,i}}{\sum_{b,i} m_{b,i}}$$

    A mean per token over the whole batch: every response token weighs the same, so a long response counts
    in proportion to its length (a mean per sequence first, then over the batch, would give each token of a
    short response more weight).

    Args:
        log_probs: ℓ, the next-token log-probabilities of each sequence, shape (batch, T), sequences padded
            to one length T (the padding's entries are masked out, whatever they hold).
        mask: m, shape (batch, T): 1.0 where the entry is a response token, 0.0 for the prompt and the
            padding.

    Returns:
        L, a Python float ≥ 0.

    Raises:
        ValueError: if the mask has no entry 1 (the message says "no response": there is nothing to
            average), or the arrays are not 2-D, of two shapes, not finite, or a mask with entries other than 0
            and 1: the checks given above the ``raise``, which hand you both as float64.

    See docs: chapter 23, steps 23.4 and 23.5.
    """
    log_probs, mask = _check_batch(log_probs, mask)
    _check_some_response(mask)
    raise NotImplementedError("23.4 sft_loss: minus the masked sum of the log-probabilities over the number of response tokens in the whole batch (1 line)")


def implicit_reward(policy_logp: np.ndarray, ref_logp: np.ndarray, beta: float) -> np.ndarray:
    r"""DPO's implicit reward of each answer: how much more likely the policy makes it than the reference, times β.

    $$r = \beta\,\bigl(\log \pi(y \mid x) - \log \pi_{\mathrm{ref}}(y \mid x)\bigr)$$

    An answer the policy has made more likely than the frozen reference did has a positive reward; β sets how
    much a change of log-probability is worth.

    Args:
        policy_logp: log π(y | x) of each answer under the policy, shape (batch,).
        ref_logp: log π_ref(y | x) of the same answers under the reference model, shape (batch,).
        beta: β, a number > 0.

    Returns:
        r, float64, shape (batch,).

    Raises:
        ValueError: if beta is not a number > 0 (the message names ``beta``: β is the price of moving away
            from the reference, and a β ≤ 0 turns the reward's sign or erases it), or the arrays are not 1-D,
            non-empty, finite and of one shape: the check given above the ``raise``, which hands you both
            arrays as float64 and beta as a float.

    See docs: chapter 23, step 23.6.
    """
    policy_logp, ref_logp, beta = _check_rewards(policy_logp, ref_logp, beta)
    raise NotImplementedError("23.6 implicit_reward: how far the policy has moved each answer's log-probability from the reference's, priced at β (1 line)")


def dpo_loss(policy_chosen: np.ndarray, policy_rejected: np.ndarray, ref_chosen: np.ndarray,
             ref_rejected: np.ndarray, beta: float) -> float:
    r"""The DPO loss of a batch of preference pairs: −log σ of the chosen answer's reward minus the rejected one's.

    $$z = \beta\bigl[(\log \pi_c - \log \pi_{\mathrm{ref},c}) - (\log \pi_r - \log \pi_{\mathrm{ref},r})\bigr],$$

    $$L = \frac{1}{B}\sum_{b=1}^{B} -\log \sigma(z_b) = \frac{1}{B}\sum_b \log\bigl(1 + e^{-z_b}\bigr)$$

    z is the margin of the implicit rewards (``implicit_reward``). ln 2 when the policy is the reference
    (z = 0); it falls towards 0 as the chosen answer gains on the rejected one. Finite, and with no NumPy
    warning, for every margin with |z| up to 1000: a pair ranked right or wrong by a thousand included.

    Args:
        policy_chosen: log π_c, each chosen answer's log-probability under the policy, shape (batch,).
        policy_rejected: log π_r, each rejected answer's under the policy, shape (batch,).
        ref_chosen: log π_ref,c, each chosen answer's under the frozen reference, shape (batch,).
        ref_rejected: log π_ref,r, each rejected answer's under the reference, shape (batch,).
        beta: β, a number > 0.

    Returns:
        L, the mean over the batch, a Python float ≥ 0.

    Raises:
        ValueError: if the four arrays are not 1-D, non-empty, finite and of one shape, or beta is not a
            number > 0: the check given above the ``raise``, which hands you the four as float64.

    See docs: chapter 23, step 23.7.
    """
    pc, pr, rc, rr, beta = _check_pairs(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta)  # noqa: F841 - yours to use
    raise NotImplementedError("23.7 dpo_loss: the mean over the pairs of −log σ of the margin z between the chosen and rejected implicit rewards, finite however large z is (2 lines)")


def dpo_grad(policy_chosen: np.ndarray, policy_rejected: np.ndarray, ref_chosen: np.ndarray,
             ref_rejected: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    r"""The gradient of ``dpo_loss`` with respect to the policy's log-probabilities of both answers.

    The loss it differentiates (``dpo_loss``):

    $$z = \beta\bigl[(\log \pi_c - \log \pi_{\mathrm{ref},c}) - (\log \pi_r - \log \pi_{\mathrm{ref},r})\bigr],$$

    $$L = \frac{1}{B}\sum_{b=1}^{B} -\log \sigma(z_b)$$

    The reference's log-probabilities are frozen and get no gradient. Finite, and with no NumPy warning, for
    every margin with |z| up to 1000, as ``dpo_loss``.

    Args:
        policy_chosen: log π_c, shape (batch,).
        policy_rejected: log π_r, shape (batch,).
        ref_chosen: log π_ref,c, shape (batch,).
        ref_rejected: log π_ref,r, shape (batch,).
        beta: β, a number > 0.

    Returns:
        (d_chosen, d_rejected), float64 arrays of shape (batch,): ∂L/∂ log π_c and ∂L/∂ log π_r.

    Raises:
        ValueError: as ``dpo_loss``: the check given above the ``raise``.

    See docs: chapter 23, step 23.8.
    """
    pc, pr, rc, rr, beta = _check_pairs(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta)  # noqa: F841 - yours to use
    raise NotImplementedError("23.8 dpo_grad: the derivative of the mean −log σ of z for each answer's log-probability, finite however large the margin as in 23.7 (3 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_whole(value, name: str) -> None:
    """Refuse what is not a whole number (a bool or a float such as 2.0 is not one)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")


def _check_array(a, name: str, ndim: int) -> np.ndarray:
    """The array a as float64, after checking it is a non-empty ``ndim``-D NumPy array of finite numbers."""
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{name} must be a NumPy array, got {type(a).__name__}")
    if a.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold numbers, got dtype {a.dtype}")
    if a.ndim != ndim or a.size == 0:
        raise ValueError(f"{name} must be a non-empty {ndim}-D array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must hold finite numbers, got {a.tolist()}")
    return a.astype(np.float64)


def _check_sequence(logits, ids) -> tuple[np.ndarray, np.ndarray]:
    """(logits as float64, ids as an int64 array), after checking one id in range per row of logits, seq >= 2."""
    logits = _check_array(logits, "logits", 2)
    if len(logits) < 2:
        raise ValueError(f"logits must have at least 2 rows (a token and the next), got shape {logits.shape}")
    tokens = np.asarray(ids)
    if tokens.ndim != 1 or not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"ids must be a 1-D array of whole numbers, got {ids!r}")
    if len(tokens) != len(logits):
        raise ValueError(f"ids {tokens.shape} must have one token per row of logits {logits.shape}")
    if np.any(tokens < 0) or np.any(tokens >= logits.shape[1]):
        raise ValueError(f"ids {tokens.tolist()} must lie in range({logits.shape[1]}), the vocabulary of logits")
    return logits, tokens.astype(np.int64)


def _check_lengths(prompt_len, seq_len) -> None:
    """Refuse a prompt_len or seq_len that is not a whole number, and a seq_len below 2."""
    _check_whole(prompt_len, "prompt_len")
    _check_whole(seq_len, "seq_len")
    if seq_len < 2:
        raise ValueError(f"seq_len must be at least 2 (a prompt token and a response token), got {seq_len}")


def _check_prompt(prompt_len, seq: int) -> None:
    """Refuse a prompt_len that is not a whole number with 1 <= prompt_len < seq."""
    _check_whole(prompt_len, "prompt_len")
    if not 1 <= prompt_len < seq:
        raise ValueError(f"prompt_len must satisfy 1 <= prompt_len < seq = {seq}, got {prompt_len}")


def _check_batch(log_probs, mask) -> tuple[np.ndarray, np.ndarray]:
    """(log_probs, mask) as float64, after checking two 2-D arrays of one shape and a mask of 0s and 1s."""
    log_probs, mask = _check_array(log_probs, "log_probs", 2), _check_array(mask, "mask", 2)
    if log_probs.shape != mask.shape:
        raise ValueError(f"log_probs {log_probs.shape} and mask {mask.shape} must have the same shape")
    if not np.all((mask == 0) | (mask == 1)):
        raise ValueError(f"mask must hold only 0 and 1, got {mask.tolist()}")
    return log_probs, mask


def _check_beta(beta) -> float:
    """Beta as a float, after checking it is a finite number > 0 (a Python or NumPy int or float, or a 0-d array)."""
    value = beta.item() if isinstance(beta, np.ndarray) and beta.ndim == 0 else beta
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"beta must be a number, got {beta!r}")
    if not np.isfinite(value):
        raise ValueError(f"beta must be finite, got {beta!r}")
    if value <= 0:
        raise ValueError(f"beta must be > 0, got {beta!r}")
    return float(value)


def _check_rewards(policy_logp, ref_logp, beta) -> tuple[np.ndarray, np.ndarray, float]:
    """(policy_logp, ref_logp as float64, beta as a float), after checking two 1-D arrays of one shape and beta > 0."""
    policy_logp, ref_logp = _check_array(policy_logp, "policy_logp", 1), _check_array(ref_logp, "ref_logp", 1)
    if policy_logp.shape != ref_logp.shape:
        raise ValueError(f"policy_logp {policy_logp.shape} and ref_logp {ref_logp.shape} must have the same shape")
    return policy_logp, ref_logp, _check_beta(beta)


def _check_pairs(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta) -> tuple:
    """(the four arrays as float64, beta as a float), after checking four 1-D arrays of one shape and beta > 0."""
    names = ("policy_chosen", "policy_rejected", "ref_chosen", "ref_rejected")
    arrays = [_check_array(a, n, 1) for a, n in zip((policy_chosen, policy_rejected, ref_chosen, ref_rejected),
                                                      names, strict=True)]
    if len({a.shape for a in arrays}) != 1:
        raise ValueError("policy_chosen, policy_rejected, ref_chosen and ref_rejected must have one shape, got "
                         + ", ".join(f"{n} {a.shape}" for n, a in zip(names, arrays, strict=True)))
    return (*arrays, _check_beta(beta))


def _check_some_response(mask: np.ndarray) -> None:
    """Refuse a mask without a response token: there is nothing to average (the message says "no response")."""
    if mask.sum() == 0:
        raise ValueError("the mask has no response token: no response to average the loss over")
