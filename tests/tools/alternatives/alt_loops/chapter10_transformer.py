"""Chapter 10, written from the docstrings: row-by-row loops, caches as small objects, checks one by one."""

import math
import numbers

import numpy as np

from .chapter04_attention import softmax

BLOCK_KEYS = ("ln1_gamma", "ln1_beta", "WQ", "WK", "WV", "ln2_gamma", "ln2_beta", "W1", "b1", "W2", "b2")
MODEL_KEYS = ("tok_emb", "pos_emb", "blocks", "lnf_gamma", "lnf_beta", "WO")


def _shape(name: str, a, want: tuple) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.shape != want:
        raise ValueError(f"{name} has shape {a.shape}; it should be {want}")
    return a


# -- layer norm ------------------------------------------------------------------------------------------
def _row_stats(x: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """(x̂, 1/√(σ² + ε)) for every row, the mean and variance summed by hand."""
    xhat = np.empty(x.shape)
    inv = np.empty(x.shape[:-1] + (1,))
    d = x.shape[-1]
    for index in np.ndindex(x.shape[:-1]):
        row = x[index]
        mu = sum(row.tolist()) / d
        var = sum((v - mu) ** 2 for v in row.tolist()) / d
        r = 1.0 / math.sqrt(var + eps)
        inv[index] = r
        xhat[index] = [(v - mu) * r for v in row.tolist()]
    return xhat, inv


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """γ x̂ + β, row by row."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"layer_norm needs a non-empty feature axis (the last), got shape {x.shape}")
    d = x.shape[-1]
    gamma, beta = _shape("gamma", gamma, (d,)), _shape("beta", beta, (d,))
    xhat, _ = _row_stats(x, eps)
    return xhat * gamma + beta


def layer_norm_backward(x: np.ndarray, gamma: np.ndarray, d_out: np.ndarray,
                        eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """dx = (g − mean g − x̂ mean(g x̂)) / √(σ² + ε), per row."""
    x, d_out = np.asarray(x, dtype=np.float64), np.asarray(d_out, dtype=np.float64)
    if d_out.shape != x.shape:
        raise ValueError(f"d_out has shape {d_out.shape}; x has {x.shape}")
    gamma = _shape("gamma", gamma, (x.shape[-1],))
    xhat, inv = _row_stats(x, eps)
    dx = np.empty(x.shape)
    for index in np.ndindex(x.shape[:-1]):
        g = d_out[index] * gamma
        mean_g = g.mean()
        mean_gx = (g * xhat[index]).mean()
        dx[index] = inv[index] * (g - mean_g - xhat[index] * mean_gx)
    flat_d, flat_x = d_out.reshape(-1, x.shape[-1]), xhat.reshape(-1, x.shape[-1])
    dgamma, dbeta = np.zeros(x.shape[-1]), np.zeros(x.shape[-1])
    for r in range(len(flat_d)):
        dgamma += flat_d[r] * flat_x[r]
        dbeta += flat_d[r]
    return dx, dgamma, dbeta


# -- attention and feed-forward ----------------------------------------------------------------------------
class _AttentionCache(tuple):
    """(x, WQ, WK, WV, Q, K, V, P): what attention_backward needs."""


def attention_forward(x: np.ndarray, WQ: np.ndarray, WK: np.ndarray, WV: np.ndarray) -> tuple[np.ndarray, tuple]:
    """Causal single-head attention, one query row at a time."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D (seq, d_model), got shape {x.shape}")
    seq, d = x.shape
    if seq == 0:
        raise ValueError(f"x of shape {x.shape} has no rows: no position to attend from")
    Ws = [_shape(name, W, (d, d)) for name, W in (("WQ", WQ), ("WK", WK), ("WV", WV))]
    Q, K, V = (x @ W for W in Ws)
    P = np.zeros((seq, seq))
    out = np.zeros((seq, d))
    for i in range(seq):
        scores = np.array([float(Q[i] @ K[j]) / math.sqrt(d) if d else 0.0 for j in range(i + 1)])
        weights = softmax(scores)
        P[i, : i + 1] = weights
        for j in range(i + 1):
            out[i] += weights[j] * V[j]
    return out, _AttentionCache((x, *Ws, Q, K, V, P))


