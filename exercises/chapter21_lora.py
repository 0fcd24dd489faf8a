"""Chapter 21: LoRA — fine-tune a frozen weight through a low-rank adapter.

Fine-tuning every weight of a large model needs a gradient, and an optimizer's state, for every weight.
LoRA (low-rank adaptation) freezes the trained weight W (d_in, d_out) and learns a change of low rank
beside it: two thin matrices A (d_in, r) and B (r, d_out), r much smaller than d_in and d_out, whose
product A B has W's shape. The adapted layer computes

    y = x W + (α / r) · x A B,

with the scale α / r fixed (α is chosen once; dividing by r keeps the update's size when r changes). A is
drawn small and random and B starts at zero, so at step 0 the adapter adds nothing and the layer is the
trained one; training moves A and B only, and W never receives a gradient, though the gradient to the
input still flows through it. After training the adapter is **merged**: W' = W + (α / r) A B is one
ordinary weight that computes the same y, at no extra cost. The adapter has r·(d_in + d_out) parameters
instead of d_in·d_out.

Worksheet: this course's own. A 2 × 2 weight W with a rank-1 adapter (α = 2, so α / r = 2) on two rows x;
a rank-2 adapter on a row of three features; one step of gradient descent from the start; the adapter's
parameters on two of a real model's weights.

Types, as every docstring below uses them: an array is a NumPy array of real numbers (a Python list where an
array is documented fails its checks, the message naming list); a number (α, η) is a Python or NumPy int or
float or a 0-d array of one, never a bool or a string; a whole number is a Python or NumPy int (not a bool,
not a float).
"""

import numpy as np

from .chapter06_training_step import sgd_step  # noqa: F401 - yours to use


def lora_forward(x: np.ndarray, W: np.ndarray, A: np.ndarray, B: np.ndarray, alpha: float) -> np.ndarray:
    r"""The adapted layer: the frozen weight's output plus the adapter's, scaled by α / r.

    $$y = x W + \frac{\alpha}{r}\, (x A)\, B$$

    r is the adapter's rank, the number of columns of A (and of rows of B). x A is only (seq, r): the
    adapter never builds the (d_in, d_out) product A B.

    Args:
        x: the input rows, shape (seq, d_in).
        W: the frozen weight, shape (d_in, d_out).
        A: the adapter's first factor, shape (d_in, r).
        B: the adapter's second factor, shape (r, d_out).
        alpha: α, a number > 0.

    Returns:
        y, a new float64 array of shape (seq, d_out). Nothing given is modified.

    Raises:
        ValueError: if an array is not a matrix of real numbers, the shapes do not fit y = x W + x A B, or
            alpha is not a number > 0: the check given above the ``raise``, which hands you x, W, A and B as
            float64 arrays and alpha as a float.

    See docs: chapter 21, steps 21.1 and 21.2.
    """
    x, W, A, B = _check_layer(x, W, A, B)
    alpha = _check_alpha(alpha)
    raise NotImplementedError("21.1 lora_forward: the frozen layer's output plus the adapter's x A B scaled by α over the rank r (A's columns) (2 lines)")


