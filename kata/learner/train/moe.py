r"""The mixture-of-experts GPT of ``nox -s train -- --model gpt --experts N --top-k K`` (``docs/train-gpt.md``).

Each block's SwiGLU feed-forward is replaced by N SwiGLU experts of width ``d_ff / K`` and a router
``W_router`` (d_model, N); every token runs through its K most probable experts, so a token pays for K · d_ff / K
= ``d_ff`` hidden units, as in the dense GPT: **equal active parameters** (the router's d_model · N apart), and
N / K times the feed-forward parameters in all. A block, for the stream x of one window (T tokens):

$$x_1 = x + \mathrm{Attention}(\mathrm{RMSNorm}_{g_1}(x)),\quad h = \mathrm{RMSNorm}_{g_2}(x_1),\quad
  y = x_1 + \sum_{s=1}^{K} g_{ts}\,\mathrm{SwiGLU}_{e_{ts}}(h_t)$$

Your code does the maths: chapter 13's ``rms_norm``, ``rope_multi_head_attention`` and ``swiglu`` (one call per
expert, on the tokens routed to it) and their backwards; chapter 22's ``router_probabilities``, ``top_k_gates``,
``expert_capacity``, ``dispatch``, ``load_balancing_loss`` and ``gates_backward``; chapter 7's
``softmax_backward`` for the balancing loss's path into the router. The course does the plumbing: gathering each
expert's tokens, adding the gated outputs back (chapter 22's ``moe_forward`` formula with ``x W_e`` replaced by
``SwiGLU_e(x)``; its single-matrix experts are why ``moe_forward`` itself is not called), and
``dg_{ts} = dy_t · o_{ts}``.

- **Capacity.** ``expert_capacity(T, N, K, N / K)`` is T: no assignment is ever dropped. Dropping in chapter 22's
  priority order (every first choice, then every second) would let a later token push out an earlier token's
  second choice: the earlier position's output would depend on a later token, which a causal language model
  must never do (the gradient check's causal test would fail). A drop that ``dispatch`` makes anyway stops the
  run, naming it.
- **Load balancing.** The loss trained is the cross-entropy plus ``balance`` (default 0.01, Switch
  Transformer's α) times the sum over the layers of each window's ``load_balancing_loss``, averaged over the
  windows. It is linear in P, ``∂L_bal/∂P_ti = N f_i / T`` (f a count carries no gradient), and reaches the
  router's logits through your ``softmax_backward``. Evaluations report the cross-entropy alone, comparable with
  the dense model's.
- **Loads.** At every evaluation, each expert's share of the assignments f_i on the validation windows, per
  layer (``loads.png``; 1 / N is even).

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .corpus import TrainError

ATTENTION_KEYS = ("WQ", "WK", "WV", "WO")
EXPERT_KEYS = ("W_gate", "W_up", "W_down")
MOE_BLOCK_KEYS = ("g1", *ATTENTION_KEYS, "g2", "W_router", *EXPERT_KEYS)
CHAPTERS = {"c7": 7, "c22": 22}  # what a mixture of experts adds to the GPT's chapters
GENERATE_CHAPTERS = {"c22": 22}  # what it adds to generating's (chapter 16's KV cache, 13's check, 14's tokens)
BALANCE = 0.01  # the load-balancing loss's coefficient (Switch Transformer's α)
TINY_BALANCE = 0.5  # the gradient check's: large, so a wrong balancing gradient cannot hide under the tolerance


@dataclass(frozen=True)
class Moe:
    """What a mixture-of-experts model dict carries under ``"moe"``: K, and the balancing loss's coefficient."""

    top_k: int
    balance: float = BALANCE


def _arr(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float64)


def _fits(function: str, value, shape: tuple) -> np.ndarray:
    """``value`` as an array of ``shape``, else TrainError naming ``function`` and chapter 22."""
    out = np.asarray(value)
    if out.shape != shape:
        raise TrainError(f"{function} returned shape {out.shape}, expected {shape}: `nox -s chapter22` checks it")
    return out


def expert_shapes(d_model: int, d_ff: int, experts: int, top_k: int) -> dict[str, tuple]:
    """The router's and the experts' shapes in one block: experts of width d_ff / top_k."""
    width = d_ff // top_k
    return {"W_router": (d_model, experts), "W_gate": (experts, d_model, width), "W_up": (experts, d_model, width),
            "W_down": (experts, width, d_model)}


