"""Chapter 2: The Matrix Core — the book's worked examples from sections 2.3–2.9, and beyond.

Numbers come from reference/chapter02_matrices.toml. Note the row-vector convention (step 2.2).
"""

import numpy as np
import pytest
from pytest_check import check

from kata import close, expect, numerical_gradient, raises_clearly, returned

CHAPTER = 2
RNG = np.random.default_rng(2)


@pytest.mark.step("2.1")
def test_the_identity_passes_the_half_matrix_through(ch, ws):
    expect(ws, ch.matmul(ws.input("A"), ws.input("B")), kind="array")


@pytest.mark.step("2.2")
def test_a_row_vector_times_the_rotation_turns_to_minus_y(ch, ws):
    expect(ws, ch.matmul(ws.input("x"), ws.input("R")), kind="array")


@pytest.mark.step("2.3")
def test_a_vector_dotted_with_itself_gives_one(ch, ws):
    expect(ws, ch.dot(ws.input("a"), ws.input("b")), kind="float")


@pytest.mark.step("2.4")
def test_perpendicular_vectors_give_zero(ch, ws):
    expect(ws, ch.dot(ws.input("a"), ws.input("b")), kind="float")


@pytest.mark.step("2.5")
def test_opposite_vectors_give_minus_one(ch, ws):
    expect(ws, ch.dot(ws.input("a"), ws.input("b")), kind="float")


@pytest.mark.step("2.6")
def test_transposing_the_rotation_swaps_rows_and_columns(ch, ws):
    expect(ws, ch.transpose(ws.input("A")), kind="array")


@pytest.mark.step("2.7")
def test_the_gradient_for_a_is_dc_times_b_transposed(ch, ws):
    dA, _ = ch.matmul_backward(ws.input("A"), ws.input("B"), ws.input("dC"))
    expect(ws, dA, kind="array")


@pytest.mark.step("2.8")
def test_the_gradient_for_b_is_a_transposed_times_dc(ch, ws):
    _, dB = ch.matmul_backward(ws.input("A"), ws.input("B"), ws.input("dC"))
    expect(ws, dB, kind="array")


@pytest.mark.step("2.9")
def test_central_differences_find_the_gradient_of_a_sum(ch, ws):
    B = ws.input("B")
    expect(ws, ch.numerical_gradient(lambda A: float((A @ B).sum()), ws.input("A")), kind="array")


# -- beyond the worksheet ----------------------------------------------------------------------------
@pytest.mark.parametrize(("m", "n", "p"), [(3, 4, 2), (1, 5, 1), (4, 1, 3), (5, 5, 5)])
def test_matmul_matches_numpy_on_other_shapes(ch, m, n, p):
    """matmul matches NumPy's @ on non-square shapes"""
    A, B = RNG.normal(size=(m, n)), RNG.normal(size=(n, p))
    close(ch.matmul(A, B), A @ B, f"matmul of {A.shape} by {B.shape}", kind="array")


@pytest.mark.parametrize("shape", [(3, 5), (1, 4), (6, 2)])
def test_transpose_matches_numpy(ch, shape):
    """transpose matches A.T on non-square shapes"""
    A = RNG.normal(size=shape)
    close(ch.transpose(A), A.T, f"transpose of a {shape} matrix", kind="array")


@pytest.mark.parametrize("n", [1, 3, 10])
def test_dot_matches_a_sum_of_products(ch, n):
    """dot(a, b) equals sum(a * b) for vectors of other lengths"""
    a, b = RNG.normal(size=n), RNG.normal(size=n)
    close(ch.dot(a, b), float(np.sum(a * b)), f"dot of two length-{n} vectors", kind="float")


@pytest.mark.parametrize(("m", "n", "p"), [(3, 4, 2), (2, 5, 3)])
def test_matmul_backward_matches_numerical_gradients(ch, m, n, p):
    """dA and dB agree with central differences of L = sum(G * (A @ B)) on non-square shapes"""
    A, B, G = RNG.normal(size=(m, n)), RNG.normal(size=(n, p)), RNG.normal(size=(m, p))
    dA, dB = ch.matmul_backward(A, B, G)
    returned(dA, "array", "dA from matmul_backward")
    returned(dB, "array", "dB from matmul_backward")
    # kata.numerical_gradient: the harness's central differences, never the learner's
    close(dA, numerical_gradient(lambda X: np.sum(G * (X @ B)), A), "dA", rtol=1e-5, atol=1e-8)
    close(dB, numerical_gradient(lambda X: np.sum(G * (A @ X)), B), "dB", rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 2, 2)])
