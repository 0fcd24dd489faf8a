"""Chapter 24: GRPO — rewards that can be checked, turned into learning, without a value model.

Group Relative Policy Optimisation (DeepSeekMath, 2024) samples G responses to each prompt, scores each
with a reward the course can check, and asks: which responses did better than their own group? The
**advantage** of response i is its reward against its group's, (r_i − mean) / (std + ε), so no learned
value model is needed. The policy then moves each token's log-probability in the direction of its
response's advantage, through PPO's **clipped surrogate** min(ρ A, clip(ρ, 1 − ε, 1 + ε) A), where
ρ = π / π_old is how far the policy has already moved on this batch; a **KL penalty** to a frozen reference
model, estimated per token by k3 = π_ref/π − log(π_ref/π) − 1, keeps it from drifting. Every per-token term
is averaged over the response's own tokens (a mask leaves the prompt and the padding out), then over the
batch, and the loss is minus that.

The convention of this course, used by every function below:

- a batch holds B responses as rows, each padded to T positions; the G responses to one prompt are
  consecutive rows (rows 0 … G − 1 the first prompt's, and so on);
- per-token arrays (log-probabilities, the mask) are (B, T); per-response ones (rewards, advantages) (B,);
- log-probabilities are natural logarithms of the probability each model gives the token that was sampled:
  log π (the policy being trained), log π_old (the policy that sampled the batch), log π_ref (the reference);
- the group's standard deviation is the population one (ddof = 0, NumPy's default);
- the mean is per response, then over the batch (GRPO's 1/G Σ_i 1/|o_i| Σ_t).

Worksheet: this course's own. A group of four rewards [1, 0, 0, 1], then two groups of four; a batch of
two responses of three positions (the second one's last position is padding) with advantages +1 and −1,
ε = 0.2 and β = 0.1, whose probabilities are chosen so that every ratio is 0.5, 1, 1.1, 1.5 or 2.

Types, as every docstring below uses them: an array is a NumPy array (or nested lists) of finite real
numbers, not bools; a mask holds only 0s and 1s (bools, ints or floats); a number (ε, β)
is a Python or NumPy int or float or a 0-d array of one, never a bool or a string; a whole number is a
Python or NumPy int (not a bool, not a float).
"""

import numpy as np


def group_advantages(rewards: np.ndarray, group_size: int, eps: float = 1e-4) -> np.ndarray:
    r"""Each response's advantage: its reward against the mean and spread of its own group.

    $$A_i = \frac{r_i - \operatorname{mean}(r_{\text{group}})}{\operatorname{std}(r_{\text{group}}) + \varepsilon},$$

    $$\operatorname{std} = \sqrt{\tfrac1G \textstyle\sum_j (r_j - \operatorname{mean})^2}\ \ (\text{ddof} = 0)$$

    The groups are consecutive runs of ``group_size`` rewards. A group whose rewards are all equal has std 0
    and every advantage 0 (ε keeps 0 / 0 away): it teaches nothing.

    Args:
        rewards: the reward of each response, shape (B,), B a multiple of G.
        group_size: G, how many responses each prompt has, a whole number ≥ 1.
        eps: ε > 0, added to the standard deviation (1e-4 by default, as TRL's trainer; the worksheet's is
            1e-6).

    Returns:
        The advantages, float64, shape (B,). rewards is not modified.

    Raises:
        ValueError: if B is not a multiple of group_size (the message names ``group_size`` and B): yours to
            write, a batch is whole groups of G responses. rewards that is not a 1-D array of finite numbers
            with at least one entry, a group_size that is not a whole number ≥ 1 and an eps that is not a
            number > 0 are refused by the check given above the ``raise``, which hands you rewards as float64.

    See docs: chapter 24, steps 24.1 and 24.2.
    """
    rewards, eps = _check_rewards(rewards, group_size, eps)
    raise NotImplementedError("24.1 group_advantages: each reward's distance from its group's mean in units of the group's population standard deviation (ddof 0) plus ε, refusing a batch that is not whole groups by naming group_size (5 lines)")


