"""Chapter 5, written from the docstrings: the whole pass in einsum, masked scores built here."""

import numpy as np

from .chapter03_embeddings import TOY_EMBEDDINGS, embed
from .chapter04_attention import attention_scores, causal_mask, raw_scores, scaled_dot_product_attention, softmax

PARAM_NAMES = ("WQ", "WK", "WV", "WO")


def toy_params() -> dict[str, np.ndarray]:
    """0.1·I three times, and the explicit W_O."""
    eye = 0.1 * np.eye(2)
    return {"WQ": eye.copy(), "WK": eye.copy(), "WV": eye.copy(),
            "WO": np.array([[0.1, 0.0, 0.0, 0.0], [0.0, 0.0, 0.1, 0.0]])}


def _matrices(params: dict, names: tuple[str, ...]) -> list[np.ndarray]:
    missing = [n for n in names if n not in params]
    if missing:
        raise ValueError(f"missing {', '.join(missing)} in params")
    out = [np.asarray(params[n]) for n in names]
    for name, W in zip(names, out, strict=True):
        if W.ndim != 2:
            raise ValueError(f"{name} of shape {W.shape} is not a 2-D matrix")
    return out


def project_qkv(X: np.ndarray, params: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """einsum('sd,dk->sk') three times."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X of shape {X.shape} is not 2-D")
    WQ, WK, WV = _matrices(params, ("WQ", "WK", "WV"))
    for name, W in (("WQ", WQ), ("WK", WK), ("WV", WV)):
        if len(W) != X.shape[1]:
            raise ValueError(f"X {X.shape} @ {name} {W.shape}: {name} needs {X.shape[1]} rows")
    if WQ.shape[1] != WK.shape[1]:
        raise ValueError(f"WQ {WQ.shape} and WK {WK.shape} give queries and keys of different widths")
    return tuple(np.einsum("sd,dk->sk", X, W) for W in (WQ, WK, WV))


def forward(ids: list[int], params: dict[str, np.ndarray], *, embeddings: np.ndarray | None = None) -> dict:
    """Every intermediate of one prediction."""
    if not len(ids):
        raise ValueError("ids is empty: forward needs at least one token")
    table = np.asarray(TOY_EMBEDDINGS if embeddings is None else embeddings)
    (WO,) = _matrices(params, ("WO",))
    X = embed(ids, table)
    Q, K, V = project_qkv(X, params)
    if WO.shape != (V.shape[1], len(table)):
        raise ValueError(f"WO is {WO.shape}, expected {(V.shape[1], len(table))}: d_v rows, one column per token")
    output, weights = scaled_dot_product_attention(Q, K, V, mask=causal_mask(len(X)))
    context = np.array(output[-1])
    logits = np.einsum("v,vt->t", context, WO)
    return {"X": X, "Q": Q, "K": K, "V": V, "raw_scores": raw_scores(Q, K), "scores": attention_scores(Q, K),
            "weights": weights, "output": output, "context": context, "logits": logits, "probs": softmax(logits)}


def next_token_probs(ids: list[int], params: dict[str, np.ndarray], *,
                     embeddings: np.ndarray | None = None) -> np.ndarray:
    """softmax(context W_O)."""
    return forward(ids, params, embeddings=embeddings)["probs"]
