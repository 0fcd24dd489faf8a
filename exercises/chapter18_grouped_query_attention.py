"""Chapter 18: Grouped-Query Attention, Sliding Windows and the KV Cache's Memory — fewer keys and values to keep.

Chapter 16's KV cache keeps, for every layer and every head, the key and the value of every position seen: its
memory, not the arithmetic, is what limits a served model. Grouped-query attention (GQA) keeps fewer key/value
heads than query heads: the n_heads query heads are cut into n_kv_heads groups of g = n_heads / n_kv_heads
neighbours, and every query head of a group reads the same key/value head (multi-query attention at
n_kv_heads = 1, chapter 11's multi-head attention at n_kv_heads = n_heads). The backward pass sends every
query head's gradient to the one key/value head it read, so each shared head's gradient is the sum over its
group. A sliding window lets a query see only the last ``window`` positions (itself included), and the cache
then keeps only those. The cache's bytes: 2 (keys and values) × layers × n_kv_heads × d_head × positions kept
× bytes per number.

The convention of this course, used by every function below:

- Q has n_heads heads side by side and K, V have n_kv_heads, all of one width d_head, cut as in chapter 11
  (head h owns the columns h·d_head … (h + 1)·d_head − 1);
- the groups are contiguous: query head h reads key/value head ⌊h / g⌋, so heads 0 … g − 1 read head 0,
  the next g head 1, and so on (what the published grouped-query models do);
- attention is causal; a window w lets query i see the keys j with i − w < j ≤ i.

Worksheet: this course's own. Three positions, four query heads and two key/value heads of width 1; the
groups, a window of 2, the backward's shared gradients, one position decoded with a cache of the window, and
the bytes of a small cache.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a whole number is a Python or NumPy int (not a bool, not a float).
"""

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401 - yours to use
from .chapter07_backprop import attention_backward  # noqa: F401 - yours to use
from .chapter11_multi_head_attention import merge_heads, split_heads  # noqa: F401 - yours to use


def kv_head_of(n_heads: int, n_kv_heads: int) -> np.ndarray:
    r"""Which key/value head each query head reads: contiguous groups of g = n_heads / n_kv_heads heads.

    $$\mathrm{kv}(h) = \left\lfloor \frac{h}{g} \right\rfloor,$$

    $$g = \frac{n_{heads}}{n_{kv\_heads}},$$

    $$h = 0, \dots, n_{heads} - 1$$

    Query heads 0 … g − 1 read key/value head 0, heads g … 2g − 1 head 1, and so on; n_kv_heads = 1 is
    multi-query attention (every head reads head 0), n_kv_heads = n_heads multi-head attention (head h reads
    head h).

    Args:
        n_heads: the number of query heads, a whole number ≥ 1.
        n_kv_heads: the number of key/value heads, a whole number ≥ 1.

    Returns:
        The key/value head of every query head, whole numbers, shape (n_heads,).

    Raises:
        ValueError: if n_heads is not divisible by n_kv_heads (the message says "divisible" and names n_heads
            and n_kv_heads): yours to write, every group holds the same number of query heads. Counts that
            are not whole numbers ≥ 1 are refused by the check given above the ``raise``.

    See docs: chapter 18, step 18.1.
    """
    _check_counts(n_heads, n_kv_heads)
    raise NotImplementedError("18.1 kv_head_of: each query head's index divided by the group size g as a whole number, refusing n_heads not divisible by n_kv_heads (3 lines)")


def sliding_window_mask(n: int, window: int) -> np.ndarray:
    r"""Which keys each query may see when it sees only the last ``window`` positions, itself included.

    $$\mathrm{mask}_{ij} = \bigl(i - w < j \le i\bigr),$$

    $$w = \text{window}$$

    Every row holds min(i + 1, w) True entries: position i sees itself and the w − 1 positions before it. A
    window of n or more is chapter 4's causal mask; a window of 1 lets each position see only itself.

    Args:
        n: the number of positions, a whole number ≥ 1.
        window: how many positions a query sees, itself included, a whole number ≥ 1.

    Returns:
        Booleans, shape (n, n): entry [i, j] is True when query i may see key j.

    Raises:
        ValueError: if window is not a whole number ≥ 1 (the message names window and says "at least 1": a
            query sees at least itself), or n is not a whole number ≥ 1: the checks given above the
            ``raise``.

    See docs: chapter 18, step 18.2.
    """
    _check_whole(n, "n", 1)
    _check_window_size(window)
    raise NotImplementedError("18.2 sliding_window_mask: True where j ≤ i and j > i − window for every query i and key j at once (a column of positions against a row) (2 lines)")


