"""Chapter 17: Online softmax and tiled (flash) attention — attention that never holds the seq × seq matrix.

Chapter 4's attention builds every score, a (seq_q, seq_k) matrix, then its softmax. Tiled attention reads
the keys and values a tile at a time and keeps, for every query row, three running quantities: the largest
score seen so far m, the sum ℓ of exp(score − m) over the scores seen, and the output accumulator acc, the
sum of exp(score − m) times the value rows seen. When a new tile raises the maximum, the old sum and the old
accumulator are rescaled by exp(m_old − m_new); at the end acc / ℓ is the attention output, and
m + log ℓ, the log-sum-exp of the row, is kept for the backward pass, which recomputes each tile's weights
from it (FlashAttention-2's backward, with D = rowsum(dO ∘ O)).

The convention of this course, used by every function below:

- scores are scaled as in chapter 4: S = Q Kᵀ / √d, masked positions are −∞;
- queries and keys are cut into tiles of the same size ``tile``: query tile i holds rows i·tile, …,
  (i + 1)·tile − 1 and key tile j the keys j·tile, …; the last tile is shorter when tile does not divide
  the length;
- causal: query i sees keys 0 … i; key tile j is computed for query tile i only when j ≤ i, and the tile on
  the diagonal (j = i) is masked inside.

Worksheet: this course's own. One row of four scores [0, 1, 2, 1] in two tiles of two; the tile pairs of
three causal positions in tiles of two (the last tile shorter); two queries against four keys (the same row
and [1, 0, 0, 2]) in tiles of two; a causal case of four positions whose first query tile skips the second
key tile.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a whole number is a Python or NumPy int (not a bool, not a float).
"""

import numpy as np

from .chapter04_attention import scaled_dot_product_attention, softmax  # noqa: F401 - the reference to compare with


