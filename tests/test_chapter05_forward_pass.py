"""Chapter 5: The Forward Pass — the book's Example 1 worksheet, step by step, and beyond.

Input "A B" through the toy model (W_Q = W_K = W_V = 0.1·I, the explicit 2×4 W_O, causal attention, the
context at the last position). Each worksheet step is one test below (or one case of a parametrized one),
named as the claim it checks; the numbers come from reference/chapter05_forward_pass.toml. The checks beyond
the worksheet run seeded random models of other sizes against the reference's results stored in
tests/snapshots/chapter05.npz.
"""

import numpy as np
import pytest

from kata import close, expect, raises_clearly, snapshot, step_case

CHAPTER = 5
RNG = np.random.default_rng(5)
SNAP = snapshot(CHAPTER)  # tests/snapshots/chapter05.npz: random models, the reference's intermediates, mistakes
FIRST = "the context taken from the first position instead of the last"
UNMASKED = "the causal mask was ignored: positions looked ahead"
TOY_E = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])  # A, B, C, D, written out here
TOY_WO = np.array([[0.1, 0.0, 0.0, 0.0], [0.0, 0.0, 0.1, 0.0]])


def stored_model(k):
    """ids (a list), embedding table and parameters of the stored case ``k``."""
    return SNAP[f"{k}/ids"].tolist(), SNAP[f"{k}/E"], SNAP.tree(f"{k}/params")


def random_model(seq, d_model, d_k, d_v, vocab, rng=RNG):
    """A seeded random model: embedding table, the four matrices, and a sequence of ids."""
    E = rng.normal(size=(vocab, d_model))
    params = {"WQ": rng.normal(size=(d_model, d_k)), "WK": rng.normal(size=(d_model, d_k)),
              "WV": rng.normal(size=(d_model, d_v)), "WO": rng.normal(size=(d_v, vocab))}
    ids = [int(i) for i in rng.integers(0, vocab, size=seq)]
    return ids, E, params


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("5.1")
def test_w_o_is_an_explicit_2x4_matrix_feeding_a_and_c(ch, ws):
    params = ch.toy_params()
    expect(ws, params["WO"])
    for name in ("WQ", "WK", "WV"):
        close(params[name], 0.1 * np.eye(2), f"toy_params()[{name!r}] (the worksheet's 0.1·I)")


@pytest.mark.parametrize("key", [
    step_case("5.2", "a_b_embeds_to_the_identity", "X"),
    step_case("5.6", "the_context_is_b_row_of_the_attention_output", "context"),
    step_case("5.7", "only_a_and_c_get_a_nonzero_logit", "logits"),
])
def test_forward_gives_each_worksheet_row(ch, ws, key):
    f = ch.forward(ws.inputs["ids"], ch.toy_params())
    expect(ws, f[key])


@pytest.mark.step("5.3")
def test_q_k_and_v_are_all_a_tenth_of_the_identity(ch, ws):
    Q, K, V = ch.project_qkv(ws.input("X"), ch.toy_params())
    expect(ws, np.stack([Q, K, V]))


@pytest.mark.step("5.4")
def test_b_scores_zero_against_a_and_0_00707_against_itself(ch, ws):
    f = ch.forward(ws.inputs["ids"], ch.toy_params())
    expect(ws, np.stack([np.asarray(f["raw_scores"])[1], np.asarray(f["scores"])[1]]))


@pytest.mark.step("5.5")
def test_b_attends_almost_equally_with_a_sliver_more_to_itself(ch, ws):
    f = ch.forward(ws.inputs["ids"], ch.toy_params())
    expect(ws, np.asarray(f["weights"])[1])


@pytest.mark.step("5.8")
def test_before_training_every_token_is_about_one_in_four(ch, ws):
    expect(ws, ch.next_token_probs(ws.inputs["ids"], ch.toy_params()))


# -- beyond the worksheet: other shapes, other values, expected values from the stored snapshot ----------
def test_toy_params_are_fresh_on_every_call(ch):
    """toy_params() has exactly WQ, WK, WV, WO and returns new arrays each call"""
    first = ch.toy_params()
    first["WO"][0, 0] = 99.0
    first["WQ"][1, 1] = 99.0
    second = ch.toy_params()
    assert sorted(second) == ["WK", "WO", "WQ", "WV"], f"toy_params() keys are {sorted(second)}"
    close(second["WO"], TOY_WO, "toy_params()['WO'] after changing an earlier model's W_O (return new arrays)")
    close(second["WQ"], 0.1 * np.eye(2), "toy_params()['WQ'] after changing an earlier model's W_Q")


