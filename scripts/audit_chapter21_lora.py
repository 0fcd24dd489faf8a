"""Audit of chapter 21's worksheet (LoRA): every `exact` and mistake value of the key.

Written from the formulas on the page in exact fractions (``fractions.Fraction``) with plain loops over
lists of lists, independent of ``solutions/`` and of NumPy, so the answer key cannot inherit a bug of the
reference. Each classic mistake is a switch of the formulas written here. The audit also proves, exactly,
what the page claims on the worksheet's own numbers (``_proof``, the audit's own step, not compared): the
backward's gradients are the derivatives of the forward (central differences are exact for a function
linear in the moved entry), the merged weight computes the adapted layer, and at the start the adapter adds
nothing.

Run by ``python -m kata.authoring.audit 21``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

from fractions import Fraction as F

from kata.authoring.audit import four_decimals

# the worksheet's inputs (the page's tables)
X = [[F(1), F(2)], [F(0), F(1)]]  # two rows, d_in = 2
W = [[F(1), F(0)], [F(1), F(1)]]  # the frozen weight (2, 2), not symmetric
A = [[F(1)], [F(1, 2)]]  # a rank-1 adapter: A (2, 1), as if drawn
B = [[F(1), F(-1)]]  # B (1, 2), as if trained a while
ALPHA = F(2)
D_Y = [[F(1), F(0)], [F(-1), F(2)]]  # the gradient reaching y (21.4-21.6)
X3 = [[F(1), F(0), F(2)]]  # a row of three features (21.2)
W3 = [[F(1), F(0)], [F(0), F(1)], [F(1), F(-1)]]
A3 = [[F(1), F(1)], [F(0), F(1)], [F(1), F(0)]]  # rank 2
B3 = [[F(1), F(0)], [F(1), F(-1)]]
ALPHA3 = F(4)
B0 = [[F(0), F(0)]]  # the adapter at the start (21.7-21.10)
TARGET = [[F(2), F(2)], [F(2), F(0)]]
LR = F(1, 10)
SHAPES = [[4096, 4096], [4096, 1024]]  # a query and a (grouped) value projection (21.12)
RANK = 8

FORGOTTEN = "α / r forgotten: the adapter's path added unscaled"
NOT_BY_R = "α not divided by r: the scale is α / r"
INVERTED = "r / α instead of α / r"
FROZEN_ONLY = "the adapter left out: only the frozen x W"
ADAPTER_ONLY = "the frozen x W left out: only the adapter's path"
SCALED_BOTH = "α / r applied to the frozen x W too"
B_NOT_ZERO = "B not zero at the start"
GRAD_FORGOTTEN = "α / r forgotten in the gradient: the forward scaled the adapter's path, so its gradient is scaled too"
SCALED_TWICE = "α / r applied twice: once on the way into the adapter, then again to A's gradient"
NO_W_PATH = "the gradient to x skips the frozen W: W gets no gradient, but one still flows through it to x"
NO_ADAPTER_PATH = "the gradient to x skips the adapter: x also reaches y through x A B"
W_NOT_TRANSPOSED = "dx through W without its transpose (W is square here: the shapes cannot tell)"
NO_HALF = "the ½ of L = ½ Σ (y − t)² left out"
MEAN = "a mean over the entries instead of the sum"
UPHILL = "B + η dB: a step uphill, along the gradient"
UPDATED_B = "A's gradient taken with the B already updated: both gradients come from the same forward pass"
W_UPDATED = "a gradient sent to the frozen W: only A and B are trained"
TRANSPOSED = "the merge transposed: W + (α / r) (A B)ᵀ"
BA = "B A instead of A B: a 1 × 1 product broadcast over W"
W_COUNTED = "the frozen weights counted as trainable too"
FULL = "r · d_in · d_out: r full-size matrices instead of two thin ones"
B_LEFT_OUT = "only A counted: r · d_in, B's r · d_out left out"
NO_R = "r left out: d_in + d_out per weight"
TWICE_D_IN = "2 · r · d_in: B counted as if it were d_in wide"


# -- plain matrices -------------------------------------------------------------------------------------------
def matmul(P, Q):
    """(m, n) times (n, p), three plain loops."""
    return [[sum((P[i][k] * Q[k][j] for k in range(len(Q))), F(0)) for j in range(len(Q[0]))] for i in range(len(P))]


def t(P):
    """The transpose."""
    return [list(col) for col in zip(*P, strict=True)]


def add(P, Q, c=F(1)):
    """P + c·Q, entry by entry."""
    return [[p + c * q for p, q in zip(rp, rq, strict=True)] for rp, rq in zip(P, Q, strict=True)]


def scale(c, P):
    """c·P."""
    return [[c * p for p in row] for row in P]


def zeros_like(P):
    """A matrix of zeros shaped like P."""
    return [[F(0) for _ in row] for row in P]


# -- the chapter's formulas, with the classic mistakes as switches ------------------------------------------
def forward(x, w, a, b, alpha, mistake=None):
    """The adapted layer: y = x W + (α / r) x A B."""
    r = len(a[0])
    s = {FORGOTTEN: F(1), NOT_BY_R: alpha, INVERTED: r / alpha}.get(mistake, alpha / r)
    frozen, adapter = matmul(x, w), matmul(matmul(x, a), b)
    if mistake == FROZEN_ONLY:
        return frozen
    if mistake == ADAPTER_ONLY:
        return scale(s, adapter)
    if mistake == SCALED_BOTH:
        return scale(s, add(frozen, adapter))
    return add(frozen, adapter, s)


def backward(d_y, x, w, a, b, alpha, mistake=None):
    """{"x", "A", "B"}: dB = s (x A)ᵀ dY, dA = s xᵀ (dY Bᵀ), dx = dY Wᵀ + s (dY Bᵀ) Aᵀ."""
    s = F(1) if mistake == GRAD_FORGOTTEN else alpha / len(a[0])
    d_h = scale(s, matmul(d_y, t(b)))  # the gradient reaching h = x A
    d_a = matmul(t(x), scale(s, d_h) if mistake == SCALED_TWICE else d_h)
    through_w = matmul(d_y, w if mistake == W_NOT_TRANSPOSED else t(w))
    through_adapter = matmul(d_h, t(a))
    dx = {NO_W_PATH: through_adapter, NO_ADAPTER_PATH: through_w}.get(mistake, add(through_w, through_adapter))
    return {"x": dx, "A": d_a, "B": scale(s, matmul(t(matmul(x, a)), d_y))}


def train_step(x, target, w, a, b, alpha, lr, mistake=None):
    """(new W, new A, new B, loss) of one step of gradient descent on L = ½ Σ (y − t)²."""
    d_y = add(forward(x, w, a, b, alpha), target, F(-1))
    squares = sum((v * v for row in d_y for v in row), F(0))
    loss = {NO_HALF: squares, MEAN: squares / 2 / sum(len(row) for row in d_y)}.get(mistake, squares / 2)
    g = backward(d_y, x, w, a, b, alpha, GRAD_FORGOTTEN if mistake == GRAD_FORGOTTEN else None)
    new_b = add(b, g["B"], lr if mistake == UPHILL else -lr)
    if mistake == UPDATED_B:
        g = backward(d_y, x, w, a, new_b, alpha)
    new_a = add(a, g["A"], -lr)
    new_w = add(w, matmul(t(x), d_y), -lr) if mistake == W_UPDATED else w
    return new_w, new_a, new_b, loss


def merge(w, a, b, alpha, mistake=None):
    """W' = W + (α / r) A B."""
    s = F(1) if mistake == FORGOTTEN else alpha / len(a[0])
    if mistake == BA:
        one = matmul(b, a)[0][0]  # (1, 2) @ (2, 1): a 1 × 1 matrix, broadcast over W
        return [[v + s * one for v in row] for row in w]
    ab = matmul(a, b)
    return add(w, t(ab) if mistake == TRANSPOSED else ab, s)