def grouped_query_attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, n_heads: int, n_kv_heads: int, window: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r"""Causal attention in which every group of query heads shares one key/value head.

    $$\mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_{\mathrm{kv}(h)}^\top}{\sqrt{d_{head}}} + M\right)
      V_{\mathrm{kv}(h)},$$

    $$\mathrm{out} = [\mathrm{head}_0, \dots, \mathrm{head}_{n_{heads}-1}]$$

    Q is cut into n_heads heads and K, V into n_kv_heads heads as chapter 11 cuts them; kv(h) is
    ``kv_head_of``'s; M is chapter 4's causal mask, or ``sliding_window_mask`` when a window is given; each
    head is chapter 4's scaled dot-product attention (scaled by 1/√d_head); the heads' outputs are put back
    side by side as chapter 11 merges them. With n_kv_heads = n_heads this is chapter 11's attention of the
    heads (before W_O).

    Args:
        Q: queries, shape (seq, n_heads · d_head).
        K: keys, shape (seq, n_kv_heads · d_head).
        V: values, shape (seq, n_kv_heads · d_head).
        n_heads: the number of query heads, a whole number ≥ 1.
        n_kv_heads: the number of key/value heads, a whole number ≥ 1 that divides n_heads.
        window: None (causal: query i sees keys 0 … i) or how many positions a query sees, itself included.

    Returns:
        (out, weights): out has shape (seq, n_heads · d_head), the heads side by side; weights has shape
        (n_heads, seq, seq), the attention weights of every query head (each row sums to 1). Both float64.

    Raises:
        ValueError: as ``kv_head_of`` when n_heads is not divisible by n_kv_heads (the message says
            "divisible"), and as ``sliding_window_mask`` for a window below 1 (the message names window).
            Arrays whose shapes do not fit the head counts, counts that are not whole numbers ≥ 1 and a
            window that is neither None nor a whole number are refused by the check given above the
            ``raise``, which hands you Q, K and V as float64 arrays.

    See docs: chapter 18, steps 18.3 and 18.4.
    """
    Q, K, V = _check_qkv(Q, K, V, n_heads, n_kv_heads)
    _check_window(window)
    raise NotImplementedError("18.3 grouped_query_attention: each query head's attention on the key/value head kv_head_of gives it under the mask (causal or your sliding window), the heads merged as chapter 11 merges them and every head's weights stacked (6 lines)")


def group_sum(dH: np.ndarray, n_kv_heads: int) -> np.ndarray:
    r"""The gradient of every shared head: the sum of what the query heads of its group send it.

    $$dK_g = \sum_{h\,:\,\mathrm{kv}(h) = g} dK^{(h)},$$

    $$g = 0, \dots, n_{kv\_heads} - 1$$

    Head g was read by every query head of its group (``kv_head_of``'s contiguous groups), so each of them
    sends it a gradient, and they add up — a shared weight's gradient is the sum over its uses.

    Args:
        dH: the gradient each query head computed for the key (or value) head it read, shape
            (n_heads, seq, d_head).
        n_kv_heads: the number of key/value heads, a whole number ≥ 1 that divides n_heads.

    Returns:
        The gradients of the key/value heads, float64, shape (n_kv_heads, seq, d_head).

    Raises:
        ValueError: if dH is not 3-D, or n_kv_heads is not a whole number ≥ 1 dividing n_heads: the check
            given above the ``raise``, which hands you dH as a float64 array.

    See docs: chapter 18, step 18.5.
    """
    dH = _check_group(dH, n_kv_heads)
    raise NotImplementedError("18.5 group_sum: each key/value head's sum over its g neighbouring query heads, one reshape giving them their own axis (2 lines)")