@pytest.mark.parametrize(("seq", "d_model", "d_k", "d_v"), [(3, 3, 4, 5), (5, 4, 2, 3), (6, 5, 3, 1)])
def test_projections_match_x_times_each_matrix(ch, seq, d_model, d_k, d_v):
    """project_qkv gives X W_Q, X W_K, X W_V on other shapes (d_k ≠ d_v)"""
    X = RNG.normal(size=(seq, d_model))
    _, _, params = random_model(seq, d_model, d_k, d_v, 4)
    Q, K, V = ch.project_qkv(X, params)
    close(Q, X @ params["WQ"], f"Q for X {X.shape}", mistakes=[("K's matrix used for Q", X @ params["WK"])])
    close(K, X @ params["WK"], f"K for X {X.shape}", mistakes=[("Q's matrix used for K", X @ params["WQ"])])
    close(V, X @ params["WV"], f"V for X {X.shape}")


@pytest.mark.parametrize("case", range(SNAP.count("forward")))
def test_forward_matches_a_forward_pass_written_out_here(ch, case):
    """every intermediate of forward matches the reference's on random models: seq 3–6, widths ≠ 2, vocab > 4"""
    k = f"forward/{case}"
    ids, E, params = stored_model(k)
    want, mistake = SNAP.tree(f"{k}/want"), SNAP.tree(f"{k}/mistakes")
    f = ch.forward(ids, params, embeddings=E)
    shapes = (f"seq {len(ids)}, d_model {E.shape[1]}, d_k {params['WK'].shape[1]}, d_v {params['WV'].shape[1]}, "
              f"vocab {E.shape[0]}")
    for key in ("X", "Q", "K", "V", "raw_scores", "scores"):
        close(f[key], want[key], f"forward(...)[{key!r}], {shapes}", kind="array")
    close(f["weights"], want["weights"], f"forward(...)['weights'], {shapes}", kind="array",
          mistakes=[(UNMASKED, mistake["unmasked"]["weights"]), ("no 1/√d_k scaling", mistake["unscaled"]["weights"])])
    close(f["output"], want["output"], f"forward(...)['output'], {shapes}", kind="array",
          mistakes=[(UNMASKED, mistake["unmasked"]["output"])])
    close(f["context"], want["context"], f"forward(...)['context'], {shapes}", kind="array",
          mistakes=[(FIRST, mistake["first"]["context"]), ("no 1/√d_k scaling", mistake["unscaled"]["context"])])
    close(f["logits"], want["logits"], f"forward(...)['logits'], {shapes}", kind="array",
          mistakes=[(FIRST, mistake["first"]["logits"])])
    close(f["probs"], want["probs"], f"forward(...)['probs'], {shapes}", kind="array",
          mistakes=[(FIRST, mistake["first"]["probs"])])


@pytest.mark.parametrize("case", range(SNAP.count("probs")))
def test_next_token_probs_match_the_oracle_on_larger_vocabularies(ch, case):
    """next_token_probs is softmax(context @ W_O) at the last position, vocab > 4"""
    k = f"probs/{case}"
    ids, E, params = stored_model(k)
    got = ch.next_token_probs(ids, params, embeddings=E)
    close(got, SNAP[f"{k}/probs"], f"next_token_probs, seq {len(ids)}, vocab {E.shape[0]}", kind="array",
          mistakes=[(FIRST, SNAP[f"{k}/first"])])
    close(np.sum(got), 1.0, "the sum of the probabilities")


@pytest.mark.parametrize("case", range(SNAP.count("toy")))
def test_the_default_embeddings_are_the_toy_table(ch, case):
    """forward without embeddings= uses A=[1,0], B=[0,1], C=[1,1], D=[0,0] (ids [2, 3], [0, 1, 2], [3, 3, 1, 0], [2])"""
    k = f"toy/{case}"
    ids = SNAP[f"{k}/ids"].tolist()
    f = ch.forward(ids, ch.toy_params())
    close(f["X"], TOY_E[ids], f"forward({ids}, toy_params())['X']")
    close(f["probs"], SNAP[f"{k}/probs"], f"forward({ids}, toy_params())['probs']",
          mistakes=[(FIRST, SNAP[f"{k}/first"])])