def attention_backward(d_out: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Back through A = P V, the softmax rows and the projections."""
    x, WQ, WK, WV, Q, K, V, P = cache
    d_out = np.asarray(d_out, dtype=np.float64)
    if d_out.shape != V.shape:
        raise ValueError(f"d_out has shape {d_out.shape}; the attention output is {V.shape}")
    seq, d = x.shape
    dV = P.T @ d_out
    dP = d_out @ V.T
    dS = np.zeros((seq, seq))
    for i in range(seq):
        dS[i] = P[i] * (dP[i] - float(dP[i] @ P[i]))
    scale = 1.0 / math.sqrt(d)
    dQ, dK = dS @ K * scale, dS.T @ Q * scale
    dx = dQ @ WQ.T + dK @ WK.T + dV @ WV.T
    return dx, x.T @ dQ, x.T @ dK, x.T @ dV


def ffn_forward(x: np.ndarray, W1: np.ndarray, b1: np.ndarray, W2: np.ndarray, b2: np.ndarray) -> tuple[np.ndarray, tuple]:
    """ReLU(x W1 + b1) W2 + b2."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D, got shape {x.shape}")
    d = x.shape[1]
    W1 = np.asarray(W1, dtype=np.float64)
    if W1.ndim != 2 or W1.shape[0] != d:
        raise ValueError(f"W1 has shape {W1.shape}; it should be (d_model, d_ff) with d_model = {d}")
    d_ff = W1.shape[1]
    b1, W2, b2 = _shape("b1", b1, (d_ff,)), _shape("W2", W2, (d_ff, d)), _shape("b2", b2, (d,))
    z = x @ W1 + b1
    r = np.where(z > 0, z, 0.0)
    return r @ W2 + b2, (x, W1, W2, z, r)


def ffn_backward(d_out: np.ndarray, cache: tuple) -> tuple[np.ndarray, ...]:
    """(dx, dW1, db1, dW2, db2)."""
    x, W1, W2, z, r = cache
    d_out = np.asarray(d_out, dtype=np.float64)
    if d_out.shape != x.shape:
        raise ValueError(f"d_out has shape {d_out.shape}; the output is {x.shape}")
    dz = (d_out @ W2.T) * (z > 0)
    return dz @ W1.T, x.T @ dz, dz.sum(axis=0), r.T @ d_out, d_out.sum(axis=0)


# -- a block and the model ---------------------------------------------------------------------------------
class _BlockCache:
    """Everything a block's backward pass reads."""

    def __init__(self, **parts) -> None:
        self.__dict__.update(parts)


def block_forward(x: np.ndarray, block: dict) -> tuple[np.ndarray, tuple]:
    """x1 = x + attn(LN1 x); y = x1 + FFN(LN2 x1)."""
    x = np.asarray(x, dtype=np.float64)
    h1 = layer_norm(x, block["ln1_gamma"], block["ln1_beta"])
    a, attn = attention_forward(h1, block["WQ"], block["WK"], block["WV"])
    x1 = x + a
    h2 = layer_norm(x1, block["ln2_gamma"], block["ln2_beta"])
    f, ffn = ffn_forward(h2, block["W1"], block["b1"], block["W2"], block["b2"])
    return x1 + f, (_BlockCache(x=x, x1=x1, block=block, attn=attn, ffn=ffn),)