def count(shapes, r, mistake=None):
    """Σ r (d_in + d_out) over the adapted weights."""
    per = {W_COUNTED: lambda i, o: i * o + r * (i + o), FULL: lambda i, o: r * i * o, B_LEFT_OUT: lambda i, o: r * i,
           NO_R: lambda i, o: i + o, TWICE_D_IN: lambda i, o: 2 * r * i}.get(mistake, lambda i, o: r * (i + o))
    return sum(per(i, o) for i, o in shapes)


def floats(value):
    """Fractions as float64 (lists stay lists)."""
    return [floats(v) for v in value] if isinstance(value, list) else float(value)


# -- the claims, proved on these numbers ----------------------------------------------------------------------
def proof() -> dict:
    """Gradients equal exact central differences; the merged weight computes y; at the start y = x W."""
    def loss(x, w, a, b):  # Σ dY ⊙ y: its gradient with respect to y is dY
        y = forward(x, w, a, b, ALPHA)
        return sum(g * v for rg, rv in zip(D_Y, y, strict=True) for g, v in zip(rg, rv, strict=True))

    def moved(P, i, j, d):  # P with entry (i, j) moved by d
        return [[v + (d if (p, q) == (i, j) else 0) for q, v in enumerate(row)] for p, row in enumerate(P)]

    g, eps = backward(D_Y, X, W, A, B, ALPHA), F(1, 1000)
    for name, where in (("x", 0), ("A", 2), ("B", 3)):
        for i, row in enumerate([X, W, A, B][where]):
            for j in range(len(row)):
                hi, lo = [X, W, A, B], [X, W, A, B]
                hi[where], lo[where] = moved(hi[where], i, j, eps), moved(lo[where], i, j, -eps)
                assert (loss(*hi) - loss(*lo)) / (2 * eps) == g[name][i][j], (name, i, j)
    assert matmul(X, merge(W, A, B, ALPHA)) == forward(X, W, A, B, ALPHA)
    assert matmul(X3, merge(W3, A3, B3, ALPHA3)) == forward(X3, W3, A3, B3, ALPHA3)
    assert forward(X, W, A, B0, ALPHA) == matmul(X, W)
    return {"exact": 0.0, "mistakes": {}}