def test_a_later_token_never_changes_an_earlier_row(ch):
    """causal: the attention output of the first k positions does not depend on what comes after them"""
    ids, E, params = stored_model("prefix")
    full = ch.forward(ids, params, embeddings=E)
    prefix = ch.forward(ids[:4], params, embeddings=E)
    close(np.asarray(full["output"])[:4], prefix["output"], "rows 0–3 of the output for the whole sequence vs the prefix",
          mistakes=[(UNMASKED, SNAP["prefix/unmasked_rows"])])


def test_forward_does_not_modify_its_inputs(ch):
    """forward leaves the ids, the parameters and the embedding table untouched"""
    ids, E, params = random_model(4, 3, 2, 3, 6)
    ids_copy = list(ids)
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.forward(ids, params, embeddings=E)
    assert ids == ids_copy, f"forward changed the ids: {ids_copy} became {ids}"


# -- bad input gets a clear error ------------------------------------------------------------------
@pytest.mark.parametrize("bad", [4, 7, -1])
def test_a_token_outside_the_embedding_table_is_refused(ch, bad):
    """a token id outside 0..3 raises IndexError naming the id (−1 must not read the last row)"""
    raises_clearly(lambda: ch.forward([0, bad], ch.toy_params()), IndexError, str(bad))


def test_a_token_outside_a_larger_table_is_refused(ch):
    """with a 6-token table, id 6 raises IndexError naming it"""
    _, E, params = random_model(3, 3, 2, 2, 6)
    raises_clearly(lambda: ch.forward([1, 6], params, embeddings=E), IndexError, "6")


@pytest.mark.given
def test_an_empty_sequence_is_refused(ch):
    """forward([]) raises ValueError saying it needs at least one token: there is no last position to predict from"""
    raises_clearly(lambda: ch.forward([], ch.toy_params()), ValueError, "at least one token",
                   hint="check len(ids) (the rows of X), not the width of X")


def _toy_with(name, value):
    params = {"WQ": 0.1 * np.eye(2), "WK": 0.1 * np.eye(2), "WV": 0.1 * np.eye(2), "WO": TOY_WO.copy()}
    params[name] = value
    return params


@pytest.mark.given
@pytest.mark.parametrize(("name", "shape"), [("WQ", (3, 2)), ("WK", (3, 2)), ("WV", (1, 2))])
def test_a_projection_with_the_wrong_number_of_rows_is_refused(ch, name, shape):
    """a W_Q, W_K or W_V whose rows differ from d_model raises ValueError naming the matrix and its shape"""
    params = _toy_with(name, np.ones(shape))
    raises_clearly(lambda: ch.forward([0, 1], params), ValueError, str(shape), names=(name,))


@pytest.mark.given
@pytest.mark.parametrize("name", ["WQ", "WK", "WV", "WO"])
def test_a_matrix_that_is_not_2d_is_named(ch, name):
    """a 1-D W_Q, W_K, W_V or W_O raises ValueError naming the matrix and its shape"""
    params = _toy_with(name, np.ones(2))
    raises_clearly(lambda: ch.forward([0, 1], params), ValueError, "(2,)", names=(name,))


@pytest.mark.given
def test_queries_and_keys_of_different_widths_are_refused(ch):
    """W_K (2, 3) against W_Q (2, 2) raises ValueError naming both"""
    params = _toy_with("WK", np.ones((2, 3)))
    raises_clearly(lambda: ch.project_qkv(np.eye(2), params), ValueError, "WQ", "WK", "(2, 3)")


@pytest.mark.given
@pytest.mark.parametrize("shape", [(2, 3), (2, 5), (3, 4), (4, 2)])
def test_an_output_matrix_that_does_not_fit_is_refused(ch, shape):
    """W_O must be (d_v, vocab) = (2, 4); anything else raises ValueError naming W_O and its shape"""
    params = _toy_with("WO", np.ones(shape))
    raises_clearly(lambda: ch.forward([0, 1], params), ValueError, "WO", str(shape), "(2, 4)",
                   hint="the shape W_O should have is (d_v, vocab): vocab is the table's number of rows")


@pytest.mark.given
def test_a_missing_matrix_is_named(ch):
    """params without 'WV' raises ValueError naming WV"""
    params = _toy_with("WQ", 0.1 * np.eye(2))
    del params["WV"]
    raises_clearly(lambda: ch.forward([0, 1], params), ValueError, "WV")


@pytest.mark.given
def test_project_qkv_refuses_a_vector(ch):
    """X must be 2-D (seq, d_model); a 1-D vector raises ValueError naming its shape"""
    raises_clearly(lambda: ch.project_qkv(np.ones(2), ch.toy_params()), ValueError, "(2,)")