def block_backward(d_y: np.ndarray, cache: tuple) -> tuple[np.ndarray, dict]:
    """Both residual paths, added."""
    (c,) = cache
    d_y = np.asarray(d_y, dtype=np.float64)
    if d_y.shape != c.x.shape:
        raise ValueError(f"d_y has shape {d_y.shape}; the block's output is {c.x.shape}")
    g = {}
    dh2, g["W1"], g["b1"], g["W2"], g["b2"] = ffn_backward(d_y, c.ffn)
    dx1_norm, g["ln2_gamma"], g["ln2_beta"] = layer_norm_backward(c.x1, c.block["ln2_gamma"], dh2)
    dx1 = d_y + dx1_norm
    dh1, g["WQ"], g["WK"], g["WV"] = attention_backward(dx1, c.attn)
    dx_norm, g["ln1_gamma"], g["ln1_beta"] = layer_norm_backward(c.x, c.block["ln1_gamma"], dh1)
    return dx1 + dx_norm, {k: g[k] for k in BLOCK_KEYS}


def _size(name: str, value, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name} must be a whole number ≥ {least}, got {name} = {value!r}")
    return int(value)


def init_params(vocab_size: int, d_model: int, d_ff: int, n_layers: int, max_len: int, seed: int = 0) -> dict:
    """The documented layout, drawn block by block."""
    vocab, d = _size("vocab_size", vocab_size, 1), _size("d_model", d_model, 1)
    d_ff, layers = _size("d_ff", d_ff, 1), _size("n_layers", n_layers, 0)
    max_len = _size("max_len", max_len, 1)
    rng = np.random.default_rng(seed)

    def normal(variance: float, *shape: int) -> np.ndarray:
        return rng.normal(0.0, math.sqrt(variance), size=shape)

    params = {"tok_emb": normal(1.0, vocab, d), "pos_emb": normal(1.0, max_len, d), "blocks": []}
    for _ in range(layers):
        params["blocks"].append({
            "ln1_gamma": np.ones(d), "ln1_beta": np.zeros(d),
            "WQ": normal(1 / d, d, d), "WK": normal(1 / d, d, d), "WV": normal(1 / d, d, d),
            "ln2_gamma": np.ones(d), "ln2_beta": np.zeros(d),
            "W1": normal(1 / d, d, d_ff), "b1": np.zeros(d_ff), "W2": normal(1 / d_ff, d_ff, d), "b2": np.zeros(d)})
    params.update(lnf_gamma=np.ones(d), lnf_beta=np.zeros(d), WO=normal(0.01 / d, d, vocab))
    return params


def _ids(ids, vocab: int, max_len: int) -> np.ndarray:
    arr = np.asarray(ids)
    if arr.size == 0:
        raise ValueError("ids is empty: give at least one token")
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"ids must be a 1-D sequence of whole numbers, got shape {arr.shape}, dtype {arr.dtype}")
    for i in arr.tolist():
        if not 0 <= i < vocab:
            raise ValueError(f"id {i} is outside the vocabulary (vocab size {vocab})")
    if len(arr) > max_len:
        raise ValueError(f"{len(arr)} ids are more than max_len = {max_len} positions")
    return arr.astype(np.int64)


def embed(ids, params: dict) -> np.ndarray:
    """Token row plus position row, one position at a time."""
    tok, pos = np.asarray(params["tok_emb"], dtype=np.float64), np.asarray(params["pos_emb"], dtype=np.float64)
    arr = _ids(ids, len(tok), len(pos))
    x = np.zeros((len(arr), tok.shape[1]))
    for i, t in enumerate(arr.tolist()):
        x[i] = tok[t] + pos[i]
    return x


def _exact_keys(name: str, d, keys: tuple) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"{name} must be a dict with keys {', '.join(keys)}; got a {type(d).__name__}")
    if set(d) != set(keys):
        raise ValueError(f"{name} must have exactly the keys {', '.join(keys)}; it has {', '.join(map(str, d))}")


