"""Chapter 3: Embeddings — one-hot vectors, table lookups, cosine similarity, and the embedding gradient.

Numbers from reference/chapter03_embeddings.toml (the book's chapter 3 and Example 1 step 1).
"""

import numpy as np
import pytest

from kata import close, expect, numerical_gradient, raises_clearly

CHAPTER = 3
RNG = np.random.default_rng(3)
TOY = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])  # the book's table, written out here


@pytest.mark.step("3.1")
def test_each_token_gets_a_single_one_in_its_own_column(ch, ws):
    expect(ws, ch.one_hot(ws.inputs["ids"], ws.inputs["vocab_size"]), kind="array")


@pytest.mark.step("3.2")
def test_a_b_embeds_to_the_identity(ch, ws):
    expect(ws, ch.embed(ws.inputs["ids"], ch.TOY_EMBEDDINGS), kind="array")


@pytest.mark.step("3.3")
def test_c_d_a_picks_rows_in_the_order_of_the_ids(ch, ws):
    expect(ws, ch.embed(ws.inputs["ids"], TOY), kind="array")


@pytest.mark.step("3.4")
def test_cat_and_dog_point_almost_the_same_way(ch, ws):
    expect(ws, ch.cosine_similarity(ws.input("a"), ws.input("b")), kind="float")


@pytest.mark.step("3.5")
def test_cat_and_mat_are_nearly_perpendicular(ch, ws):
    expect(ws, ch.cosine_similarity(ws.input("a"), ws.input("b")), kind="float")


@pytest.mark.step("3.6")
def test_a_token_used_twice_accumulates_both_gradients(ch, ws):
    expect(ws, ch.embedding_backward(ws.inputs["ids"], ws.input("d_X"), ws.inputs["vocab_size"]), kind="array")


# -- beyond the worksheet ----------------------------------------------------------------------------
def test_the_toy_table_is_the_books(ch):
    """TOY_EMBEDDINGS is A=[1,0], B=[0,1], C=[1,1], D=[0,0], and embed returns a copy"""
    X = ch.embed([0, 1, 2, 3], ch.TOY_EMBEDDINGS)
    close(ch.TOY_EMBEDDINGS, TOY, "TOY_EMBEDDINGS")
    X[0, 0] = 99.0
    close(ch.TOY_EMBEDDINGS, TOY, "TOY_EMBEDDINGS after writing into embed's result (embed must copy)")


@pytest.mark.parametrize(("vocab", "d", "seq"), [(7, 3, 5), (10, 5, 1), (6, 4, 9)])
def test_embedding_is_a_one_hot_matrix_product(ch, vocab, d, seq):
    """embed(ids, table) equals one_hot(ids) @ table, checked against NumPy on bigger vocabularies"""
    table = RNG.normal(size=(vocab, d))
    ids = [int(i) for i in RNG.integers(0, vocab, size=seq)]
    eye = np.eye(vocab)[ids]
    X = ch.embed(ids, table)
    H = ch.one_hot(ids, vocab)
    close(H, eye, f"one_hot({ids}, {vocab})")
    close(X, eye @ table, f"embed({ids}, a {vocab}×{d} table)")


