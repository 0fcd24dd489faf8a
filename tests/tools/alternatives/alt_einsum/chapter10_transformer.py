"""Chapter 10, written from the docstrings: einsum everywhere, a shape table for params, tuple caches."""

import numbers

import numpy as np

from .chapter04_attention import causal_mask, softmax

BLOCK_KEYS = ("ln1_gamma", "ln1_beta", "WQ", "WK", "WV", "ln2_gamma", "ln2_beta", "W1", "b1", "W2", "b2")
MODEL_KEYS = ("tok_emb", "pos_emb", "blocks", "lnf_gamma", "lnf_beta", "WO")


def _fits(name: str, a, shape: tuple) -> np.ndarray:
    a = np.asarray(a)
    if a.shape != shape:
        raise ValueError(f"{name}: shape {a.shape}, expected {shape}")
    return a


def _normalised(x: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    mu = np.einsum("...d->...", x)[..., None] / x.shape[-1]
    xc = x - mu
    inv = 1.0 / np.sqrt(np.einsum("...d,...d->...", xc, xc)[..., None] / x.shape[-1] + eps)
    return xc * inv, inv


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """γ x̂ + β with einsum means."""
    x = np.asarray(x, dtype=np.float64)
    if not x.shape or not x.shape[-1]:
        raise ValueError(f"x of shape {x.shape} has no feature axis to normalise (an empty or missing last axis)")
    d = x.shape[-1]
    gamma, beta = _fits("gamma", gamma, (d,)), _fits("beta", beta, (d,))
    return _normalised(x, eps)[0] * gamma + beta


def layer_norm_backward(x: np.ndarray, gamma: np.ndarray, d_out: np.ndarray,
                        eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The row-wise formula, broadcast."""
    x = np.asarray(x, dtype=np.float64)
    d_out = _fits("d_out", d_out, x.shape)
    gamma = _fits("gamma", gamma, x.shape[-1:])
    xhat, inv = _normalised(x, eps)
    g = d_out * gamma
    dx = inv * (g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True))
    flat_d, flat_x = d_out.reshape(-1, x.shape[-1]), xhat.reshape(-1, x.shape[-1])
    return dx, np.einsum("nd,nd->d", flat_d, flat_x), np.einsum("nd->d", flat_d)


def attention_forward(x: np.ndarray, WQ: np.ndarray, WK: np.ndarray, WV: np.ndarray) -> tuple[np.ndarray, tuple]:
    """Masked softmax of Q Kᵀ/√d, times V."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x has shape {x.shape}: it must be 2-D (seq, d_model)")
    if not len(x):
        raise ValueError("x has no rows: attention needs at least one position")
    d = x.shape[1]
    W = [_fits(n, w, (d, d)) for n, w in (("WQ", WQ), ("WK", WK), ("WV", WV))]
    Q, K, V = (np.einsum("sd,de->se", x, w) for w in W)
    S = np.einsum("qe,ke->qk", Q, K) / np.sqrt(max(d, 1))
    P = softmax(np.where(causal_mask(len(x)), S, -np.inf), axis=-1)
    return np.einsum("qk,ke->qe", P, V), (x, W, Q, K, V, P)


def attention_backward(d_out: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """dV, dP, dS, then the projections."""
    x, (WQ, WK, WV), Q, K, V, P = cache
    d_out = _fits("d_out", d_out, V.shape)
    dV = np.einsum("qk,qe->ke", P, d_out)
    dP = np.einsum("qe,ke->qk", d_out, V)
    dS = P * (dP - np.einsum("qk,qk->q", dP, P)[:, None])
    r = 1 / np.sqrt(max(x.shape[1], 1))
    dQ, dK = np.einsum("qk,ke->qe", dS, K) * r, np.einsum("qk,qe->ke", dS, Q) * r
    dx = np.einsum("se,de->sd", dQ, WQ) + np.einsum("se,de->sd", dK, WK) + np.einsum("se,de->sd", dV, WV)
    return dx, np.einsum("sd,se->de", x, dQ), np.einsum("sd,se->de", x, dK), np.einsum("sd,se->de", x, dV)


def ffn_forward(x: np.ndarray, W1: np.ndarray, b1: np.ndarray, W2: np.ndarray, b2: np.ndarray) -> tuple[np.ndarray, tuple]:
    """einsum layers around a ReLU."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x is {x.shape}, not 2-D")
    W1 = np.asarray(W1)
    if W1.ndim != 2 or len(W1) != x.shape[1]:
        raise ValueError(f"W1: shape {W1.shape} does not take rows of width {x.shape[1]}")
    f, d = W1.shape[1], x.shape[1]
    b1, W2, b2 = _fits("b1", b1, (f,)), _fits("W2", W2, (f, d)), _fits("b2", b2, (d,))
    z = np.einsum("sd,df->sf", x, W1) + b1
    r = np.maximum(z, 0.0)
    return np.einsum("sf,fd->sd", r, W2) + b2, (x, W1, W2, z, r)


def ffn_backward(d_out: np.ndarray, cache: tuple) -> tuple[np.ndarray, ...]:
    """Back through both layers."""
    x, W1, W2, z, r = cache
    d_out = _fits("d_out", d_out, x.shape)
    dz = np.einsum("sd,fd->sf", d_out, W2) * (z > 0)
    return (np.einsum("sf,df->sd", dz, W1), np.einsum("sd,sf->df", x, dz), dz.sum(0),
            np.einsum("sf,sd->fd", r, d_out), d_out.sum(0))


def block_forward(x: np.ndarray, block: dict) -> tuple[np.ndarray, tuple]:
    """Pre-norm block."""
    x = np.asarray(x, dtype=np.float64)
    a, c_attn = attention_forward(layer_norm(x, block["ln1_gamma"], block["ln1_beta"]),
                                  block["WQ"], block["WK"], block["WV"])
    x1 = x + a
    f, c_ffn = ffn_forward(layer_norm(x1, block["ln2_gamma"], block["ln2_beta"]),
                           block["W1"], block["b1"], block["W2"], block["b2"])
    return x1 + f, (x, x1, block["ln1_gamma"], block["ln2_gamma"], c_attn, c_ffn)


def block_backward(d_y: np.ndarray, cache: tuple) -> tuple[np.ndarray, dict]:
    """Residual paths added."""
    x, x1, g1, g2, c_attn, c_ffn = cache
    d_y = _fits("d_y", d_y, x.shape)
    dh2, dW1, db1, dW2, db2 = ffn_backward(d_y, c_ffn)
    dn2, dg2, dbeta2 = layer_norm_backward(x1, g2, dh2)
    dx1 = d_y + dn2
    dh1, dWQ, dWK, dWV = attention_backward(dx1, c_attn)
    dn1, dg1, dbeta1 = layer_norm_backward(x, g1, dh1)
    values = (dg1, dbeta1, dWQ, dWK, dWV, dg2, dbeta2, dW1, db1, dW2, db2)
    return dx1 + dn1, dict(zip(BLOCK_KEYS, values, strict=True))


def init_params(vocab_size: int, d_model: int, d_ff: int, n_layers: int, max_len: int, seed: int = 0) -> dict:
    """Standard normals, scaled by the documented standard deviations."""
    sizes = {"vocab_size": vocab_size, "d_model": d_model, "d_ff": d_ff, "n_layers": n_layers, "max_len": max_len}
    for name, value in sizes.items():
        least = 0 if name == "n_layers" else 1
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
            raise ValueError(f"{name} = {value!r}: expected a whole number of at least {least}")
    V, d, f, L, T = (int(v) for v in sizes.values())
    g = np.random.default_rng(seed)
    tok, pos, WO = g.standard_normal((V, d)), g.standard_normal((T, d)), g.standard_normal((d, V)) * np.sqrt(0.01 / d)
    blocks = []
    for _ in range(L):
        W = g.standard_normal((3, d, d)) / np.sqrt(d)
        blocks.append(dict(zip(BLOCK_KEYS, (np.ones(d), np.zeros(d), W[0], W[1], W[2], np.ones(d), np.zeros(d),
                                            g.standard_normal((d, f)) / np.sqrt(d), np.zeros(f),
                                            g.standard_normal((f, d)) / np.sqrt(f), np.zeros(d)), strict=True)))
    return {"tok_emb": tok, "pos_emb": pos, "blocks": blocks, "lnf_gamma": np.ones(d), "lnf_beta": np.zeros(d),
            "WO": WO}


def _token_ids(ids, vocab: int, max_len: int) -> np.ndarray:
    arr = np.asarray(ids)
    if not arr.size:
        raise ValueError("empty ids: there is nothing to embed")
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"ids of shape {arr.shape} and dtype {arr.dtype}: need a 1-D sequence of whole numbers")
    outside = arr[(arr < 0) | (arr >= vocab)]
    if outside.size:
        raise ValueError(f"id {int(outside[0])} is not in the vocab (size {vocab})")
    if len(arr) > max_len:
        raise ValueError(f"sequence length {len(arr)} exceeds max_len {max_len}")
    return arr


def embed(ids, params: dict) -> np.ndarray:
    """tok_emb[ids] + pos_emb[:seq]."""
    tok, pos = np.asarray(params["tok_emb"]), np.asarray(params["pos_emb"])
    arr = _token_ids(ids, tok.shape[0], pos.shape[0])
    return np.einsum("sv,vd->sd", np.eye(tok.shape[0])[arr], tok) + pos[: len(arr)]


def _validate(params) -> None:
    if not isinstance(params, dict) or sorted(params) != sorted(MODEL_KEYS):
        came = type(params).__name__ if not isinstance(params, dict) else ", ".join(map(str, params))
        raise ValueError(f"params must be a dict with the keys {MODEL_KEYS}; came: {came}")
    tok = np.asarray(params["tok_emb"])
    if tok.ndim != 2:
        raise ValueError(f"tok_emb: shape {tok.shape}, expected (vocab, d_model)")
    V, d = tok.shape
    pos = np.asarray(params["pos_emb"])
    if pos.ndim != 2 or pos.shape[1] != d:
        raise ValueError(f"pos_emb: shape {pos.shape}, expected (max_len, {d})")
    for key, shape in (("lnf_gamma", (d,)), ("lnf_beta", (d,)), ("WO", (d, V))):
        _fits(key, params[key], shape)
    blocks = params["blocks"]
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        what = type(blocks).__name__ if not isinstance(blocks, list) else \
            type(next(b for b in blocks if not isinstance(b, dict))).__name__
        raise ValueError(f"blocks must be a list of dicts; came a {what}")
    for b in blocks:
        if sorted(b) != sorted(BLOCK_KEYS):
            raise ValueError(f"a block must have the keys {BLOCK_KEYS}; it has {tuple(b)}")
        W1 = np.asarray(b["W1"])
        if W1.ndim != 2 or len(W1) != d:
            raise ValueError(f"W1: shape {W1.shape}, expected ({d}, d_ff)")
        f = W1.shape[1]
        table = dict(zip(BLOCK_KEYS, ((d,), (d,), (d, d), (d, d), (d, d), (d,), (d,), (d, f), (f,), (f, d), (d,)),
                         strict=True))
        for key, shape in table.items():
            _fits(key, b[key], shape)


def transformer_forward(ids, params: dict) -> tuple[np.ndarray, dict]:
    """The model, with a cache for the backward pass."""
    _validate(params)
    x = embed(ids, params)
    caches = []
    for block in params["blocks"]:
        x, c = block_forward(x, block)
        caches.append(c)
    h = layer_norm(x, params["lnf_gamma"], params["lnf_beta"])
    return np.einsum("sd,dv->sv", h, params["WO"]), {"params": params, "ids": np.asarray(ids), "x": x, "h": h,
                                                     "caches": caches}


def cross_entropy(logits: np.ndarray, targets) -> tuple[float, np.ndarray]:
    """log-sum-exp cross-entropy over the rows with a target."""
    z = np.asarray(logits, dtype=np.float64)
    t = np.asarray(targets)
    if t.shape != z.shape[:1] or not np.issubdtype(t.dtype, np.integer):
        raise ValueError(f"targets: shape {t.shape}, dtype {t.dtype}; need whole numbers of shape {z.shape[:1]}")
    if (t >= z.shape[1]).any():
        raise ValueError(f"targets {t[t >= z.shape[1]].tolist()} are not below vocab = {z.shape[1]}")
    keep = t >= 0
    if not keep.any():
        raise ValueError("every target is negative: no position has a target to score")
    lse = z.max(axis=1, keepdims=True)
    lse = lse + np.log(np.exp(z - lse).sum(axis=1, keepdims=True))
    logp = z - lse
    n = int(keep.sum())
    rows = np.flatnonzero(keep)
    loss = -logp[rows, t[rows]].sum() / n
    d = np.where(keep[:, None], np.exp(logp), 0.0)
    d[rows, t[rows]] -= 1
    return float(loss), d / n


def transformer_backward(d_logits: np.ndarray, cache: dict) -> dict:
    """Reverse of the forward pass; repeated tokens accumulate with np.add.at."""
    p = cache["params"]
    d_logits = _fits("d_logits", d_logits, (len(cache["ids"]), np.shape(p["WO"])[1]))
    dWO = np.einsum("sd,sv->dv", cache["h"], d_logits)
    dx, dg, db = layer_norm_backward(cache["x"], p["lnf_gamma"], np.einsum("sv,dv->sd", d_logits, p["WO"]))
    blocks = []
    for c in reversed(cache["caches"]):
        dx, g = block_backward(dx, c)
        blocks.insert(0, g)
    d_tok = np.zeros(np.shape(p["tok_emb"]))
    np.add.at(d_tok, cache["ids"], dx)
    d_pos = np.zeros(np.shape(p["pos_emb"]))
    d_pos[: len(dx)] = dx
    return {"tok_emb": d_tok, "pos_emb": d_pos, "blocks": blocks, "lnf_gamma": dg, "lnf_beta": db, "WO": dWO}


def transformer_loss_and_grads(ids, targets, params: dict) -> tuple[float, dict]:
    """One sequence's loss and gradients."""
    logits, cache = transformer_forward(ids, params)
    loss, d = cross_entropy(logits, targets)
    return loss, transformer_backward(d, cache)


def _leaves(tree) -> list:
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in _leaves(tree[k])]  # keys sorted: grads' order may differ
    if isinstance(tree, list):
        return [leaf for v in tree for leaf in _leaves(v)]
    return [tree]


def _rebuild(tree, values):
    if isinstance(tree, dict):
        built = {k: _rebuild(tree[k], values) for k in sorted(tree)}
        return {k: built[k] for k in tree}
    if isinstance(tree, list):
        return [_rebuild(v, values) for v in tree]
    return next(values)


def train_transformer(data, params: dict, lr: float, epochs: int) -> tuple[dict, np.ndarray]:
    """Flattened leaves, averaged gradients, one update per epoch."""
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not np.isfinite(lr):
        raise ValueError(f"lr = {lr!r} is not a finite number")
    if isinstance(epochs, bool) or not isinstance(epochs, numbers.Integral) or epochs < 0:
        raise ValueError(f"epochs = {epochs!r} is not a whole number ≥ 0")
    if not len(data):
        raise ValueError("data is empty")
    theta = [np.array(a, dtype=np.float64) for a in _leaves(params)]
    losses = np.zeros(int(epochs))
    for e in range(int(epochs)):
        current = _rebuild(params, iter(theta))
        results = [transformer_loss_and_grads(ids, targets, current) for ids, targets in data]
        losses[e] = np.mean([r[0] for r in results])
        means = [np.mean(stack, axis=0) for stack in zip(*(_leaves(r[1]) for r in results), strict=True)]
        theta = [w - lr * g for w, g in zip(theta, means, strict=True)]
    return _rebuild(params, iter(theta)), losses


def generate(prompt_ids, params: dict, n_new: int) -> np.ndarray:
    """np.argmax of the last row, appended n_new times."""
    if isinstance(n_new, bool) or not isinstance(n_new, numbers.Integral) or n_new < 0:
        raise ValueError(f"n_new = {n_new!r} must be a whole number ≥ 0")
    _validate(params)
    T = np.shape(params["pos_emb"])[0]
    ids = _token_ids(prompt_ids, np.shape(params["tok_emb"])[0], T).tolist()
    if len(ids) + n_new > T:
        raise ValueError(f"the prompt and {n_new} new tokens would be {len(ids) + n_new} long, past max_len {T}")
    for _ in range(int(n_new)):
        ids.append(int(np.argmax(transformer_forward(ids, params)[0][-1])))
    return np.asarray(ids, dtype=np.int64)
