"""Chapter 7, written from the docstrings: the chain rule one link per line, products by loops."""

import numbers

import numpy as np

from .chapter05_forward_pass import PARAM_NAMES, forward
from .chapter06_training_step import cross_entropy, cross_entropy_grad, sgd_step


def _mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B by three loops."""
    out = np.zeros((A.shape[0], B.shape[1]))
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                out[i, j] += A[i, k] * B[k, j]
    return out


def softmax_backward(probs: np.ndarray, dprobs: np.ndarray) -> np.ndarray:
    """s_i (g_i - sum_j s_j g_j), row by row."""
    s, g = np.asarray(probs, dtype=np.float64), np.asarray(dprobs, dtype=np.float64)
    if s.shape != g.shape or s.ndim == 0:
        raise ValueError(f"probs {s.shape} and dprobs {g.shape} must have one shape, with at least one axis")
    out = np.zeros(s.shape)
    for index in np.ndindex(s.shape[:-1]):
        row_s, row_g = s[index], g[index]
        average = sum(row_s[j] * row_g[j] for j in range(len(row_s)))
        for i in range(len(row_s)):
            out[index + (i,)] = row_s[i] * (row_g[i] - average)
    return out


def _two_d(**arrays) -> list[np.ndarray]:
    out = []
    for name, a in arrays.items():
        a = np.asarray(a, dtype=np.float64)
        if a.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {a.shape}")
        out.append(a)
    return out


def linear_backward(X: np.ndarray, W: np.ndarray, dY: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dX = dY Wᵀ, dW = Xᵀ dY."""
    X, W, dY = _two_d(X=X, W=W, dY=dY)
    if X.shape[1] != W.shape[0] or dY.shape != (X.shape[0], W.shape[1]):
        raise ValueError(f"X {X.shape}, W {W.shape} and dY {dY.shape} do not fit Y = X W")
    return _mm(dY, W.T), _mm(X.T, dY)


def attention_backward(Q: np.ndarray, K: np.ndarray, V: np.ndarray, weights: np.ndarray,
                       d_output: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """dA, dV, dS, dR, dQ, dK in turn."""
    Q, K, V, A, dH = _two_d(Q=Q, K=K, V=V, weights=weights, d_output=d_output)
    seq = Q.shape[0]
    if K.shape != Q.shape or V.shape[0] != seq or A.shape != (seq, seq) or dH.shape != V.shape:
        raise ValueError(f"shapes do not fit: Q {Q.shape}, K {K.shape}, V {V.shape}, weights {A.shape}, "
                         f"d_output {dH.shape}")
    dA = _mm(dH, V.T)
    dV = _mm(A.T, dH)
    dS = softmax_backward(A, dA)
    dR = dS / np.sqrt(Q.shape[1])
    return _mm(dR, K), _mm(dR.T, Q), dV


def backward_trace(ids: list[int], target: int, params: dict[str, np.ndarray], *,
                   embeddings: np.ndarray | None = None) -> dict:
    """Every gradient from the loss back to the weights."""
    t = dict(forward(ids, params, embeddings=embeddings))
    t["loss"] = cross_entropy(t["probs"], target)
    t["dlogits"] = cross_entropy_grad(t["probs"], target)
    WO = np.asarray(params["WO"], dtype=np.float64)
    c, dz = t["context"], t["dlogits"]
    t["dWO"] = np.array([[c[i] * dz[j] for j in range(len(dz))] for i in range(len(c))])
    t["dcontext"] = np.array([sum(WO[i, j] * dz[j] for j in range(len(dz))) for i in range(len(c))])
    d_output = np.zeros(t["output"].shape)
    d_output[-1] = t["dcontext"]
    t["d_output"] = d_output
    t["d_weights"] = _mm(d_output, t["V"].T)
    t["d_scores"] = softmax_backward(t["weights"], t["d_weights"])
    t["d_raw_scores"] = t["d_scores"] / np.sqrt(t["K"].shape[1])
    t["dQ"] = _mm(t["d_raw_scores"], t["K"])
    t["dK"] = _mm(t["d_raw_scores"].T, t["Q"])
    t["dV"] = _mm(t["weights"].T, d_output)
    X = t["X"]
    for name, grad in (("dWQ", t["dQ"]), ("dWK", t["dK"]), ("dWV", t["dV"])):
        t[name] = _mm(X.T, grad)
    return t


def backward(ids: list[int], target: int, params: dict[str, np.ndarray], *,
             embeddings: np.ndarray | None = None) -> tuple[float, dict[str, np.ndarray]]:
    """The loss and the four weight gradients."""
    t = backward_trace(ids, target, params, embeddings=embeddings)
    return float(t["loss"]), {name: t[f"d{name}"] for name in PARAM_NAMES}


def train_step(ids: list[int], target: int, params: dict[str, np.ndarray], lr: float, *,
               embeddings: np.ndarray | None = None) -> tuple[dict[str, np.ndarray], float]:
    """W - lr dW for all four."""
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real):
        raise TypeError(f"lr must be a real number, got lr = {lr!r}")
    if lr < 0:
        raise ValueError(f"lr = {lr} is negative")
    loss, grads = backward(ids, target, params, embeddings=embeddings)
    new = {name: np.array(value, dtype=np.float64) for name, value in params.items()}
    for name in PARAM_NAMES:
        new[name] = sgd_step(np.asarray(params[name], dtype=np.float64), grads[name], lr)
    return new, loss