def online_softmax_step(
    m: np.ndarray, ell: np.ndarray, acc: np.ndarray, S: np.ndarray, V: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Take one tile of scores into the running maximum, sum and output accumulator of every row.

    $$\begin{gathered}
      m' = \max\bigl(m,\ \max_j S_{:j}\bigr), \\
      \alpha = e^{m - m'}, \\
      P = e^{S - m'}, \\
      \ell' = \alpha\, \ell + \textstyle\sum_j P_{:j}, \\
      \text{acc}' = \alpha\, \text{acc} + P\,V
    \end{gathered}$$

    (α and m' per row, broadcast along the row.) Every row's state starts with m at −∞, ℓ at 0 and acc at
    0. Nothing is divided yet: acc' divided by ℓ' is the attention output over the keys seen so far. A row
    whose scores so far are all −∞ (every key masked) keeps m' at −∞, ℓ' at 0 and acc' as acc was: 0 takes
    the place of a maximum of −∞ where it is subtracted, so that no e^(−∞ − (−∞)), a nan, appears.

    Args:
        m: the running maximum of every row, shape (n,); −∞ before any score.
        ell: the running sum ℓ of every row, shape (n,).
        acc: the output accumulator of every row, shape (n, d_v).
        S: the tile's scores, shape (n, t) with t ≥ 1; −∞ where a key is masked.
        V: the tile's value rows, shape (t, d_v).

    Returns:
        (m', ℓ', acc'): new float64 arrays of the shapes of m, ell and acc. The inputs are not modified.

    Raises:
        ValueError: if the shapes do not fit one another, or the tile has no score: the check given above
            the ``raise``, which hands you all five as float64 arrays.

    See docs: chapter 17, steps 17.1, 17.2 and 17.3.
    """
    m, ell, acc, S, V = _check_state(m, ell, acc, S, V)
    raise NotImplementedError("17.1 online_softmax_step: every row's state after this tile by the page's update, the old sums re-measured against the new maximum and a row of only −∞ left empty (5 lines)")


def tile_pairs(n_q: int, n_k: int, tile: int, causal: bool = False) -> np.ndarray:
    r"""Which (query tile, key tile) pairs tiled attention computes, in order.

    There are ⌈n_q / tile⌉ query tiles and ⌈n_k / tile⌉ key tiles (the last one shorter when tile does not
    divide the length). Without a mask every pair is computed; causal attention skips key tile j for query
    tile i when every key of j comes after every query of i:

    $$\text{computed}(i, j) = \begin{cases} \text{true} & \text{not causal} \\ j \le i & \text{causal} \end{cases}$$

    Args:
        n_q: the number of queries, a whole number ≥ 1.
        n_k: the number of keys, a whole number ≥ 1 (equal to n_q when causal).
        tile: the tile size, a whole number ≥ 1.
        causal: whether query i may only see keys 0 … i.

    Returns:
        The pairs (i, j) as whole numbers, shape (pairs, 2), ordered by i, then by j.

    Raises:
        ValueError: if tile is not a whole number ≥ 1 (the message names tile and says "at least 1": a tile
            holds at least one position), n_q or n_k is not a whole number, causal is not a bool, or causal
            with n_q ≠ n_k: the checks given above the ``raise``.

    See docs: chapter 17, step 17.4.
    """
    _check_lengths(n_q, n_k, causal)
    _check_tile_size(tile)
    raise NotImplementedError("17.4 tile_pairs: the pairs of a query tile and a key tile in row-major order with a shorter last tile, only those whose key tile is not after the query tile when causal (4 lines)")


def tile_scores(Q: np.ndarray, K: np.ndarray, i: int, j: int, tile: int, causal: bool = False) -> np.ndarray:
    r"""The scaled scores of query tile i against key tile j, masked on the diagonal when causal.

    $$S = \frac{Q_{(i)}\, K_{(j)}^\top}{\sqrt d},$$

    $$S_{ab} = -\infty \text{ where (causal and) key } j\cdot t + b
      \text{ comes after query } i\cdot t + a$$

    Q₍ᵢ₎ holds the query rows i·tile … (i + 1)·tile − 1 (fewer in the last tile), K₍ⱼ₎ the keys likewise;
    d is the width of a query.

    Args:
        Q: queries, shape (n_q, d).
        K: keys, shape (n_k, d).
        i: the query tile, a whole number from 0 to ⌈n_q / tile⌉ − 1.
        j: the key tile, a whole number from 0 to ⌈n_k / tile⌉ − 1.
        tile: the tile size, a whole number ≥ 1.
        causal: whether query a may only see keys 0 … a (positions counted in the whole sequence).

    Returns:
        Scores, float64, shape (rows of tile i, keys of tile j).

    Raises:
        ValueError: if Q and K do not fit, or i, j or tile are out of range: the check given above the
            ``raise``, which hands you Q and K as float64 arrays.

    See docs: chapter 17, step 17.5.
    """
    Q, K = _check_tile(Q, K, i, j, tile, causal)
    raise NotImplementedError("17.5 tile_scores: the scores Q Kᵀ / √d of tile i's queries against tile j's keys (the last tile may be shorter) with −∞ where a key comes after its query when causal (5 lines)")


def flash_attention_forward(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, tile: int, causal: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    r"""Attention computed tile by tile: the output of chapter 4's attention, and each row's log-sum-exp.

    $$O = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt d} + M\right) V,$$

    $$\mathrm{lse}_a = \log \sum_b e^{S_{ab}} = m_a + \log \ell_a$$

    Every row starts with m at −∞, ℓ and acc at 0; each pair of ``tile_pairs`` takes its ``tile_scores``
    into the rows of its query tile with ``online_softmax_step``; at the end O is acc divided by ℓ.

    No array of seq_q × seq_k numbers is ever made: the memory the call holds at once grows as seq × tile
    (plus the outputs), not as seq². The tests measure it with ``tracemalloc``, which NumPy reports its arrays
    to: with 256 queries and keys, tile 16 and widths 2, the most the call holds at once must stay under a
    quarter of one 256 × 256 float64 array (128 KiB), causal or not.

    Args:
        Q: queries, shape (n_q, d).
        K: keys, shape (n_k, d).
        V: values, shape (n_k, d_v).
        tile: the tile size, a whole number ≥ 1 (it need not divide n_q or n_k).
        causal: whether query a may only see keys 0 … a (then n_q and n_k are equal).

    Returns:
        (O, lse): O has shape (n_q, d_v), equal to chapter 4's attention output; lse has shape (n_q,), the
        log-sum-exp of every row of scaled (and masked) scores. Both float64.

    Raises:
        ValueError: as ``tile_pairs`` for tile < 1 (the message names tile); shapes that do not fit, and
            causal with n_q ≠ n_k, are refused by the check given above the ``raise``, which hands you Q, K
            and V as float64 arrays.

    See docs: chapter 17, steps 17.6, 17.7 and 17.8.
    """
    Q, K, V = _check_attention(Q, K, V, causal)
    raise NotImplementedError("17.6 flash_attention_forward: the output and the log-sum-exp of every row, read off the running state of steps 17.1–17.3 carried through its tile pairs (6 lines)")


def softmax_delta(dO: np.ndarray, out: np.ndarray) -> np.ndarray:
    r"""D, the row sums of dO ∘ O: the one number per row the softmax's backward subtracts.

    $$D_a = \sum_c dO_{ac}\, O_{ac} \;\Bigl(= \sum_b P_{ab}\, dP_{ab}\Bigr)$$

    From the output O (``out``), which the forward pass returned, not from the weights P, which it never
    kept.

    Args:
        dO: the gradient of the loss with respect to the attention output, shape (n_q, d_v).
        out: the attention output O, shape (n_q, d_v).

    Returns:
        D, float64, shape (n_q,).

    Raises:
        ValueError: if dO and out differ in shape: the check given above the ``raise``, which hands you both
            as float64 arrays.

    See docs: chapter 17, step 17.9.
    """
    dO, out = _check_same(dO, out)
    raise NotImplementedError("17.9 softmax_delta: D, one number per query row from the output and its gradient by the page's formula (no weight P needed) (1 line)")


def flash_attention_backward(
    dO: np.ndarray, Q: np.ndarray, K: np.ndarray, V: np.ndarray, out: np.ndarray, lse: np.ndarray, tile: int,
    causal: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The gradients of attention, tile by tile, each tile's weights recomputed from the log-sum-exp.

    The forward pass it reverses, and the weights of a tile recomputed from what it kept:

    $$O = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt d} + M\right) V,$$

    $$P = e^{S - \mathrm{lse}}$$

    with S the ``tile_scores`` of a pair (i, j) of ``tile_pairs`` (lse subtracted row by row) and D
    ``softmax_delta``'s. Given dL/dO, it returns dL/dQ, dL/dK and dL/dV, each tile pair adding its share.
    As the forward pass, it never makes an array of seq_q × seq_k numbers: the same measure and bound as
    ``flash_attention_forward``'s.

    Args:
        dO: the gradient of the loss with respect to the output O, shape (n_q, d_v).
        Q: queries, shape (n_q, d).
        K: keys, shape (n_k, d).
        V: values, shape (n_k, d_v).
        out: the output O ``flash_attention_forward`` returned for Q, K, V, shape (n_q, d_v).
        lse: the log-sum-exp it returned, shape (n_q,).
        tile: the tile size, a whole number ≥ 1 (any: it need not be the forward's).
        causal: as the forward pass used.

    Returns:
        (dQ, dK, dV): float64, the shapes of Q, K and V.

    Raises:
        ValueError: as ``tile_pairs`` for tile < 1 (the message names tile); shapes that do not fit are
            refused by the checks given above the ``raise``, which hand you the arrays as float64.

    See docs: chapter 17, step 17.10.
    """
    Q, K, V = _check_attention(Q, K, V, causal)
    dO, out, lse = _check_backward(dO, out, lse, Q, V)
    raise NotImplementedError("17.10 flash_attention_backward: chapter 7's attention backward on each tile pair with D for the row's shared number and the tile's weights recomputed from the log-sum-exp, each share added into its own rows (10 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_whole(value, name: str) -> None:
    """Refuse what is not a whole number (a bool or a float such as 2.0 is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")


def _check_lengths(n_q, n_k, causal) -> None:
    """Refuse lengths that are not whole numbers ≥ 1, a causal that is not a bool, causal with n_q ≠ n_k."""
    for value, name in ((n_q, "n_q"), (n_k, "n_k")):
        _check_whole(value, name)
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if not isinstance(causal, (bool, np.bool_)):
        raise ValueError(f"causal must be True or False, got {causal!r}")
    if causal and n_q != n_k:
        raise ValueError(f"causal attention needs as many queries as keys: n_q = {n_q}, n_k = {n_k}")


def _check_state(m, ell, acc, S, V) -> tuple:
    """(m, ell, acc, S, V) as float64 arrays, after checking m, ell (n,), acc (n, d_v), S (n, t ≥ 1), V (t, d_v)."""
    m, ell, acc, S, V = (np.asarray(a, dtype=np.float64) for a in (m, ell, acc, S, V))
    if m.ndim != 1 or ell.shape != m.shape or acc.ndim != 2 or S.ndim != 2 or V.ndim != 2 or len(acc) != len(m) \
            or len(S) != len(m) or S.shape[1] < 1 or V.shape != (S.shape[1], acc.shape[1]):
        raise ValueError(f"m {m.shape} and ell {ell.shape} must be (n,), acc {acc.shape} (n, d_v), the scores S "
                         f"{S.shape} (n, t) with t ≥ 1 and V {V.shape} (t, d_v)")
    return m, ell, acc, S, V


def _check_attention(Q, K, V, causal) -> tuple:
    """(Q, K, V) as float64 arrays, after checking Q (n_q, d), K (n_k, d), V (n_k, d_v), n_q = n_k if causal."""
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    if Q.ndim != 2 or K.ndim != 2 or V.ndim != 2 or Q.shape[1] != K.shape[1] or len(V) != len(K) \
            or 0 in Q.shape + K.shape + V.shape:
        raise ValueError(f"queries Q {Q.shape}, keys K {K.shape} and values V {V.shape} must be (n_q, d), "
                         "(n_k, d) and (n_k, d_v), none empty")
    _check_lengths(len(Q), len(K), causal)
    return Q, K, V


def _check_tile(Q, K, i, j, tile, causal) -> tuple:
    """(Q, K) as float64 arrays, after checking they fit and i, j, tile name a tile there is."""
    Q, K = np.asarray(Q, dtype=np.float64), np.asarray(K, dtype=np.float64)
    if Q.ndim != 2 or K.ndim != 2 or Q.shape[1] != K.shape[1] or 0 in Q.shape + K.shape:
        raise ValueError(f"queries Q {Q.shape} and keys K {K.shape} must be 2-D with the same width d")
    _check_lengths(len(Q), len(K), causal)
    for value, name in ((i, "i"), (j, "j"), (tile, "tile")):
        _check_whole(value, name)
    if tile < 1 or not 0 <= i * tile < len(Q) or not 0 <= j * tile < len(K):
        raise ValueError(f"tile {tile} with query tile i = {i} and key tile j = {j}: no such tile for "
                         f"{len(Q)} queries and {len(K)} keys")
    return Q, K


def _check_same(dO, out) -> tuple:
    """(dO, out) as float64 arrays, after checking they are 2-D of one shape (the message names both)."""
    dO, out = np.asarray(dO, dtype=np.float64), np.asarray(out, dtype=np.float64)
    if dO.ndim != 2 or dO.shape != out.shape:
        raise ValueError(f"dO {dO.shape} and out {out.shape} must be 2-D of the same shape (n_q, d_v)")
    return dO, out


def _check_backward(dO, out, lse, Q, V) -> tuple:
    """(dO, out, lse) as float64 arrays, after checking dO and out are (n_q, d_v) and lse (n_q,)."""
    dO, out = _check_same(dO, out)
    lse = np.asarray(lse, dtype=np.float64)
    if out.shape != (len(Q), V.shape[1]) or lse.shape != (len(Q),):
        raise ValueError(f"dO and out {out.shape} must be (n_q, d_v) = {(len(Q), V.shape[1])} and lse {lse.shape} "
                         f"(n_q,) = {(len(Q),)}")
    return dO, out, lse


def _check_tile_size(tile) -> None:
    """Refuse a tile that is not a whole number of positions, at least 1 (the message names tile)."""
    _check_whole(tile, "tile")
    if tile < 1:
        raise ValueError(f"tile = {tile}: a tile holds at least 1 position")