def layer_forward(ch, h: np.ndarray, block: dict, moe: Moe) -> tuple[np.ndarray, tuple]:
    """The mixture of experts on h (T, d): (y, cache). Your chapter 22 routes, your ``swiglu`` runs each expert."""
    T, n = len(h), block["W_router"].shape[1]
    P = _fits("router_probabilities", _arr(ch.c22.router_probabilities(h, block["W_router"])), (T, n))
    experts, gates = ch.c22.top_k_gates(P, moe.top_k)
    experts = _fits("top_k_gates (its experts)", experts, (T, moe.top_k)).astype(np.int64)
    gates = _arr(_fits("top_k_gates (its gates)", gates, (T, moe.top_k)))
    capacity = int(ch.c22.expert_capacity(T, n, moe.top_k, n / moe.top_k))
    slots = _fits("dispatch", ch.c22.dispatch(experts, n, capacity), (T, moe.top_k))
    if np.any(slots < 0):
        raise TrainError(f"dispatch dropped an assignment with capacity {capacity} for {T} tokens, where no expert "
                         f"can receive more than {T}: `nox -s chapter22` names the mistake")
    balance = float(ch.c22.load_balancing_loss(P, experts))
    y, runs = np.zeros_like(h), []
    for e in range(n):
        t, s = np.nonzero(experts == e)  # the tokens routed to expert e (each at most once)
        if len(t) == 0:
            runs.append(None)
            continue
        o, cache = ch.c13.swiglu(h[t], *(block[k][e] for k in EXPERT_KEYS))
        o = _arr(o)
        y[t] += gates[t, s, None] * o  # combine: each output weighted by its gate
        runs.append((t, s, o, cache))
    return y, (h, block["W_router"], P, experts, gates, runs, balance)


def layer_backward(ch, d_y: np.ndarray, cache: tuple, weight: float) -> dict:
    """Gradients of the layer (``"x"`` for h, the router's and the experts'), the balancing loss's at ``weight``."""
    h, W_router, P, experts, gates, runs, _ = cache
    n = W_router.shape[1]
    dh, d_gates = np.zeros_like(h), np.zeros_like(gates)
    grads = {k: [] for k in EXPERT_KEYS}
    for run in runs:
        if run is None:
            for k in EXPERT_KEYS:
                grads[k].append(None)
            continue
        t, s, o, cache_e = run
        d_gates[t, s] = np.sum(d_y[t] * o, axis=1)  # dg_ts = dy_t · o_ts
        g = ch.c13.swiglu_backward(gates[t, s, None] * d_y[t], cache_e)
        dh[t] += _arr(g["x"])
        for k in EXPERT_KEYS:
            grads[k].append(_arr(g[k]))
    d_logits = _fits("gates_backward", _arr(ch.c22.gates_backward(d_gates, gates, experts, n)), P.shape)
    if weight:
        f = np.bincount(experts.ravel(), minlength=n) / experts.size  # a count: no gradient of its own
        d_P = np.broadcast_to(weight * n * f / len(h), P.shape).copy()  # L_bal = N Σ f_i mean_t P_ti
        d_logits = d_logits + _arr(ch.c7.softmax_backward(P, d_P))
    return {"x": dh + d_logits @ W_router.T, "W_router": h.T @ d_logits, **grads}


def block_forward(ch, x: np.ndarray, block: dict, n_heads: int, moe: Moe, attend=None) -> tuple[np.ndarray, tuple]:
    """One pre-norm block with a mixture of experts for its feed-forward: (y, cache). Chapter 13's block otherwise.

    ``attend(h, weights)`` is the attention on the normalised rows, returning (output, its cache): by default your
    chapter 13's ``rope_multi_head_attention`` over all of x's rows; generating passes your chapter 16's
    ``attention_with_cache`` with the block's KV cache (``cached_forward``), and the cache it returns is the
    KV cache. The rest of the block is the same code either way.
    """
    h1 = _arr(ch.c13.rms_norm(x, block["g1"]))
    weights = {k: block[k] for k in ATTENTION_KEYS}
    a, attention_cache = (attend(h1, weights) if attend is not None
                          else ch.c13.rope_multi_head_attention(h1, weights, n_heads))
    x1 = x + _arr(a)
    h2 = _arr(ch.c13.rms_norm(x1, block["g2"]))
    f, layer_cache = layer_forward(ch, h2, block, moe)
    return x1 + f, (block, x, x1, attention_cache, layer_cache)