def clipped_surrogate(logp: np.ndarray, logp_old: np.ndarray, advantages: np.ndarray,
                      clip_eps: float = 0.2) -> np.ndarray:
    r"""PPO's clipped surrogate objective, token by token: the policy's step, capped where it went far enough.

    $$\rho = e^{\log\pi - \log\pi_{\text{old}}},$$

    $$s = \min\bigl(\rho A,\ \operatorname{clip}(\rho,\ 1 - \varepsilon,\ 1 + \varepsilon)\,A\bigr)$$

    A is the token's response's advantage. For A > 0 the objective stops growing once ρ > 1 + ε; for A < 0
    once ρ < 1 − ε; in the other direction it is never capped (the min keeps the pessimistic one).

    Args:
        logp: log π of each sampled token under the policy, shape (B, T).
        logp_old: log π_old of the same tokens under the policy that sampled them, shape (B, T).
        advantages: each response's advantage, shape (B,).
        clip_eps: ε, with 0 < ε < 1.

    Returns:
        s, float64, shape (B, T), at every position (the mask is applied later). Nothing given is modified.

    Raises:
        ValueError: if the arrays do not fit (B, T), (B, T) and (B,), hold what is not a finite number, or
            clip_eps is not a number in (0, 1): the check given above the ``raise``, which hands you the
            arrays as float64.

    See docs: chapter 24, step 24.3.
    """
    logp, logp_old, advantages = _check_tokens(logp, logp_old, advantages, clip_eps)
    raise NotImplementedError("24.3 clipped_surrogate: per token the smaller of ρ A and ρ clipped to 1 ± ε times A, with ρ the policy's probability ratio and A its row's advantage (3 lines)")


def k3_kl(logp: np.ndarray, logp_ref: np.ndarray) -> np.ndarray:
    r"""The k3 estimate of KL(π ‖ π_ref) at each sampled token: never negative, and right on average.

    $$k_3 = \frac{\pi_{\text{ref}}}{\pi} - \log\frac{\pi_{\text{ref}}}{\pi} - 1,$$

    $$\log\frac{\pi_{\text{ref}}}{\pi} = \log\pi_{\text{ref}} - \log\pi$$

    Averaged over tokens drawn from π it is KL(π ‖ π_ref) = E_π[log π − log π_ref] exactly, and each term is
    ≥ 0 (x − log x − 1 ≥ 0 for x > 0), 0 only where π = π_ref.

    Args:
        logp: log π of each sampled token under the policy, shape (B, T).
        logp_ref: log π_ref of the same tokens under the reference model, shape (B, T).

    Returns:
        k3, float64, shape (B, T), every entry ≥ 0. Nothing given is modified.

    Raises:
        ValueError: if the arrays are not two (B, T) arrays of finite numbers: the check given above the
            ``raise``, which hands you them as float64.

    See docs: chapter 24, step 24.4.
    """
    logp, logp_ref = _check_pair(logp, logp_ref)
    raise NotImplementedError("24.4 k3_kl: k3 of the ratio π_ref / π, that ratio less its log less 1 (2 lines)")


