"""Chapter 22: Mixture of experts — a router sends each token to k of n experts, and only those run.

A dense feed-forward layer runs every token through the same weights. A mixture-of-experts layer holds n
**experts** (here each a single matrix, x W_e; in a real model each is a feed-forward layer such as chapter
13's SwiGLU) and a **router**, one matrix W_r: the softmax of x W_r gives every token a probability for every
expert; the token goes to its k most probable experts only, and its output is their outputs weighted by
**gates**, those k probabilities renormalised to sum to 1. So a layer of n experts has n times the
parameters, yet each token pays for k of them.

Two more pieces make it train. Each expert has a **capacity**, the number of assignments it can take in one
batch; assignments past it are **dropped** (the token gets nothing from that expert), every token's first
choice before any token's second. And a **load-balancing loss**, N · Σ_i f_i · P_i (f_i the fraction of
assignments expert i receives, P_i the mean probability the router gives it), is smallest when the router
spreads the tokens evenly, so that no expert starves while another overflows.

The order of this course, used by every function below: the softmax over all n experts first, then the top
k, then the k gates divided by their sum. (A softmax over the k chosen logits gives the same gates, the common
denominator cancels; but only the softmax over all n gives the P_i the balancing loss needs.)

Worksheet: this course's own. Four tokens of width 2, three experts, k = 2; the router's logits are logarithms
of whole numbers, so that every probability and gate is a fraction.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a whole number is a Python or NumPy int (not a bool, not a float);
expert ids are whole numbers in an array of integer dtype.
"""

import math

import numpy as np

from .chapter04_attention import softmax  # noqa: F401 - yours to use
from .chapter07_backprop import linear_backward, softmax_backward  # noqa: F401 - yours to use


def router_probabilities(x: np.ndarray, W_router: np.ndarray) -> np.ndarray:
    r"""Every token's probability for every expert: the softmax of the router's logits.

    $$P = \mathrm{softmax}(x\, W_r),$$

    $$P_{te} = \frac{e^{(x W_r)_{te}}}{\sum_{e'} e^{(x W_r)_{te'}}}$$

    One distribution per token, over the experts.

    Args:
        x: the tokens, shape (tokens, d).
        W_router: the router's weights, shape (d, n_experts).

    Returns:
        P, float64, shape (tokens, n_experts); every row sums to 1.

    Raises:
        ValueError: if x and W_router do not fit x W_r: the check given above the ``raise``, which hands you
            both as float64 arrays.

    See docs: chapter 22, step 22.1.
    """
    x, W_router = _check_router(x, W_router)
    raise NotImplementedError("22.1 router_probabilities: chapter 4's softmax over the experts of each token's router logits x W_r (1 line)")


