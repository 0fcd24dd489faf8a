"""Chapter 7, written from the docstrings: einsum for every product, a small tape object for the trace."""

import numbers

import numpy as np

from .chapter05_forward_pass import PARAM_NAMES, forward
from .chapter06_training_step import cross_entropy, cross_entropy_grad, sgd_step


def softmax_backward(probs: np.ndarray, dprobs: np.ndarray) -> np.ndarray:
    """s * (g - <s, g>) along the last axis."""
    s, g = np.asarray(probs), np.asarray(dprobs)
    if s.ndim == 0 or g.ndim == 0 or s.shape != g.shape:
        raise ValueError(f"softmax_backward: probs {s.shape} and dprobs {g.shape} (same shape, not 0-D)")
    return s * (g - np.einsum("...j,...j->...", s, g)[..., None])


def _check(**arrays) -> dict[str, np.ndarray]:
    out = {}
    for name, a in arrays.items():
        a = np.asarray(a)
        if a.ndim != 2:
            raise ValueError(f"{name} has shape {a.shape}, not 2-D")
        out[name] = a
    return out


def linear_backward(X: np.ndarray, W: np.ndarray, dY: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """einsum('no,io->ni'), einsum('ni,no->io')."""
    a = _check(X=X, W=W, dY=dY)
    X, W, dY = a["X"], a["W"], a["dY"]
    if X.shape[1] != W.shape[0] or dY.shape != (len(X), W.shape[1]):
        raise ValueError(f"Y = X W does not fit X {X.shape}, W {W.shape}, dY {dY.shape}")
    return np.einsum("no,io->ni", dY, W), np.einsum("ni,no->io", X, dY)


def attention_backward(Q: np.ndarray, K: np.ndarray, V: np.ndarray, weights: np.ndarray,
                       d_output: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Back through H = A V, the softmax and the scaled Q Kᵀ."""
    a = _check(Q=Q, K=K, V=V, weights=weights, d_output=d_output)
    Q, K, V, A, dH = a["Q"], a["K"], a["V"], a["weights"], a["d_output"]
    n = len(Q)
    if K.shape != Q.shape or len(V) != n or A.shape != (n, n) or dH.shape != V.shape:
        raise ValueError("shapes do not fit: " + ", ".join(f"{k} {v.shape}" for k, v in a.items()))
    dA = np.einsum("qv,kv->qk", dH, V)
    dV = np.einsum("qk,qv->kv", A, dH)
    dR = softmax_backward(A, dA) * Q.shape[1] ** -0.5
    return np.einsum("qk,kd->qd", dR, K), np.einsum("qk,qd->kd", dR, Q), dV


class _Tape(dict):
    """The trace: a dict that records each gradient as it is computed."""

    def grad(self, name: str, value: np.ndarray) -> np.ndarray:
        self[name] = value
        return value


def backward_trace(ids: list[int], target: int, params: dict[str, np.ndarray], *,
                   embeddings: np.ndarray | None = None) -> dict:
    """Forward, then every gradient back to the weights."""
    t = _Tape(forward(ids, params, embeddings=embeddings))
    t["loss"] = cross_entropy(t["probs"], target)
    dz = t.grad("dlogits", cross_entropy_grad(t["probs"], target))
    WO = np.asarray(params["WO"])
    t.grad("dWO", np.einsum("v,t->vt", t["context"], dz))
    dc = t.grad("dcontext", np.einsum("vt,t->v", WO, dz))
    dH = t.grad("d_output", np.zeros_like(t["output"]))
    dH[-1] = dc
    dA = t.grad("d_weights", np.einsum("qv,kv->qk", dH, t["V"]))
    dS = t.grad("d_scores", softmax_backward(t["weights"], dA))
    dR = t.grad("d_raw_scores", dS / np.sqrt(t["K"].shape[1]))
    dQ = t.grad("dQ", np.einsum("qk,kd->qd", dR, t["K"]))
    dK = t.grad("dK", np.einsum("qk,qd->kd", dR, t["Q"]))
    dV = t.grad("dV", np.einsum("qk,qv->kv", t["weights"], dH))
    for name, g in (("dWQ", dQ), ("dWK", dK), ("dWV", dV)):
        t.grad(name, np.einsum("sm,sd->md", t["X"], g))
    return dict(t)


def backward(ids: list[int], target: int, params: dict[str, np.ndarray], *,
             embeddings: np.ndarray | None = None) -> tuple[float, dict[str, np.ndarray]]:
    """The loss and dW for W_Q, W_K, W_V, W_O."""
    t = backward_trace(ids, target, params, embeddings=embeddings)
    return t["loss"], {k: t["d" + k] for k in PARAM_NAMES}


def train_step(ids: list[int], target: int, params: dict[str, np.ndarray], lr: float, *,
               embeddings: np.ndarray | None = None) -> tuple[dict[str, np.ndarray], float]:
    """One SGD step on the four matrices."""
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real):
        raise TypeError(f"lr {lr!r} is not a number")
    if lr < 0:
        raise ValueError(f"lr = {lr} must not be negative")
    loss, grads = backward(ids, target, params, embeddings=embeddings)
    new = {k: np.copy(v) for k, v in params.items()}
    new.update({k: sgd_step(params[k], grads[k], lr) for k in PARAM_NAMES})
    return new, loss
