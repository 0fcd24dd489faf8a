"""Chapter 5, written from the docstrings: one check at a time, the pieces of chapters 3 and 4 reused."""

import numpy as np

from .chapter03_embeddings import TOY_EMBEDDINGS, embed
from .chapter04_attention import attention_scores, causal_mask, raw_scores, scaled_dot_product_attention, softmax

PARAM_NAMES = ("WQ", "WK", "WV", "WO")


def toy_params() -> dict[str, np.ndarray]:
    """0.1·I for W_Q, W_K, W_V; W_O scores context entry 0 for A and entry 1 for C."""
    params = {}
    for name in ("WQ", "WK", "WV"):
        W = np.zeros((2, 2))
        for i in range(2):
            W[i, i] = 0.1
        params[name] = W
    WO = np.zeros((2, 4))
    WO[0, 0] = 0.1
    WO[1, 2] = 0.1
    params["WO"] = WO
    return params


def _weight(params: dict, name: str) -> np.ndarray:
    if name not in params:
        raise ValueError(f"params has no {name} (it has {', '.join(map(str, params))})")
    W = np.asarray(params[name])
    if W.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {W.shape}")
    return W


def project_qkv(X: np.ndarray, params: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K, V = X W_Q, X W_K, X W_V, each row by a loop."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (seq, d_model), got shape {X.shape}")
    out = []
    for name in ("WQ", "WK", "WV"):
        W = _weight(params, name)
        if W.shape[0] != X.shape[1]:
            raise ValueError(f"{name} has shape {W.shape}; its rows must match X's width {X.shape[1]} (X {X.shape})")
        rows = np.zeros((X.shape[0], W.shape[1]))
        for r in range(X.shape[0]):
            for c in range(W.shape[1]):
                rows[r, c] = sum(float(X[r, k]) * float(W[k, c]) for k in range(X.shape[1]))
        out.append(rows)
    WQ, WK = np.asarray(params["WQ"]), np.asarray(params["WK"])
    if WQ.shape[1] != WK.shape[1]:
        raise ValueError(f"WQ {WQ.shape} and WK {WK.shape} must have the same width d_k")
    return out[0], out[1], out[2]


def forward(ids: list[int], params: dict[str, np.ndarray], *, embeddings: np.ndarray | None = None) -> dict:
    """Every intermediate of one prediction."""
    if len(ids) == 0:
        raise ValueError("forward needs at least one token")
    table = TOY_EMBEDDINGS if embeddings is None else np.asarray(embeddings)
    WO = _weight(params, "WO")
    X = embed(ids, table)
    Q, K, V = project_qkv(X, params)
    if WO.shape != (V.shape[1], table.shape[0]):
        raise ValueError(f"WO has shape {WO.shape}; it should be {(V.shape[1], table.shape[0])} (d_v, vocab)")
    raw = raw_scores(Q, K)
    scores = attention_scores(Q, K)
    output, weights = scaled_dot_product_attention(Q, K, V, mask=causal_mask(len(ids)))
    context = output[len(ids) - 1].copy()
    logits = np.zeros(WO.shape[1])
    for j in range(WO.shape[1]):
        for k in range(WO.shape[0]):
            logits[j] += context[k] * WO[k, j]
    return {"X": X, "Q": Q, "K": K, "V": V, "raw_scores": raw, "scores": scores, "weights": weights,
            "output": output, "context": context, "logits": logits, "probs": softmax(logits)}


def next_token_probs(ids: list[int], params: dict[str, np.ndarray], *,
                     embeddings: np.ndarray | None = None) -> np.ndarray:
    """The probs of forward."""
    return forward(ids, params, embeddings=embeddings)["probs"]