def top_k_gates(probs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Each token's k most probable experts, and their probabilities renormalised over the k: the gates.

    $$S_t = \text{the } k \text{ largest } P_{te},$$

    $$g_{ts} = \frac{P_{t, e_{ts}}}{\sum_{r=1}^{k} P_{t, e_{tr}}}$$

    Expert e_{t1} is token t's most probable, e_{t2} the next, and so on; of equal probabilities, the lower
    expert id comes first. Every token's k gates sum to 1.

    Args:
        probs: the router's probabilities, shape (tokens, n_experts), as ``router_probabilities`` returns.
        k: how many experts each token goes to, a whole number.

    Returns:
        (experts, gates): experts, whole numbers of integer dtype, shape (tokens, k), in decreasing order of
        probability; gates, float64, shape (tokens, k), the gate of each chosen expert in the same order.

    Raises:
        ValueError: if k is not a whole number between 1 and n_experts (the message names ``k`` and the
            number of experts: a token goes to at least one expert and to no more than there are), or probs is
            not a 2-D array of probabilities: the check given above the ``raise``, which hands you probs as a
            float64 array.

    See docs: chapter 22, steps 22.2 and 22.3.
    """
    probs = _check_probs(probs, k)
    raise NotImplementedError("22.2 top_k_gates: each row's k most probable experts (a tie to the lower id as a stable sort gives) with their probabilities divided by their sum (3 lines)")


def expert_capacity(n_tokens: int, n_experts: int, k: int, factor: float) -> int:
    r"""How many assignments one expert takes in a batch: its even share, times the capacity factor, rounded up.

    $$C = \left\lceil \text{factor} \cdot \frac{\text{tokens} \cdot k}{n_{\text{experts}}} \right\rceil$$

    tokens · k assignments spread evenly would give each expert tokens · k / n; a factor above 1 leaves room
    for an uneven router, below 1 drops more. Computed in float64 in the order written (factor · tokens · k,
    then divided by n_experts), then rounded up.

    Args:
        n_tokens: the tokens in the batch, a whole number ≥ 1.
        n_experts: the experts, a whole number ≥ 1.
        k: the experts per token, a whole number from 1 to n_experts.
        factor: the capacity factor, a number > 0.

    Returns:
        C, a Python int.

    Raises:
        ValueError: if a count is not a whole number in range or factor is not a number > 0 (the message
            names which): the check given above the ``raise``.

    See docs: chapter 22, step 22.4.
    """
    _check_capacity(n_tokens, n_experts, k, factor)
    raise NotImplementedError("22.4 expert_capacity: the factor times the tokens times k over the experts rounded up (1 line)")


def dispatch(experts: np.ndarray, n_experts: int, capacity: int) -> np.ndarray:
    r"""Where each assignment lands in its expert's buffer of ``capacity`` places, or −1 if it is dropped.

    The assignments are taken in priority order — every token's first choice (column 0 of ``experts``), tokens
    in order, then every token's second choice, and so on — and each goes to the next free place of its
    expert; once an expert's ``capacity`` places are taken, its later assignments are dropped:

    $$\text{slot}_{ts} = \begin{cases} \#\{\text{assignments to } e_{ts} \text{ before } (t, s)\} &
      \text{if that count} < C \\ -1 & \text{otherwise} \end{cases}$$

    "Before" in the priority order: (t', s') comes before (t, s) when s' < s, or s' = s and t' < t.

    Args:
        experts: each token's experts, whole numbers in 0 … n_experts − 1, shape (tokens, k), as
            ``top_k_gates`` returns them.
        n_experts: the number of experts, a whole number ≥ 1.
        capacity: the places of each expert, a whole number ≥ 0.

    Returns:
        slots, whole numbers of integer dtype, shape (tokens, k): the place of each assignment in its
        expert's buffer, 0 … capacity − 1, or −1 for a dropped one.

    Raises:
        ValueError: if experts is not a 2-D array of expert ids below n_experts, or n_experts or capacity is
            not a whole number in range: the check given above the ``raise``, which hands you experts as an
            integer array.

    See docs: chapter 22, step 22.5.
    """
    experts = _check_dispatch(experts, n_experts, capacity)
    raise NotImplementedError("22.5 dispatch: each assignment's place in its expert or −1 once the expert is full, places going out by choice column and by token within each (8 lines)")


def moe_forward(
    x: np.ndarray, W_router: np.ndarray, W_experts: np.ndarray, k: int, capacity: int
) -> tuple[np.ndarray, tuple]:
    r"""The mixture-of-experts layer: route, dispatch within capacity, run each expert on its tokens, combine.

    $$y_t = \sum_{s\,:\,\text{slot}_{ts} \ne -1} g_{ts}\; x_t W_{e_{ts}}$$

    With P from ``router_probabilities``, (experts, gates) from ``top_k_gates`` and the slots from
    ``dispatch``. A dropped assignment adds nothing, and the other gates are not renormalised for it; a token
    whose every assignment is dropped gets a row of zeros (in a model, the residual carries it on).

    Args:
        x: the tokens, shape (tokens, d).
        W_router: the router's weights, shape (d, n_experts).
        W_experts: the experts' weights, shape (n_experts, d, d_out): expert e computes x W_experts[e].
        k: the experts per token, a whole number from 1 to n_experts.
        capacity: the places of each expert, a whole number ≥ 0.

    Returns:
        (y, cache): y, float64, shape (tokens, d_out); cache, a tuple for ``moe_backward`` that starts with
        x, W_router and W_experts as float64 arrays (its given check reads them); what follows is yours to
        choose.

    Raises:
        ValueError: as ``top_k_gates`` for a k out of range (the message names k); shapes that do not fit are
            refused by the check given above the ``raise``, which hands you x, W_router and W_experts as
            float64 arrays.

    See docs: chapter 22, step 22.6.
    """
    x, W_router, W_experts = _check_layer(x, W_router, W_experts)
    raise NotImplementedError("22.6 moe_forward: y as each token's sum of its kept experts' outputs weighted by their gates, and a cache that starts with x and the two weights (9 lines)")


def load_balancing_loss(probs: np.ndarray, experts: np.ndarray) -> float:
    r"""The auxiliary loss that pushes the router to spread its tokens: N · Σ_i f_i · P_i.

    $$f_i = \frac{\#\{(t, s) : e_{ts} = i\}}{\text{tokens} \cdot k},$$

    $$P_i = \frac{1}{\text{tokens}}
      \sum_t P_{ti},$$

    $$L_{\text{bal}} = N \sum_{i=1}^{N} f_i\, P_i$$

    f_i counts the router's assignments (before any is dropped for capacity), so the f_i sum to 1; P_i is the
    mean probability over the tokens. Perfectly even (every f_i and P_i equal to 1/N), L_bal = 1. Only P
    carries a gradient: f is a count.

    Args:
        probs: the router's probabilities over all N experts, shape (tokens, N).
        experts: the experts each token was sent to, shape (tokens, k), as ``top_k_gates`` returns them.

    Returns:
        L_bal, a Python float.

    Raises:
        ValueError: if probs is not a 2-D array of probabilities or experts does not fit it (one row per token,
            ids below N): the check given above the ``raise``, which hands you probs as float64 and experts as
            an integer array.

    See docs: chapter 22, step 22.7.
    """
    probs, experts = _check_balance(probs, experts)
    raise NotImplementedError("22.7 load_balancing_loss: N times the sum over experts of f (each expert's share of the assignments) times P (its mean router probability) (3 lines)")


def gates_backward(d_gates: np.ndarray, gates: np.ndarray, experts: np.ndarray, n_experts: int) -> np.ndarray:
    r"""The gradient with respect to the router's logits, from the gradient with respect to the gates.

    The forward it reverses: the renormalised gates are a softmax over the k chosen logits,

    $$g_{ts} = \frac{e^{z_{t, e_{ts}}}}{\sum_{r=1}^{k} e^{z_{t, e_{tr}}}},$$

    and the logits of the experts not chosen do not enter them.

    Args:
        d_gates: dL/dg, shape (tokens, k).
        gates: the gates, shape (tokens, k), as ``top_k_gates`` returns them.
        experts: the chosen experts, shape (tokens, k), in the same order.
        n_experts: the number of experts N, a whole number.

    Returns:
        dL/dz, float64, shape (tokens, N): column e of row t is the gradient of token t's logit for expert e.

    Raises:
        ValueError: if the three arrays differ in shape, or an expert id is not below n_experts: the check given
            above the ``raise``, which hands you d_gates and gates as float64 and experts as an integer array.

    See docs: chapter 22, step 22.8.
    """
    d_gates, gates, experts = _check_gates(d_gates, gates, experts, n_experts)
    raise NotImplementedError("22.8 gates_backward: chapter 7's softmax backward of the gates and their gradient, each token's results written at its experts' columns of a tokens × N array of zeros (3 lines)")


def moe_backward(d_y: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The gradients of the layer through its experts and its gates (the load-balancing loss apart).

    The forward pass it reverses (``moe_forward``), with the router's logits z = x W_r and the gates g
    from them (``top_k_gates``):

    $$y_t = \sum_{s\,:\,\text{slot}_{ts} \ne -1} g_{ts}\; x_t W_{e_{ts}}$$

    Given dL/dy, it returns the gradients with respect to x, the router's weights and every expert's
    weights; x reaches y through the experts and through the gates. A dropped assignment ran nothing.

    Args:
        d_y: dL/dy, shape (tokens, d_out).
        cache: the cache ``moe_forward`` returned.

    Returns:
        (dx, dW_router, dW_experts): float64, the shapes of x, W_router and W_experts.

    Raises:
        ValueError: if d_y does not have the output's shape: the check given above the ``raise``, which hands
            you d_y as a float64 array.

    See docs: chapter 22, steps 22.9, 22.10 and 22.11.
    """
    d_y = _check_d_y(d_y, cache)
    raise NotImplementedError("22.9 moe_backward: dx and every weight's gradient by the chain rule through each kept gate times its expert's output and through the router (gates_backward and chapter 7's linear backward) (11 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_whole(value, name: str, low: int) -> None:
    """Refuse what is not a whole number ≥ low (a bool or a float such as 2.0 is not one)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")


def _check_array(a, name: str, ndim: int) -> np.ndarray:
    """``a`` as a float64 array, after checking it is a NumPy array of numbers with ``ndim`` axes, none empty."""
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{name} must be a NumPy array, got {type(a).__name__}")
    if a.dtype.kind not in "iuf" or a.ndim != ndim or 0 in a.shape:
        raise ValueError(f"{name} must be a {ndim}-D array of numbers with no empty axis, got shape {a.shape} "
                         f"of dtype {a.dtype}")
    return a.astype(np.float64)


def _check_ids(experts, name: str, rows: int | None, n_experts) -> np.ndarray:
    """``experts`` as an integer array, after checking it is (tokens, k ≥ 1) of ids below n_experts (rows if given)."""
    if not isinstance(experts, np.ndarray) or experts.dtype.kind not in "iu" or experts.ndim != 2 \
            or (rows is not None and len(experts) != rows) or 0 in experts.shape:
        raise ValueError(f"{name} must be a 2-D integer array (tokens, k), one row per token, got "
                         f"{type(experts).__name__} of shape {np.shape(experts)}")
    if np.any(experts < 0) or np.any(experts >= n_experts):
        raise ValueError(f"{name} must hold expert ids from 0 to below n_experts = {n_experts}, got "
                         f"{experts.tolist()}")
    return experts


def _check_router(x, W_router) -> tuple[np.ndarray, np.ndarray]:
    """(x, W_router) as float64 arrays, after checking x is (tokens, d) and W_router (d, n_experts)."""
    x, W_router = _check_array(x, "x", 2), _check_array(W_router, "W_router", 2)
    if W_router.shape[0] != x.shape[1]:
        raise ValueError(f"x {x.shape} and W_router {W_router.shape} do not fit x @ W_router: (tokens, d) and "
                         "(d, n_experts)")
    return x, W_router


def _check_probs(probs, k) -> np.ndarray:
    """``probs`` as float64, after checking it is (tokens, n) of rows ≥ 0 summing to 1, and k whole in 1 … n."""
    probs = _check_array(probs, "probs", 2)
    if not np.all(np.isfinite(probs)) or np.any(probs < 0) or np.any(np.abs(probs.sum(axis=1) - 1) > 1e-6):
        raise ValueError(f"probs must hold one distribution per row (finite, >= 0, summing to 1), got "
                         f"{probs.tolist()}")
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"k must be a whole number, got {k!r}")
    if not 1 <= k <= probs.shape[1]:
        raise ValueError(f"k = {k}: a token goes to between 1 and the {probs.shape[1]} experts there are")
    return probs


def _check_capacity(n_tokens, n_experts, k, factor) -> None:
    """Refuse counts that are not whole numbers in range and a factor that is not a number > 0."""
    _check_whole(n_tokens, "n_tokens", 1)
    _check_whole(n_experts, "n_experts", 1)
    _check_whole(k, "k", 1)
    if k > n_experts:
        raise ValueError(f"k = {k} is more than the {n_experts} experts there are")
    if isinstance(factor, (bool, np.bool_)) or not isinstance(factor, (int, float, np.integer, np.floating)) \
            or not factor > 0 or not math.isfinite(factor):
        raise ValueError(f"factor must be a number > 0, got {factor!r}")


def _check_dispatch(experts, n_experts, capacity) -> np.ndarray:
    """``experts`` as an integer array, after checking the counts and that it holds ids below n_experts."""
    _check_whole(n_experts, "n_experts", 1)
    _check_whole(capacity, "capacity", 0)
    return _check_ids(experts, "experts", None, n_experts)


def _check_layer(x, W_router, W_experts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, W_router, W_experts) as float64 arrays, after checking they fit: (tokens, d), (d, n), (n, d, d_out)."""
    x, W_router = _check_router(x, W_router)
    W_experts = _check_array(W_experts, "W_experts", 3)
    if W_experts.shape[:2] != (W_router.shape[1], x.shape[1]):
        raise ValueError(f"W_experts {W_experts.shape} must be (n_experts, d, d_out) = ({W_router.shape[1]}, "
                         f"{x.shape[1]}, d_out) for x {x.shape} and W_router {W_router.shape}")
    return x, W_router, W_experts


def _check_balance(probs, experts) -> tuple[np.ndarray, np.ndarray]:
    """(probs as float64, experts as integers), after checking probs is (tokens, N) and experts (tokens, k)."""
    probs = _check_probs(probs, 1)
    return probs, _check_ids(experts, "experts", len(probs), probs.shape[1])


def _check_gates(d_gates, gates, experts, n_experts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(d_gates, gates as float64, experts as integers), after checking all three are (tokens, k)."""
    _check_whole(n_experts, "n_experts", 1)
    d_gates, gates = _check_array(d_gates, "d_gates", 2), _check_array(gates, "gates", 2)
    if d_gates.shape != gates.shape:
        raise ValueError(f"d_gates {d_gates.shape} and gates {gates.shape} must have the same shape (tokens, k)")
    experts = _check_ids(experts, "experts", len(gates), n_experts)
    if experts.shape != gates.shape:
        raise ValueError(f"experts {experts.shape} and gates {gates.shape} must have the same shape (tokens, k)")
    return d_gates, gates, experts


def _check_d_y(d_y, cache) -> np.ndarray:
    """``d_y`` as float64, after checking the cache starts with x and W_experts and d_y is (tokens, d_out)."""
    if not isinstance(cache, tuple) or len(cache) < 3:
        raise ValueError(f"cache must be the tuple moe_forward returned, got {type(cache).__name__}")
    shape = (len(cache[0]), np.shape(cache[2])[-1])
    if np.shape(d_y) != shape:
        raise ValueError(f"d_y has shape {np.shape(d_y)}, expected the output's {shape} (tokens, d_out)")
    return np.asarray(d_y, dtype=np.float64)