def lora_init(d_in: int, d_out: int, r: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    r"""A new adapter of rank r for a (d_in, d_out) weight: A small and random, B zero.

    $$A_{ij} \sim \mathcal{N}\!\left(0, \tfrac{1}{d_{in}}\right),$$

    $$B = 0$$

    N(0, s) means normal with mean 0 and variance s, drawn from NumPy's ``default_rng`` generator made from
    ``seed`` (the same seed gives the same A; which draws fill which entry is yours to choose). With B = 0,
    A B = 0: at step 0 the adapted layer is exactly the frozen one. A is not zero: B's first gradient is
    (α / r) (x A)ᵀ dY, and with A = 0 as well neither factor would ever receive a gradient.

    Args:
        d_in: the frozen weight's rows, a whole number ≥ 1.
        d_out: its columns, a whole number ≥ 1.
        r: the adapter's rank, a whole number with 1 ≤ r ≤ min(d_in, d_out).
        seed: the random generator's seed, a whole number; the same seed gives the same adapter.

    Returns:
        (A, B): new float64 arrays, A of shape (d_in, r), B of shape (r, d_out).

    Raises:
        ValueError: if r > min(d_in, d_out) (the message names ``r``): yours to write, a product A B of
            shape (d_in, d_out) has rank at most min(d_in, d_out), so a larger r only adds parameters. A size
            or seed that is not a whole number, or a size below 1, is refused by the check given above the
            ``raise``.

    See docs: chapter 21, step 21.3.
    """
    _check_sizes(d_in, d_out, r, seed)
    raise NotImplementedError("21.3 lora_init: A small and random with variance 1 over d_in from a generator made from the seed and B all zeros, refusing a rank above the smaller of d_in and d_out by naming r (5 lines)")


def lora_backward(d_y: np.ndarray, x: np.ndarray, W: np.ndarray, A: np.ndarray, B: np.ndarray,
                  alpha: float) -> dict:
    r"""The gradients of ``lora_forward``: to the input and to the adapter's A and B, none to the frozen W.

    The forward pass it reverses (``lora_forward``):

    $$y = x W + \frac{\alpha}{r}\, (x A)\, B$$

    Given dL/dy, it returns the gradients with respect to x, A and B. W is frozen: it gets no gradient (its
    gradient would cost as much as the full layer's backward), but x reaches y through W as well as through
    the adapter.

    Args:
        d_y: dL/dy, shape (seq, d_out).
        x: the forward's input rows, shape (seq, d_in).
        W: the frozen weight, shape (d_in, d_out).
        A: the adapter's first factor, shape (d_in, r).
        B: the adapter's second factor, shape (r, d_out).
        alpha: α, a number > 0.

    Returns:
        A dict of new float64 arrays with exactly the keys ``"x"`` (seq, d_in), ``"A"`` (d_in, r) and ``"B"``
        (r, d_out), each shaped like what it is the gradient of; no ``"W"``. Nothing given is modified.

    Raises:
        ValueError: if x, W, A and B do not fit as in ``lora_forward``, d_y is not (seq, d_out), or alpha is
            not a number > 0: the check given above the ``raise``, which hands you d_y, x, W, A and B as
            float64 arrays and alpha as a float.

    See docs: chapter 21, steps 21.4, 21.5 and 21.6.
    """
    x, W, A, B = _check_layer(x, W, A, B)
    d_y = _check_d_y(d_y, x, W)
    alpha = _check_alpha(alpha)
    raise NotImplementedError("21.4 lora_backward: the gradients of A and B and x by chapter 7's product rule along the adapter's path scaled by α over the rank, x also reaching y through the frozen W (which gets none) (4 lines)")


def lora_train_step(x: np.ndarray, target: np.ndarray, params: dict, alpha: float,
                    lr: float) -> tuple[dict, float]:
    r"""One step of gradient descent on the adapter alone, for a squared error: W stays as it was.

    $$y = x W + \tfrac{\alpha}{r} x A B,$$

    $$L = \tfrac12 \sum_{i,j} (y_{ij} - t_{ij})^2,$$

    $$\frac{\partial L}{\partial y} = y - t$$
    $$A_{\text{new}} = A - \eta\, \frac{\partial L}{\partial A},$$

    $$B_{\text{new}} = B - \eta\, \frac{\partial L}{\partial B},$$

    $$W_{\text{new}} = W$$

    Both gradients come from the same forward pass, before either factor moves.

    Args:
        x: the input rows, shape (seq, d_in).
        target: t, the outputs the layer should give, shape (seq, d_out).
        params: a dict with exactly the keys ``"W"`` (d_in, d_out), ``"A"`` (d_in, r) and ``"B"`` (r, d_out).
        alpha: α, a number > 0.
        lr: the learning rate η, a number ≥ 0.

    Returns:
        (new_params, loss): a new dict with the same three keys, ``"W"`` equal to the given W (a copy) and
        ``"A"``, ``"B"`` the updated factors; ``loss`` is L BEFORE the update, a Python float. Nothing given is
        modified.

    Raises:
        ValueError: if params does not hold exactly W, A and B, the arrays do not fit, target is not
            (seq, d_out), alpha is not a number > 0 or lr not a number ≥ 0: the check given above the
            ``raise``, which hands you x, target, W, A and B as float64 arrays.

    See docs: chapter 21, steps 21.7, 21.8, 21.9 and 21.10.
    """
    x, target, W, A, B = _check_step(x, target, params, alpha, lr)  # noqa: F841 - yours to use
    raise NotImplementedError("21.7 lora_train_step: the loss (half the sum of squares of your forward minus the target) and the adapter after one sgd_step on A and B with W copied as it is (5 lines)")


def lora_merge(W: np.ndarray, A: np.ndarray, B: np.ndarray, alpha: float) -> np.ndarray:
    r"""The adapter folded into the weight: one ordinary (d_in, d_out) matrix that computes the same layer.

    $$W' = W + \frac{\alpha}{r} A B,$$

    $$x W' = x W + \frac{\alpha}{r}\, x A B$$

    Args:
        W: the frozen weight, shape (d_in, d_out).
        A: shape (d_in, r).
        B: shape (r, d_out).
        alpha: α, a number > 0.

    Returns:
        W', a new float64 array of W's shape (d_in, d_out). Nothing given is modified.

    Raises:
        ValueError: if an array is not a matrix of real numbers, A is not (d_in, r) or B not (r, d_out), or
            alpha is not a number > 0: the check given above the ``raise``, which hands you W, A and B as
            float64 arrays and alpha as a float.

    See docs: chapter 21, step 21.11.
    """
    W, A, B = _check_merge(W, A, B)
    alpha = _check_alpha(alpha)
    raise NotImplementedError("21.11 lora_merge: the page's merged weight, one matrix of W's shape giving your adapted layer's y with no adapter left (1 line)")


def lora_parameter_count(shapes, r: int) -> int:
    r"""How many numbers training learns when every listed weight gets a rank-r adapter.

    $$\sum_{(d_{in},\, d_{out})} r\,(d_{in} + d_{out})$$

    A weight of shape (d_in, d_out) gets A (d_in, r) and B (r, d_out); the weights themselves are frozen and
    not counted.

    Args:
        shapes: the adapted weights' shapes, a list (or tuple) of (d_in, d_out) pairs of whole numbers ≥ 1,
            at least one.
        r: the rank, a whole number ≥ 1.

    Returns:
        The number of trainable parameters, a Python int.

    Raises:
        ValueError: if shapes is not a non-empty list of pairs of whole numbers ≥ 1, or r is not a whole
            number ≥ 1: the check given above the ``raise``.

    See docs: chapter 21, step 21.12.
    """
    _check_shapes(shapes, r)
    raise NotImplementedError("21.12 lora_parameter_count: the numbers the adapters of all the listed weights hold (the frozen weights do not count) (1 line)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_matrix(a, name: str) -> np.ndarray:
    """``a`` as a float64 array, after checking it is a NumPy matrix of finite real numbers, not empty."""
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{name} must be a NumPy array, got {type(a).__name__}")
    if a.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold real numbers, got dtype {a.dtype}")
    if a.ndim != 2 or 0 in a.shape:
        raise ValueError(f"{name} must be a non-empty matrix (2-D), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must hold finite numbers")
    return a.astype(np.float64)


def _check_layer(x, W, A, B) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x, W, A, B) as float64 arrays, after checking they fit y = x W + x A B (the message names the shapes)."""
    x = _check_matrix(x, "x")
    W, A, B = _check_merge(W, A, B)
    if x.shape[1] != W.shape[0]:
        raise ValueError(f"x {x.shape} must have one column per row of W {W.shape}")
    return x, W, A, B


def _check_merge(W, A, B) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W, A, B) as float64 arrays, after checking A is (d_in, r) and B (r, d_out) for W (d_in, d_out)."""
    W, A, B = _check_matrix(W, "W"), _check_matrix(A, "A"), _check_matrix(B, "B")
    if A.shape[0] != W.shape[0] or B.shape != (A.shape[1], W.shape[1]):
        raise ValueError(f"A {A.shape} and B {B.shape} do not fit W {W.shape}: A must be (d_in, r) and B "
                         "(r, d_out)")
    return W, A, B


def _check_number(value, name: str) -> float:
    """A real number (a Python or NumPy int or float, or a 0-d array of one; not a bool, not a string) as float."""
    value = value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def _check_alpha(alpha) -> float:
    """The number alpha as a Python float, after checking it is finite and > 0."""
    a = _check_number(alpha, "alpha")
    if not (np.isfinite(a) and a > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
    return a


def _check_d_y(d_y, x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """d_y as a float64 array, after checking it has the output's shape (seq, d_out)."""
    d_y = _check_matrix(d_y, "d_y")
    if d_y.shape != (x.shape[0], W.shape[1]):
        raise ValueError(f"d_y {d_y.shape} must have the output's shape (seq, d_out) = {(x.shape[0], W.shape[1])}")
    return d_y


def _check_step(x, target, params, alpha, lr) -> tuple:
    """(x, target, W, A, B) as float64 arrays, after checking params, the shapes, alpha and lr."""
    if not isinstance(params, dict) or set(params) != {"W", "A", "B"}:
        keys = sorted(params) if isinstance(params, dict) else type(params).__name__
        raise ValueError(f"params must be a dict with exactly the keys W, A and B, got {keys}")
    x, W, A, B = _check_layer(x, params["W"], params["A"], params["B"])
    target = _check_matrix(target, "target")
    if target.shape != (x.shape[0], W.shape[1]):
        raise ValueError(f"target {target.shape} must have the output's shape (seq, d_out) = "
                         f"{(x.shape[0], W.shape[1])}")
    _check_alpha(alpha)
    eta = _check_number(lr, "lr")
    if not (np.isfinite(eta) and eta >= 0):
        raise ValueError(f"lr must be a finite number >= 0, got {lr!r}")
    return x, target, W, A, B


def _check_whole(value, name: str, least: int) -> None:
    """Refuse what is not a whole number (a bool or a float such as 2.0 is not one) of at least ``least``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")


def _check_sizes(d_in, d_out, r, seed) -> None:
    """Refuse sizes that are not whole numbers >= 1 and a seed that is not a whole number >= 0."""
    for name, value in (("d_in", d_in), ("d_out", d_out), ("r", r)):
        _check_whole(value, name, 1)
    _check_whole(seed, "seed", 0)


def _check_shapes(shapes, r) -> None:
    """Refuse shapes that are not a non-empty list or tuple of (d_in, d_out) pairs of whole numbers >= 1."""
    if not isinstance(shapes, (list, tuple)) or len(shapes) == 0:
        raise ValueError(f"shapes must be a non-empty list of (d_in, d_out) pairs, got {shapes!r}")
    for i, pair in enumerate(shapes):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"shapes[{i}] must be a (d_in, d_out) pair, got {pair!r}")
        _check_whole(pair[0], f"shapes[{i}] d_in", 1)
        _check_whole(pair[1], f"shapes[{i}] d_out", 1)
    _check_whole(r, "r", 1)