@pytest.mark.parametrize(("vocab", "d", "seq"), [(7, 3, 6), (5, 2, 4)])
def test_embedding_backward_matches_numerical_gradients(ch, vocab, d, seq):
    """d_table from embedding_backward matches central differences of L = sum(G * embed(ids, table))"""
    table = RNG.normal(size=(vocab, d))
    ids = [int(i) for i in RNG.integers(0, vocab // 2 + 1, size=seq)]  # repeats are likely
    G = RNG.normal(size=(seq, d))
    numeric = numerical_gradient(lambda T: np.sum(G * T[ids]), table)  # the harness's, never the learner's
    overwrite = np.zeros_like(table)
    overwrite[ids] = G
    got = ch.embedding_backward(ids, G, vocab)
    close(got, numeric, f"embedding gradient for ids {ids}", rtol=1e-5, atol=1e-8,
          mistakes=[("an embedding gradient that overwrites instead of accumulating", overwrite)])


@pytest.mark.parametrize("d", [2, 5, 12])
def test_cosine_similarity_matches_the_formula(ch, d):
    """cosine similarity matches a·b/(|a||b|), is 1 for a vector with itself and −1 with its negative"""
    a, b = RNG.normal(size=d), RNG.normal(size=d)
    want = a @ b / np.sqrt(a @ a) / np.sqrt(b @ b)
    got = ch.cosine_similarity(a, b)
    close(got, want, f"cosine of two length-{d} vectors", mistakes=[("the plain dot product", a @ b)], kind="float")
    close(ch.cosine_similarity(a, 3 * a), 1.0, "cosine of a with 3a")
    close(ch.cosine_similarity(a, -a), -1.0, "cosine of a with −a")


@pytest.mark.parametrize("bad", [4, -1])
def test_embed_refuses_an_id_outside_the_table(ch, bad):
    """embed with id 4 or −1 for a 4-token table raises IndexError naming the id and the range 0..3 (NumPy would wrap −1)"""
    raises_clearly(lambda: ch.embed([0, bad], TOY), IndexError, str(bad), "0..3",
                   hint="check 0 <= id < V yourself (V = 4 here): NumPy's own IndexError does not give the range")


@pytest.mark.given
@pytest.mark.parametrize("bad", [4, -1])
def test_one_hot_refuses_an_id_outside_the_vocabulary(ch, bad):
    """one_hot with id 4 or −1 for 4 tokens raises IndexError naming the id and the range 0..3"""
    raises_clearly(lambda: ch.one_hot([bad], 4), IndexError, str(bad), "0..3",
                   hint="an id must satisfy 0 <= id < V (id == V is already outside)")


@pytest.mark.given
@pytest.mark.parametrize("bad", [4, -1])
def test_embedding_backward_refuses_an_id_outside_the_table(ch, bad):
    """embedding_backward with id 4 or −1 for a 4-token table raises IndexError naming the id and the range 0..3"""
    raises_clearly(lambda: ch.embedding_backward([bad], np.ones((1, 2)), 4), IndexError, str(bad), "0..3")


@pytest.mark.given
@pytest.mark.parametrize("ids", [[[0, 1]], [0, 1.5]])
def test_ids_that_are_not_a_list_of_whole_numbers_are_refused(ch, ids):
    """ids given as a 2-D list or with a fraction raise ValueError naming ids, in one_hot, embed and embedding_backward"""
    why = "check that ids is 1-D (ndim == 1) and holds whole numbers (an integer dtype), either failing is enough"
    raises_clearly(lambda: ch.one_hot(ids, 4), ValueError, names=("ids",), hint=why)
    raises_clearly(lambda: ch.embed(ids, TOY), ValueError, names=("ids",), hint=why)
    raises_clearly(lambda: ch.embedding_backward(ids, np.ones((2, 2)), 4), ValueError, names=("ids",), hint=why)


@pytest.mark.given
def test_a_table_that_is_not_2d_is_refused(ch):
    """embed with a 1-D table raises ValueError naming its shape"""
    raises_clearly(lambda: ch.embed([0], np.ones(4)), ValueError, "(4,)")


@pytest.mark.given
def test_the_cosine_of_a_zero_vector_is_refused(ch):
    """cosine_similarity with the zero vector (token D), first or second, raises ValueError saying it is zero"""
    raises_clearly(lambda: ch.cosine_similarity(np.array([1.0, 0.0]), np.array([0.0, 0.0])), ValueError, "zero")
    raises_clearly(lambda: ch.cosine_similarity(np.array([0.0, 0.0]), np.array([1.0, 0.0])), ValueError, "zero",
                   hint="check both lengths: |a| == 0 or |b| == 0")


@pytest.mark.given
def test_cosine_of_vectors_that_do_not_match_is_refused(ch):
    """cosine_similarity of (2,) and (3,), or of two (2, 2) matrices, raises ValueError naming both shapes"""
    why = "check that a and b are 1-D and of the same shape: a.ndim != 1 or a.shape != b.shape"
    raises_clearly(lambda: ch.cosine_similarity(np.ones(2), np.ones(3)), ValueError, "(2,)", "(3,)", hint=why)
    raises_clearly(lambda: ch.cosine_similarity(np.ones((2, 2)), np.ones((2, 2))), ValueError, "(2, 2)", hint=why)


@pytest.mark.given
def test_a_gradient_with_the_wrong_number_of_rows_is_refused(ch):
    """embedding_backward with 3 ids and 2 gradient rows raises ValueError"""
    raises_clearly(lambda: ch.embedding_backward([0, 1, 2], np.ones((2, 2)), 4), ValueError, "(2, 2)")