def test_numerical_gradient_of_a_known_function(ch, shape):
    """numerical_gradient of sum(sin(X)) is cos(X), and X is left untouched"""
    X = RNG.normal(size=shape)
    before = X.copy()
    g = returned(ch.numerical_gradient(lambda Y: float(np.sum(np.sin(Y))), X), "array", "numerical_gradient's result")
    close(g, np.cos(X), f"numerical gradient of sum(sin(X)) for X of shape {shape}", rtol=1e-6, atol=1e-8,
          mistakes=[("a one-sided difference without the 2 in 2ε", 2 * np.cos(X))])
    close(X, before, "X after numerical_gradient (it must not be modified)")


def test_transpose_returns_a_new_array_not_a_view_of_a(ch):
    """transpose returns a new array, as its docstring promises: not A.T, a view that shares A's memory"""
    A = RNG.normal(size=(2, 3))
    T = returned(ch.transpose(A), "array", "transpose's result")
    with check:
        assert not np.shares_memory(T, A), (
            "transpose returned a view of A, not a new array: writing into the result would change A\n"
            "  looks like: NumPy's transposed view returned as it is (a view); the docstring promises a new "
            "array: copy it, or fill a new one")


def test_matmul_and_transpose_leave_their_inputs_alone(ch):
    """matmul and transpose do not modify their inputs"""
    A, B = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 2))
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.matmul(A, B)
    ch.transpose(A)


def test_mismatched_shapes_name_both(ch):
    """matmul of (2, 3) by (2, 2), or of (2, 3) by (4, 5), raises ValueError naming both shapes, A's columns and B's rows"""
    raises_clearly(lambda: ch.matmul(np.ones((2, 3)), np.ones((2, 2))), ValueError, "(2, 3)", "(2, 2)")
    raises_clearly(lambda: ch.matmul(np.ones((2, 3)), np.ones((4, 5))), ValueError, "(2, 3)", "(4, 5)", "3 columns",
                   "4 rows", hint="A's columns are A.shape[1], B's rows are B.shape[0]")


@pytest.mark.given
def test_a_matrix_that_is_not_2d_is_named(ch):
    """a 1-D A, B or dC raises ValueError naming the matrix (A, B, dC) and its shape, in every function"""
    raises_clearly(lambda: ch.matmul(np.ones(3), np.ones((3, 2))), ValueError, "(3,)", names=("A",))
    raises_clearly(lambda: ch.matmul(np.ones((2, 3)), np.ones(3)), ValueError, "(3,)", names=("B",))
    raises_clearly(lambda: ch.transpose(np.ones(4)), ValueError, "(4,)", names=("A",))
    raises_clearly(lambda: ch.matmul_backward(np.ones(3), np.ones((3, 4)), np.ones((1, 4))), ValueError, "(3,)",
                   names=("A",))
    raises_clearly(lambda: ch.matmul_backward(np.ones((2, 3)), np.ones(3), np.ones((2, 1))), ValueError, "(3,)",
                   names=("B",))
    raises_clearly(lambda: ch.matmul_backward(np.ones((2, 3)), np.ones((3, 4)), np.ones(8)), ValueError, "(8,)",
                   names=("dC",))


@pytest.mark.parametrize("eps", [0.0, -1e-3])
def test_numerical_gradient_refuses_a_step_that_is_not_positive(ch, eps):
    """numerical_gradient with eps = 0 or eps < 0 raises ValueError naming eps and its value"""
    raises_clearly(lambda: ch.numerical_gradient(lambda A: float(A.sum()), np.ones(2), eps=eps), ValueError, "eps",
                   str(eps), hint="refuse eps unless eps > 0: with eps = 0 the difference divides by zero")


def test_numerical_gradient_of_an_integer_point(ch):
    """numerical_gradient at an integer X ([[1, 2], [3, 4]]) nudges in float64: the gradient of sum(X²) is 2X"""
    X = np.array([[1, 2], [3, 4]])
    got = returned(ch.numerical_gradient(lambda Y: float(np.sum(Y ** 2)), X), "array", "numerical_gradient's result")
    close(got, 2.0 * X, "numerical gradient of sum(X²) at the integer X [[1, 2], [3, 4]]", rtol=1e-6, atol=1e-8,
          mistakes=[("the nudges were rounded away: X kept its integer dtype (copy it as float64)", np.zeros((2, 2)))])


@pytest.mark.given
def test_dot_of_different_lengths_is_refused(ch):
    """dot of length 2 and length 3 raises ValueError naming both shapes"""
    raises_clearly(lambda: ch.dot(np.ones(2), np.ones(3)), ValueError, "(2,)", "(3,)")


@pytest.mark.given
def test_matmul_backward_refuses_a_wrong_gradient_shape(ch):
    """matmul_backward with dC of the wrong shape raises ValueError naming it"""
    raises_clearly(lambda: ch.matmul_backward(np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 2))),
                   ValueError, "(4, 2)")