def block_backward(ch, d_y: np.ndarray, cache: tuple, weight: float) -> dict:
    """Gradients of ``block_forward`` for its input (``"x"``) and every parameter; the balancing loss at ``weight``."""
    block, x, x1, attention_cache, layer_cache = cache
    layer = layer_backward(ch, d_y, layer_cache, weight)
    dx1_branch, dg2 = ch.c13.rms_norm_backward(x1, block["g2"], layer["x"])
    dx1 = d_y + _arr(dx1_branch)
    attention = ch.c13.rope_multi_head_attention_backward(dx1, attention_cache)
    dx_branch, dg1 = ch.c13.rms_norm_backward(x, block["g1"], _arr(attention["x"]))
    out = {"x": dx1 + _arr(dx_branch), "g1": _arr(dg1), "g2": _arr(dg2), "W_router": layer["W_router"],
           **{k: _arr(attention[k]) for k in ATTENTION_KEYS}}
    for k in EXPERT_KEYS:  # an expert no token chose gets a zero gradient
        out[k] = np.stack([g if g is not None else np.zeros_like(block[k][e]) for e, g in enumerate(layer[k])])
    return out


def cached_forward(ch, ids: np.ndarray, model: dict, n_heads: int, caches: list | None) -> tuple[np.ndarray, list]:
    r"""Chapter 16's ``gpt_forward`` for a mixture of experts: (logits (m, vocab), the new KV caches, one per block).

    The same sum as your ``gpt_forward``, $\mathrm{RMSNorm}_{g}(x_L)\,W_{out}$ after the embedding rows of ``ids``
    and every block, with each block's attention your chapter 16's ``attention_with_cache`` (its cache: the
    positions before ``ids``; None for none) and its feed-forward the mixture of ``block_forward`` (your chapter
    22 routes, your ``swiglu`` runs each expert). Your ``gpt_forward`` and ``block_with_cache`` take chapter 13's
    blocks only (their checks refuse a router and stacked experts), so the tool joins the layers here, as it does
    for training. A token's experts depend on its own row alone (no assignment is ever dropped), so the new rows'
    logits equal those of the full forward over the whole sequence: ``gpt.generate_gpt`` checks it.
    """
    blocks = model["blocks"]
    caches = [None] * len(blocks) if caches is None else caches
    x, new = model["tok_emb"][ids], []
    for block, cache in zip(blocks, caches, strict=True):
        x, (_, _, _, kv, _) = block_forward(
            ch, x, block, n_heads, model["moe"],
            attend=lambda h, weights, cache=cache: ch.c16.attention_with_cache(h, weights, n_heads, cache))
        x = _arr(x)
        new.append(kv)
    return _arr(ch.c13.rms_norm(x, model["g_final"])) @ model["W_out"], new


def balance_and_loads(caches: list) -> tuple[float, np.ndarray]:
    """(Σ over the layers of the window's load-balancing loss, each layer's share of assignments per expert)."""
    total, loads = 0.0, []
    for cache in caches:
        _, W_router, _, experts, _, _, balance = cache[4]
        total += balance
        loads.append(np.bincount(experts.ravel(), minlength=W_router.shape[1]) / experts.size)
    return total, np.array(loads)


def loads_entry(windows: list[list]) -> dict:
    """What an evaluation keeps of the validation windows' caches: each layer's loads, and the mean balancing loss.

    ``loads``: per layer, each expert's share of all the windows' assignments (f_i, summing to 1); ``balance``:
    the windows' mean of the load-balancing losses summed over the layers (its least, each layer even, is the
    number of layers).
    """
    results = [balance_and_loads(caches) for caches in windows]
    return {"loads": np.mean([loads for _, loads in results], axis=0).round(6).tolist(),
            "balance": float(np.mean([total for total, _ in results]))}


def active_parameters(d_model: int, d_ff: int, layers: int, experts: int, top_k: int) -> dict[str, int]:
    """The feed-forward parameters a token uses (``active``) and holds (``total``), dense and mixture, all layers."""
    width = d_ff // top_k
    return {"dense": layers * 3 * d_model * d_ff,
            "active": layers * (top_k * 3 * d_model * width + d_model * experts),
            "total": layers * (experts * 3 * d_model * width + d_model * experts),
            "router": layers * d_model * experts}


def gates_check(ch, rng: np.random.Generator):
    """(function, what is wrong) when your ``gates_backward`` disagrees with central differences of your gates."""
    from .gradcheck import compare, numerical

    x, W = rng.normal(0, 1, (5, 4)), rng.normal(0, 1, (4, 4))
    R = rng.normal(0, 1, (5, 2))

    def gates() -> np.ndarray:
        return _arr(ch.c22.top_k_gates(_arr(ch.c22.router_probabilities(x, W)), 2)[1])

    experts, g = ch.c22.top_k_gates(_arr(ch.c22.router_probabilities(x, W)), 2)
    d_logits = _arr(ch.c22.gates_backward(R, _arr(g), np.asarray(experts), 4))
    return compare("gates_backward", "top_k_gates (and router_probabilities)", ("result",), [x.T @ d_logits],
                   [numerical(lambda: float(np.sum(R * gates())), W)])