def masked_mean(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    r"""Each response's mean over its own tokens: the positions where the mask is 1.

    $$m_b = \frac{\sum_t \text{mask}_{bt}\, v_{bt}}{\sum_t \text{mask}_{bt}}$$

    The prompt's positions and the padding have mask 0: they count neither above nor below the line, so a
    response's mean does not depend on what stands there, nor on how much padding it has.

    Args:
        values: a per-token quantity, shape (B, T).
        mask: 1 on each response's tokens, 0 elsewhere, shape (B, T).

    Returns:
        m, float64, shape (B,). Nothing given is modified.

    Raises:
        ValueError: if a row of the mask has no 1 (the message says "no response token" and names the row:
            that response's mean would be 0 / 0), or values and mask are not two (B, T) arrays, values not
            finite or a mask not all 0s and 1s: the checks given above the ``raise``, which hand you both as
            float64.

    See docs: chapter 24, step 24.5.
    """
    values, mask = _check_masked(values, mask)
    _check_responses(mask)
    raise NotImplementedError("24.5 masked_mean: each row's mean of values over its response tokens only (2 lines)")


def grpo_loss(logp: np.ndarray, logp_old: np.ndarray, logp_ref: np.ndarray, advantages: np.ndarray,
              mask: np.ndarray, clip_eps: float = 0.2, beta: float = 0.04) -> float:
    r"""The GRPO loss of a batch: minus the surrogate less β times the KL, per response, then over the batch.

    $$L = -\frac1B \sum_b \frac{\sum_t \text{mask}_{bt}\,\bigl(s_{bt} - \beta\, k_{3,bt}\bigr)}
      {\sum_t \text{mask}_{bt}}$$

    with s the ``clipped_surrogate`` and k3 the ``k3_kl`` of each token. Minimising L raises the
    log-probability of tokens in responses with a positive advantage, lowers it in those with a negative one,
    and pulls the policy towards the reference.

    Args:
        logp: log π of each sampled token under the policy, shape (B, T).
        logp_old: log π_old, shape (B, T).
        logp_ref: log π_ref, shape (B, T).
        advantages: each response's advantage, shape (B,).
        mask: 1 on each response's tokens, 0 on the prompt and the padding, shape (B, T).
        clip_eps: ε, with 0 < ε < 1.
        beta: β ≥ 0, the weight of the KL penalty.

    Returns:
        L, a Python float. Nothing given is modified.

    Raises:
        ValueError: if the arrays do not fit one another, hold what is not a finite number, the mask is not
            0s and 1s with a 1 in every row, clip_eps is not in (0, 1) or beta is not a number ≥ 0: the check
            given above the ``raise``, which hands you every array as float64.

    See docs: chapter 24, step 24.6.
    """
    logp, logp_old, logp_ref, advantages, mask = _check_batch(logp, logp_old, logp_ref, advantages, mask,
                                                              clip_eps, beta)
    raise NotImplementedError("24.6 grpo_loss: minus the batch mean of each response's masked mean of the clipped surrogate less β times k3, as a Python float (2 lines)")


def grpo_loss_grad(logp: np.ndarray, logp_old: np.ndarray, logp_ref: np.ndarray, advantages: np.ndarray,
                   mask: np.ndarray, clip_eps: float = 0.2, beta: float = 0.04) -> np.ndarray:
    r"""The gradient of ``grpo_loss`` with respect to the policy's log-probabilities, token by token.

    The loss it differentiates (``grpo_loss``), each token's log π entering its own s and k3 only:

    $$L = -\frac1B \sum_b \frac{\sum_t \text{mask}_{bt}\,\bigl(s_{bt} - \beta\, k_{3,bt}\bigr)}
      {\sum_t \text{mask}_{bt}}$$

    with s the ``clipped_surrogate`` and k3 the ``k3_kl`` of each token. Where the min of the surrogate
    switches from one term to the other the slope jumps: at ρ exactly 1 ± ε either one-sided derivative is
    accepted.

    Args:
        logp: log π of each sampled token under the policy, shape (B, T).
        logp_old: log π_old, shape (B, T).
        logp_ref: log π_ref, shape (B, T).
        advantages: each response's advantage, shape (B,).
        mask: 1 on each response's tokens, 0 on the prompt and the padding, shape (B, T).
        clip_eps: ε, with 0 < ε < 1.
        beta: β ≥ 0, the weight of the KL penalty.

    Returns:
        dL/d log π, float64, shape (B, T), 0 wherever the mask is 0. Nothing given is modified.

    Raises:
        ValueError: as ``grpo_loss``: the check given above the ``raise``, which hands you every array as
            float64.

    See docs: chapter 24, step 24.7.
    """
    logp, logp_old, logp_ref, advantages, mask = _check_batch(logp, logp_old, logp_ref, advantages, mask,
                                                              clip_eps, beta)
    raise NotImplementedError("24.7 grpo_loss_grad: the loss's slope with respect to each token's log π through the surrogate and k3 as the loss weighs them (where does the min hold a constant?) (5 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_number(value, name: str) -> float:
    """A real number (a Python or NumPy int or float, or a 0-d array of one; not a bool, not a string) as float."""
    value = value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def _check_array(a, name: str, ndim: int) -> np.ndarray:
    """The array a as float64, after checking it has ndim axes, at least one entry, only finite real numbers."""
    array = np.asarray(a)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold real numbers, got dtype {array.dtype}")
    if array.ndim != ndim or array.size == 0:
        raise ValueError(f"{name} must be {ndim}-D with at least one entry, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite, got {array.tolist()}")
    return array.astype(np.float64)


def _check_rewards(rewards, group_size, eps) -> tuple[np.ndarray, float]:
    """(rewards as float64, eps as float), after checking rewards (B,), group_size ≥ 1 and eps > 0."""
    rewards = _check_array(rewards, "rewards", 1)
    if isinstance(group_size, (bool, np.bool_)) or not isinstance(group_size, (int, np.integer)) or group_size < 1:
        raise ValueError(f"group_size must be a whole number >= 1, got {group_size!r}")
    eps = _check_number(eps, "eps")
    if not eps > 0:
        raise ValueError(f"eps must be > 0 (it keeps a group of equal rewards from 0 / 0), got {eps!r}")
    return rewards, eps


def _check_pair(logp, other, name: str = "logp_ref") -> tuple[np.ndarray, np.ndarray]:
    """(logp, other) as float64, after checking both are (B, T) arrays of finite numbers of one shape."""
    logp, other = _check_array(logp, "logp", 2), _check_array(other, name, 2)
    if logp.shape != other.shape:
        raise ValueError(f"logp {logp.shape} and {name} {other.shape} must have the same shape (B, T)")
    return logp, other


def _check_clip(clip_eps) -> None:
    """Refuse a clip_eps that is not a number in (0, 1)."""
    if not 0 < _check_number(clip_eps, "clip_eps") < 1:
        raise ValueError(f"clip_eps must be in (0, 1), got {clip_eps!r}")


def _check_tokens(logp, logp_old, advantages, clip_eps) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(logp, logp_old, advantages) as float64, after checking (B, T), (B, T), (B,) and 0 < clip_eps < 1."""
    logp, logp_old = _check_pair(logp, logp_old, "logp_old")
    advantages = _check_array(advantages, "advantages", 1)
    if len(advantages) != len(logp):
        raise ValueError(f"advantages {advantages.shape} must have one entry per row of logp {logp.shape}")
    _check_clip(clip_eps)
    return logp, logp_old, advantages


def _check_masked(values, mask, name: str = "values") -> tuple[np.ndarray, np.ndarray]:
    """(values, mask) as float64, after checking two (B, T) arrays, values finite, the mask all 0s and 1s."""
    values = _check_array(values, name, 2)
    mask = np.asarray(mask)
    if mask.dtype.kind not in "biuf" or mask.shape != values.shape or not np.all((mask == 0) | (mask == 1)):
        raise ValueError(f"mask {mask.shape} must be 0s and 1s of the shape of {name} {values.shape}")
    return values, mask.astype(np.float64)


def _check_batch(logp, logp_old, logp_ref, advantages, mask, clip_eps, beta) -> tuple:
    """Every array as float64, after checking they fit (B, T) and (B,), the mask has a 1 in every row, ε and β."""
    logp, logp_old, advantages = _check_tokens(logp, logp_old, advantages, clip_eps)
    logp, logp_ref = _check_pair(logp, logp_ref)
    logp, mask = _check_masked(logp, mask, "logp")
    if np.any(mask.sum(axis=1) == 0):
        raise ValueError(f"every row of the mask needs a response token, got {mask.tolist()}")
    if not _check_number(beta, "beta") >= 0:
        raise ValueError(f"beta must be >= 0, got {beta!r}")
    return logp, logp_old, logp_ref, advantages, mask


def _check_responses(mask: np.ndarray) -> None:
    """Refuse a mask with a row of no 1: that response's mean would be 0 / 0 (the message names the row)."""
    counts = mask.sum(axis=1)
    if np.any(counts == 0):
        raise ValueError(f"row {int(np.argmin(counts))} of the mask has no response token: its mean is 0 / 0")