def grouped_query_attention_backward(
    dO: np.ndarray, Q: np.ndarray, K: np.ndarray, V: np.ndarray, weights: np.ndarray, n_heads: int, n_kv_heads: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The gradients of grouped-query attention, for the queries, keys and values.

    The forward pass it reverses (``grouped_query_attention``), query head h reading key/value head kv(h):

    $$\mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_{\mathrm{kv}(h)}^\top}{\sqrt{d_{head}}} + M\right)
      V_{\mathrm{kv}(h)}$$

    dO, Q, K and V are cut into heads as the forward cut them; A_h is the forward's weights of head h (the
    mask already applied); dQ, dK and dV are the heads put back side by side.

    Args:
        dO: the gradient of the loss with respect to the output, shape (seq, n_heads · d_head).
        Q: queries, shape (seq, n_heads · d_head).
        K: keys, shape (seq, n_kv_heads · d_head).
        V: values, shape (seq, n_kv_heads · d_head).
        weights: the weights ``grouped_query_attention`` returned for them, shape (n_heads, seq, seq).
        n_heads: the number of query heads, a whole number ≥ 1.
        n_kv_heads: the number of key/value heads, a whole number ≥ 1 that divides n_heads.

    Returns:
        (dQ, dK, dV): float64, the shapes of Q, K and V.

    Raises:
        ValueError: as ``kv_head_of`` when n_heads is not divisible by n_kv_heads; arrays whose shapes do not
            fit are refused by the checks given above the ``raise``, which hand you every array as float64.

    See docs: chapter 18, step 18.6.
    """
    Q, K, V = _check_qkv(Q, K, V, n_heads, n_kv_heads)
    dO, weights = _check_backward(dO, weights, Q, n_heads)
    raise NotImplementedError("18.6 grouped_query_attention_backward: chapter 7's attention_backward in every query head on the key/value head it read, the heads of dK and dV summed back onto their key/value heads with group_sum (7 lines)")


def decode_step(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, cache: dict | None, n_heads: int, n_kv_heads: int,
    window: int | None = None,
) -> tuple[np.ndarray, dict]:
    r"""One new position through grouped-query attention with a KV cache that keeps only the window.

    $$K = [K_{cache};\ k]_{\text{last } w}, \quad V = [V_{cache};\ v]_{\text{last } w},$$

    $$\mathrm{head}_h = \mathrm{softmax}\!\left(\frac{q_h K_{\mathrm{kv}(h)}^\top}{\sqrt{d_{head}}}\right)
      V_{\mathrm{kv}(h)}$$

    The new key and value rows are cut into n_kv_heads heads and appended to the cache's; with a window w,
    only the last w positions stay (the new one included), every older one is dropped; the new query, cut into
    n_heads heads, attends to every position the cache holds (no mask: none of them comes after it). Decoding
    a sequence one position at a time gives the rows of ``grouped_query_attention`` with the same window.

    Args:
        q: the new position's query row, shape (1, n_heads · d_head).
        k: its key row, shape (1, n_kv_heads · d_head).
        v: its value row, shape (1, n_kv_heads · d_head).
        cache: None (no position seen yet) or a dict with the keys ``"K"`` and ``"V"``, two arrays of shape
            (n_kv_heads, t, d_head): the keys and values of the positions kept so far.
        n_heads: the number of query heads, a whole number ≥ 1.
        n_kv_heads: the number of key/value heads, a whole number ≥ 1 that divides n_heads.
        window: None (keep every position) or how many positions the cache keeps, a whole number ≥ 1.

    Returns:
        (out, new_cache): out has shape (1, n_heads · d_head); new_cache is a new dict ``{"K", "V"}`` of new
        float64 arrays of shape (n_kv_heads, t', d_head), t' = t + 1, or min(t + 1, window) with a window.
        Neither the rows nor the cache is modified.

    Raises:
        ValueError: as ``kv_head_of`` when n_heads is not divisible by n_kv_heads. Rows that are not one row
            of the widths above, a cache that is neither None nor such a dict, and a window that is neither
            None nor a whole number ≥ 1 are refused by the checks given above the ``raise``, which hand you
            q, k, v and the cache's K and V (empty for None) as float64 arrays.

    See docs: chapter 18, step 18.7.
    """
    q, k, v = _check_qkv(q, k, v, n_heads, n_kv_heads, rows=1)
    _check_window(window, 1)
    K_old, V_old = _check_cache(cache, k, n_kv_heads)  # noqa: F841 - yours to use
    raise NotImplementedError("18.7 decode_step: the new position's output with each query head reading its key/value head unmasked, and the grown cache keeping only the last window positions when windowed (8 lines)")


def kv_cache_bytes(
    n_layers: int, n_kv_heads: int, d_head: int, seq: int, bytes_per_number: int, window: int | None = None
) -> int:
    r"""The bytes a KV cache holds: a key and a value per layer, key/value head, feature and position kept.

    $$\text{bytes} = 2 \times n_{layers} \times n_{kv\_heads} \times d_{head} \times \text{kept} \times
      \text{bytes per number},$$

    $$\text{kept} = \begin{cases} seq & \text{no window} \\
      \min(seq, w) & \text{window } w \end{cases}$$

    The 2 counts the keys and the values. Only the key/value heads are cached: grouped-query attention divides
    the cache by n_heads / n_kv_heads, and a window caps it however long the sequence grows.

    Args:
        n_layers: the number of layers (blocks), a whole number ≥ 1.
        n_kv_heads: the number of key/value heads per layer, a whole number ≥ 1.
        d_head: the width of one head, a whole number ≥ 1.
        seq: the number of positions seen, a whole number ≥ 1.
        bytes_per_number: the size of one stored number in bytes (2 for float16, 8 for float64), a whole
            number ≥ 1.
        window: None or how many positions a layer's cache keeps, a whole number ≥ 1.

    Returns:
        The number of bytes, a whole number (a Python int).

    Raises:
        ValueError: if a size is not a whole number ≥ 1 or the window neither None nor one (the message
            names it): the check given above the ``raise``.

    See docs: chapter 18, step 18.8.
    """
    _check_sizes(n_layers=n_layers, n_kv_heads=n_kv_heads, d_head=d_head, seq=seq, bytes_per_number=bytes_per_number)
    _check_window(window, 1)
    raise NotImplementedError("18.8 kv_cache_bytes: the product of every size over the positions kept (the smaller of seq and the window) times 2 for the keys and the values (2 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_whole(value, name: str, least: int | None = None) -> None:
    """Refuse what is not a whole number (a bool or a float such as 2.0 is not one), or one below ``least``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if least is not None and value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")


def _check_counts(n_heads, n_kv_heads) -> None:
    """Refuse head counts that are not whole numbers ≥ 1 (the message names which)."""
    _check_whole(n_heads, "n_heads", 1)
    _check_whole(n_kv_heads, "n_kv_heads", 1)


def _check_window(window, least: int | None = None) -> None:
    """Refuse a window that is neither None nor a whole number (nor one below ``least``)."""
    if window is not None:
        _check_whole(window, "window", least)


def _check_sizes(**sizes) -> None:
    """Refuse sizes that are not whole numbers ≥ 1 (the message names which)."""
    for name, value in sizes.items():
        _check_whole(value, name, 1)


def _check_qkv(Q, K, V, n_heads, n_kv_heads, rows: int | None = None) -> tuple:
    """(Q, K, V) as float64 arrays, after checking Q (seq, n_heads·d_head), K and V (seq, n_kv_heads·d_head)."""
    _check_counts(n_heads, n_kv_heads)
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    fits = Q.ndim == K.ndim == V.ndim == 2 and len(Q) == len(K) == len(V) > 0 and Q.shape[1] > 0 \
        and Q.shape[1] % n_heads == 0 and K.shape == V.shape \
        and K.shape[1] == n_kv_heads * (Q.shape[1] // n_heads) and (rows is None or len(Q) == rows)
    if not fits:
        raise ValueError(f"queries {Q.shape}, keys {K.shape} and values {V.shape} must be (rows, n_heads · d_head) and "
                         f"(rows, n_kv_heads · d_head) with n_heads = {n_heads}, n_kv_heads = {n_kv_heads}; rows ≥ 1")
    return Q, K, V


def _check_group(dH, n_kv_heads) -> np.ndarray:
    """The gradients dH as float64, after checking they are (n_heads, seq, d_head), n_kv_heads dividing n_heads."""
    dH = np.asarray(dH, dtype=np.float64)
    if dH.ndim != 3:
        raise ValueError(f"dH {dH.shape} must be 3-D, (n_heads, seq, d_head)")
    _check_counts(len(dH), n_kv_heads)
    if len(dH) % n_kv_heads:
        raise ValueError(f"n_heads = {len(dH)} is not divisible by n_kv_heads = {n_kv_heads}")
    return dH


def _check_backward(dO, weights, Q, n_heads) -> tuple:
    """(dO, weights) as float64 arrays, after checking dO has Q's shape and weights is (n_heads, seq, seq)."""
    dO, weights = np.asarray(dO, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    if dO.shape != Q.shape or weights.shape != (n_heads, len(Q), len(Q)):
        raise ValueError(f"dO {dO.shape} must have the shape of Q {Q.shape} and weights {weights.shape} be "
                         f"(n_heads, seq, seq) = {(n_heads, len(Q), len(Q))}")
    return dO, weights


def _check_cache(cache, k: np.ndarray, n_kv_heads: int) -> tuple:
    """The cache's (K, V) as float64 arrays (empty for None), after checking the dict and its shapes."""
    d_head = k.shape[1] // n_kv_heads
    if cache is None:
        return np.zeros((n_kv_heads, 0, d_head)), np.zeros((n_kv_heads, 0, d_head))
    if not isinstance(cache, dict) or "K" not in cache or "V" not in cache:
        raise ValueError(f"cache must be None or a dict with the keys K and V, got {type(cache).__name__}")
    K, V = np.asarray(cache["K"], dtype=np.float64), np.asarray(cache["V"], dtype=np.float64)
    if K.ndim != 3 or K.shape[0] != n_kv_heads or K.shape[2] != d_head or V.shape != K.shape:
        raise ValueError(f"cache K {K.shape} and V {V.shape} must both be (n_kv_heads, t, d_head) = "
                         f"({n_kv_heads}, t, {d_head})")
    return K, V


def _check_window_size(window) -> None:
    """Refuse a window that is not a whole number of positions, at least 1 (the message names window)."""
    _check_whole(window, "window")
    if window < 1:
        raise ValueError(f"window = {window}: a query sees at least 1 position, itself")
