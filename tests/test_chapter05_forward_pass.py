"""Chapter 5: The Forward Pass — the book's Example 1 worksheet, step by step, and beyond.

Input "A B" through the toy model (W_Q = W_K = W_V = 0.1·I, the explicit 2×4 W_O, causal attention, the
context at the last position). Each worksheet step is one test below, named as the claim it checks; the
numbers come from reference/chapter05_forward_pass.toml. The checks beyond the worksheet run seeded random
models of other sizes against a forward pass written out in this file.
"""

import numpy as np
import pytest

from kata import close, expect, raises_clearly

CHAPTER = 5
RNG = np.random.default_rng(5)
TOY_E = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])  # A, B, C, D, written out here
TOY_WO = np.array([[0.1, 0.0, 0.0, 0.0], [0.0, 0.0, 0.1, 0.0]])


def softmax_oracle(x, axis=-1):
    """Softmax written out in the test, stable by subtracting the max."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def oracle(ids, E, WQ, WK, WV, WO, *, first=False, mask=True, scale=True):
    """The forward pass written out independently; the keyword switches reproduce classic mistakes."""
    X = E[list(ids)]
    Q, K, V = X @ WQ, X @ WK, X @ WV
    n = len(ids)
    raw = np.array([[Q[i] @ K[j] for j in range(n)] for i in range(n)])  # a loop over query-key pairs
    S = raw / np.sqrt(K.shape[1]) if scale else raw
    masked = np.where(np.tril(np.ones((n, n), dtype=bool)), S, -np.inf) if mask else S
    W = softmax_oracle(masked)
    out = W @ V
    c = out[0] if first else out[-1]
    z = c @ WO
    return {"X": X, "Q": Q, "K": K, "V": V, "raw_scores": raw, "scores": raw / np.sqrt(K.shape[1]),
            "weights": W, "output": out, "context": c, "logits": z, "probs": softmax_oracle(z)}


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


@pytest.mark.step("5.2")
def test_a_b_embeds_to_the_identity(ch, ws):
    f = ch.forward(ws.inputs["ids"], ch.toy_params())
    expect(ws, f["X"])


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


@pytest.mark.step("5.6")
def test_the_context_is_b_row_of_the_attention_output(ch, ws):
    f = ch.forward(ws.inputs["ids"], ch.toy_params())
    expect(ws, f["context"])


@pytest.mark.step("5.7")
def test_only_a_and_c_get_a_nonzero_logit(ch, ws):
    f = ch.forward(ws.inputs["ids"], ch.toy_params())
    expect(ws, f["logits"])


@pytest.mark.step("5.8")
def test_before_training_every_token_is_about_one_in_four(ch, ws):
    expect(ws, ch.next_token_probs(ws.inputs["ids"], ch.toy_params()))


# -- beyond the worksheet: other shapes, other values, oracles written here --------------------------
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


@pytest.mark.parametrize(("seq", "d_model", "d_k", "d_v", "vocab"),
                         [(3, 3, 3, 3, 5), (4, 5, 2, 3, 7), (5, 2, 4, 6, 9), (6, 4, 3, 2, 12)])
def test_forward_matches_a_forward_pass_written_out_here(ch, seq, d_model, d_k, d_v, vocab):
    """every intermediate of forward matches the oracle on random models: seq 3–6, widths ≠ 2, vocab > 4"""
    ids, E, params = random_model(seq, d_model, d_k, d_v, vocab)
    f = ch.forward(ids, params, embeddings=E)
    want = oracle(ids, E, **params)
    first = oracle(ids, E, **params, first=True)
    unmasked = oracle(ids, E, **params, mask=False)
    unscaled = oracle(ids, E, **params, scale=False)
    shapes = f"seq {seq}, d_model {d_model}, d_k {d_k}, d_v {d_v}, vocab {vocab}"
    for key in ("X", "Q", "K", "V", "raw_scores", "scores"):
        close(f[key], want[key], f"forward(...)[{key!r}], {shapes}")
    close(f["weights"], want["weights"], f"forward(...)['weights'], {shapes}",
          mistakes=[("the causal mask was ignored: positions looked ahead", unmasked["weights"]),
                    ("no 1/√d_k scaling", unscaled["weights"])])
    close(f["output"], want["output"], f"forward(...)['output'], {shapes}",
          mistakes=[("the causal mask was ignored: positions looked ahead", unmasked["output"])])
    mistakes = [("the context taken from the first position instead of the last", first["context"]),
                ("no 1/√d_k scaling", unscaled["context"])]
    close(f["context"], want["context"], f"forward(...)['context'], {shapes}", mistakes=mistakes)
    close(f["logits"], want["logits"], f"forward(...)['logits'], {shapes}",
          mistakes=[("the context taken from the first position instead of the last", first["logits"])])
    close(f["probs"], want["probs"], f"forward(...)['probs'], {shapes}",
          mistakes=[("the context taken from the first position instead of the last", first["probs"])])


@pytest.mark.parametrize(("seq", "vocab"), [(3, 6), (5, 8), (6, 5)])
def test_next_token_probs_match_the_oracle_on_larger_vocabularies(ch, seq, vocab):
    """next_token_probs is softmax(context @ W_O) at the last position, vocab > 4"""
    ids, E, params = random_model(seq, 3, 2, 4, vocab)
    got = ch.next_token_probs(ids, params, embeddings=E)
    close(got, oracle(ids, E, **params)["probs"], f"next_token_probs, seq {seq}, vocab {vocab}",
          mistakes=[("the context taken from the first position instead of the last",
                     oracle(ids, E, **params, first=True)["probs"])])
    close(np.sum(got), 1.0, "the sum of the probabilities")


@pytest.mark.parametrize("ids", [[2, 3], [0, 1, 2], [3, 3, 1, 0]])
def test_the_default_embeddings_are_the_toy_table(ch, ids):
    """forward without embeddings= uses A=[1,0], B=[0,1], C=[1,1], D=[0,0]"""
    f = ch.forward(ids, ch.toy_params())
    want = oracle(ids, TOY_E, 0.1 * np.eye(2), 0.1 * np.eye(2), 0.1 * np.eye(2), TOY_WO)
    close(f["X"], want["X"], f"forward({ids}, toy_params())['X']")
    close(f["probs"], want["probs"], f"forward({ids}, toy_params())['probs']",
          mistakes=[("the context taken from the first position instead of the last",
                     oracle(ids, TOY_E, 0.1 * np.eye(2), 0.1 * np.eye(2), 0.1 * np.eye(2), TOY_WO, first=True)["probs"])])


def test_a_later_token_never_changes_an_earlier_row(ch):
    """causal: the attention output of the first k positions does not depend on what comes after them"""
    ids, E, params = random_model(6, 3, 3, 3, 7)
    full = ch.forward(ids, params, embeddings=E)
    prefix = ch.forward(ids[:4], params, embeddings=E)
    close(np.asarray(full["output"])[:4], prefix["output"], "rows 0–3 of the output for the whole sequence vs the prefix",
          mistakes=[("the causal mask was ignored: positions looked ahead",
                     oracle(ids, E, **params, mask=False)["output"][:4])])


def test_forward_does_not_modify_its_inputs(ch):
    """forward leaves the ids, the parameters and the embedding table untouched"""
    ids, E, params = random_model(4, 3, 2, 3, 6)
    copies = {k: v.copy() for k, v in params.items()}
    E_copy, ids_copy = E.copy(), list(ids)
    ch.forward(ids, params, embeddings=E)
    for k in params:
        close(params[k], copies[k], f"params[{k!r}] after forward")
    close(E, E_copy, "the embedding table after forward")
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


def test_an_empty_sequence_is_refused(ch):
    """forward([]) raises ValueError: there is no last position to predict from"""
    raises_clearly(lambda: ch.forward([], ch.toy_params()), ValueError)


def _toy_with(name, value):
    params = {"WQ": 0.1 * np.eye(2), "WK": 0.1 * np.eye(2), "WV": 0.1 * np.eye(2), "WO": TOY_WO.copy()}
    params[name] = value
    return params


@pytest.mark.parametrize(("name", "shape"), [("WQ", (3, 2)), ("WK", (3, 2)), ("WV", (1, 2))])
def test_a_projection_with_the_wrong_number_of_rows_is_refused(ch, name, shape):
    """a W_Q, W_K or W_V whose rows differ from d_model raises ValueError naming the matrix and its shape"""
    params = _toy_with(name, np.ones(shape))
    raises_clearly(lambda: ch.forward([0, 1], params), ValueError, name, str(shape))


def test_queries_and_keys_of_different_widths_are_refused(ch):
    """W_K (2, 3) against W_Q (2, 2) raises ValueError naming both"""
    params = _toy_with("WK", np.ones((2, 3)))
    raises_clearly(lambda: ch.project_qkv(np.eye(2), params), ValueError, "WQ", "WK", "(2, 3)")


@pytest.mark.parametrize("shape", [(2, 3), (2, 5), (3, 4), (4, 2)])
def test_an_output_matrix_that_does_not_fit_is_refused(ch, shape):
    """W_O must be (d_v, vocab) = (2, 4); anything else raises ValueError naming W_O and its shape"""
    params = _toy_with("WO", np.ones(shape))
    raises_clearly(lambda: ch.forward([0, 1], params), ValueError, "WO", str(shape))


def test_a_missing_matrix_is_named(ch):
    """params without 'WV' raises ValueError naming WV"""
    params = _toy_with("WQ", 0.1 * np.eye(2))
    del params["WV"]
    raises_clearly(lambda: ch.forward([0, 1], params), ValueError, "WV")


def test_project_qkv_refuses_a_vector(ch):
    """X must be 2-D (seq, d_model); a 1-D vector raises ValueError naming its shape"""
    raises_clearly(lambda: ch.project_qkv(np.ones(2), ch.toy_params()), ValueError, "(2,)")