def _check_params(params) -> None:
    _exact_keys("params", params, MODEL_KEYS)
    tok = np.asarray(params["tok_emb"])
    if tok.ndim != 2:
        raise ValueError(f"tok_emb has shape {tok.shape}; it should be (vocab, d_model)")
    vocab, d = tok.shape
    pos = np.asarray(params["pos_emb"])
    if pos.ndim != 2 or pos.shape[1] != d:
        raise ValueError(f"pos_emb has shape {pos.shape}; it should be (max_len, {d})")
    for key in ("lnf_gamma", "lnf_beta"):
        _shape(key, params[key], (d,))
    _shape("WO", params["WO"], (d, vocab))
    blocks = params["blocks"]
    if not isinstance(blocks, list):
        raise ValueError(f"blocks must be a list of dicts, got a {type(blocks).__name__}")
    for n, block in enumerate(blocks):
        _exact_keys(f"blocks[{n}]", block, BLOCK_KEYS)
        W1 = np.asarray(block["W1"])
        if W1.ndim != 2 or W1.shape[0] != d:
            raise ValueError(f"W1 of blocks[{n}] has shape {W1.shape}; it should be ({d}, d_ff)")
        d_ff = W1.shape[1]
        want = {"ln1_gamma": (d,), "ln1_beta": (d,), "WQ": (d, d), "WK": (d, d), "WV": (d, d), "ln2_gamma": (d,),
                "ln2_beta": (d,), "b1": (d_ff,), "W2": (d_ff, d), "b2": (d,)}
        for key, shape in want.items():
            _shape(key, block[key], shape)


class _ModelCache(dict):
    """What transformer_backward reads."""


def transformer_forward(ids, params: dict) -> tuple[np.ndarray, dict]:
    """Embed, every block, the final norm, W_O."""
    _check_params(params)
    x = embed(ids, params)
    caches = []
    for block in params["blocks"]:
        x, cache = block_forward(x, block)
        caches.append(cache)
    h = layer_norm(x, params["lnf_gamma"], params["lnf_beta"])
    logits = h @ np.asarray(params["WO"], dtype=np.float64)
    return logits, _ModelCache(params=params, ids=_ids(ids, len(params["tok_emb"]), len(params["pos_emb"])),
                               x=x, h=h, blocks=caches)


def cross_entropy(logits: np.ndarray, targets) -> tuple[float, np.ndarray]:
    """Mean −log softmax over the rows with a target, by log-sum-exp."""
    logits = np.asarray(logits, dtype=np.float64)
    t = np.asarray(targets)
    if t.shape != (logits.shape[0],):
        raise ValueError(f"targets has shape {t.shape}; it needs one entry per position ({logits.shape[0]},)")
    if t.dtype.kind not in "iu":
        raise ValueError(f"targets must be whole numbers, got dtype {t.dtype}")
    too_big = [int(v) for v in t.tolist() if v >= logits.shape[1]]
    if too_big:
        raise ValueError(f"targets {too_big} are not below the vocab size {logits.shape[1]}")
    rows = [i for i, v in enumerate(t.tolist()) if v >= 0]
    if not rows:
        raise ValueError("no target is ≥ 0: there is nothing to score")
    total = 0.0
    d_logits = np.zeros(logits.shape)
    for i in rows:
        z = logits[i]
        top = float(np.max(z))
        lse = top + math.log(sum(math.exp(v - top) for v in z.tolist()))
        total += lse - z[t[i]]
        d_logits[i] = np.exp(z - lse)
        d_logits[i, t[i]] -= 1.0
    return total / len(rows), d_logits / len(rows)