# -- the worksheet ---------------------------------------------------------------------------------------------
def audit() -> dict[str, dict]:
    """{step id: {"exact": value, "mistakes": {name: value}, "inputs": {...}}}, the names as in the key."""
    layer = {"x": floats(X), "W": floats(W), "A": floats(A), "B": floats(B), "alpha": float(ALPHA)}
    steps: dict[str, dict] = {"_proof": proof()}
    steps["21.1"] = {"inputs": layer, "exact": floats(forward(X, W, A, B, ALPHA)), "mistakes": {
        m: floats(forward(X, W, A, B, ALPHA, m)) for m in (FORGOTTEN, INVERTED, FROZEN_ONLY, ADAPTER_ONLY,
                                                           SCALED_BOTH)}}
    steps["21.2"] = {"inputs": {"x": floats(X3), "W": floats(W3), "A": floats(A3), "B": floats(B3),
                                "alpha": float(ALPHA3)},
                     "exact": floats(forward(X3, W3, A3, B3, ALPHA3)), "mistakes": {
        m: floats(forward(X3, W3, A3, B3, ALPHA3, m)) for m in (FORGOTTEN, NOT_BY_R, INVERTED)}}
    steps["21.3"] = {"inputs": {"x": floats(X), "W": floats(W), "alpha": float(ALPHA), "d_in": 2, "d_out": 2,
                                "r": 1, "seed": 0},
                     "exact": floats(forward(X, W, A, B0, ALPHA)), "mistakes": {}}
    for sid, key, names in (("21.4", "B", (GRAD_FORGOTTEN,)), ("21.5", "A", (GRAD_FORGOTTEN, SCALED_TWICE)),
                            ("21.6", "x", (NO_W_PATH, NO_ADAPTER_PATH, GRAD_FORGOTTEN, W_NOT_TRANSPOSED))):
        steps[sid] = {"inputs": {"d_y": floats(D_Y), **layer}, "exact": floats(backward(D_Y, X, W, A, B, ALPHA)[key]),
                      "mistakes": {m: floats(backward(D_Y, X, W, A, B, ALPHA, m)[key]) for m in names}}
    start = {"x": floats(X), "target": floats(TARGET), "W": floats(W), "A": floats(A), "B": floats(B0),
             "alpha": float(ALPHA), "lr": float(LR)}
    for sid, which, names in (("21.7", 3, (NO_HALF, MEAN)), ("21.8", 2, (GRAD_FORGOTTEN, UPHILL)),
                              ("21.9", 1, (UPDATED_B,)), ("21.10", 0, (W_UPDATED,))):
        steps[sid] = {"inputs": start, "exact": floats(train_step(X, TARGET, W, A, B0, ALPHA, LR)[which]),
                      "mistakes": {m: floats(train_step(X, TARGET, W, A, B0, ALPHA, LR, m)[which]) for m in names}}
    steps["21.11"] = {"inputs": {"W": floats(W), "A": floats(A), "B": floats(B), "alpha": float(ALPHA)},
                      "exact": floats(merge(W, A, B, ALPHA)), "mistakes": {
        m: floats(merge(W, A, B, ALPHA, m)) for m in (TRANSPOSED, FORGOTTEN, BA)}}
    steps["21.12"] = {"inputs": {"shapes": SHAPES, "r": RANK}, "exact": count(SHAPES, RANK), "mistakes": {
        m: count(SHAPES, RANK, m) for m in (W_COUNTED, FULL, B_LEFT_OUT, NO_R, TWICE_D_IN)}}
    for sid, step in steps.items():  # every mistake differs from the answer and from the step's other mistakes
        values = [repr(step["exact"])] + [repr(v) for v in step["mistakes"].values()]
        assert len(set(values)) == len(values), sid
    return steps


def printed(value):
    """How the worksheet prints a value: a whole number as it is, else up to 4 decimals."""
    return four_decimals(value, zeros=False)