def transformer_backward(d_logits: np.ndarray, cache: dict) -> dict:
    """The forward pass in reverse."""
    params = cache["params"]
    d_logits = np.asarray(d_logits, dtype=np.float64)
    want = (len(cache["ids"]), np.shape(params["WO"])[1])
    if d_logits.shape != want:
        raise ValueError(f"d_logits has shape {d_logits.shape}; the logits are {want}")
    grads = {"WO": cache["h"].T @ d_logits}
    dh = d_logits @ np.asarray(params["WO"], dtype=np.float64).T
    dx, grads["lnf_gamma"], grads["lnf_beta"] = layer_norm_backward(cache["x"], params["lnf_gamma"], dh)
    block_grads = [None] * len(params["blocks"])
    for n in reversed(range(len(params["blocks"]))):
        dx, block_grads[n] = block_backward(dx, cache["blocks"][n])
    d_tok = np.zeros(np.shape(params["tok_emb"]))
    d_pos = np.zeros(np.shape(params["pos_emb"]))
    for i, t in enumerate(cache["ids"].tolist()):
        d_tok[t] += dx[i]
        d_pos[i] += dx[i]
    grads.update(tok_emb=d_tok, pos_emb=d_pos, blocks=block_grads)
    return {k: grads[k] for k in MODEL_KEYS}


def transformer_loss_and_grads(ids, targets, params: dict) -> tuple[float, dict]:
    """Forward, loss, backward."""
    logits, cache = transformer_forward(ids, params)
    loss, d_logits = cross_entropy(logits, targets)
    return float(loss), transformer_backward(d_logits, cache)


def _walk(tree, leaf):
    """Apply ``leaf`` to every array of a parameter tree, keeping its layout."""
    if isinstance(tree, dict):
        return {k: _walk(v, leaf) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_walk(v, leaf) for v in tree]
    return leaf(tree)


def train_transformer(data, params: dict, lr: float, epochs: int) -> tuple[dict, np.ndarray]:
    """Full-batch descent on the mean gradient."""
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not math.isfinite(lr):
        raise ValueError(f"lr must be a finite number, got lr = {lr!r}")
    if isinstance(epochs, bool) or not isinstance(epochs, numbers.Integral) or epochs < 0:
        raise ValueError(f"epochs must be a whole number ≥ 0, got epochs = {epochs!r}")
    if len(data) == 0:
        raise ValueError("data is empty: give at least one (ids, targets) pair")
    current = _walk(params, lambda a: np.array(a, dtype=np.float64))
    losses = []
    for _ in range(epochs):
        total, summed = 0.0, None
        for ids, targets in data:
            loss, grads = transformer_loss_and_grads(ids, targets, current)
            total += loss
            summed = grads if summed is None else _add(summed, grads)
        losses.append(total / len(data))
        current = _step(current, summed, lr / len(data))
    return current, np.array(losses, dtype=np.float64)


def _add(a, b):
    if isinstance(a, dict):
        return {k: _add(a[k], b[k]) for k in a}
    if isinstance(a, list):
        return [_add(x, y) for x, y in zip(a, b, strict=True)]
    return a + b


def _step(p, g, scale: float):
    if isinstance(p, dict):
        return {k: _step(p[k], g[k], scale) for k in p}
    if isinstance(p, list):
        return [_step(x, y, scale) for x, y in zip(p, g, strict=True)]
    return p - scale * g


def generate(prompt_ids, params: dict, n_new: int) -> np.ndarray:
    """Greedy: the argmax of the last row, n_new times."""
    if isinstance(n_new, bool) or not isinstance(n_new, numbers.Integral) or n_new < 0:
        raise ValueError(f"n_new must be a whole number ≥ 0, got n_new = {n_new!r}")
    _check_params(params)
    ids = list(_ids(prompt_ids, len(params["tok_emb"]), len(params["pos_emb"])).tolist())
    max_len = len(params["pos_emb"])
    if len(ids) + n_new > max_len:
        raise ValueError(f"{len(ids)} + {n_new} tokens are more than max_len = {max_len}")
    for _ in range(n_new):
        logits, _ = transformer_forward(ids, params)
        last = logits[-1]
        best = 0
        for j in range(1, len(last)):
            if last[j] > last[best]:
                best = j
        ids.append(best)
    return np.array(ids, dtype=np.int64)
