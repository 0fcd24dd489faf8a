"""Audit of chapter 16's worksheet (sampling and the KV cache): every `exact` and mistake value of the key.

Written from the formulas on the page with Python's ``math`` for the sampling steps and small NumPy matrix
products for the model, independent of ``solutions/``, so the answer key cannot inherit a bug of the reference.
The KV-cache steps are computed twice: the exact values by the full forward over the whole sequence (no cache at
all), the mistakes by a cached decode with the mistake planted; the cached decode without a mistake must agree
with the full forward to 1e-12, or the audit stops.

Run by ``python -m kata.authoring.audit 16``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import math

import numpy as np

BASE = 10000.0
EPS = 1e-6  # RMSNorm's ε

# the worksheet's inputs (the page's tables)
LOGITS = [1.0, 3.0, 2.0, 2.0]  # 16.1, 16.5: tokens 2 and 3 tie for second place
T = 2.0  # 16.1
K_TOP = 2  # 16.2
P_TOP = 0.8  # 16.3
DYADIC = [0.25, 0.5, 0.0, 0.25]  # 16.4: every running sum exact in binary
US = [0.1, 0.25, 0.75, 0.9]  # 16.4: two of them exactly on a boundary
CASES = [{"temperature": 0.0, "u": 0.9}, {"temperature": 1.0, "u": 0.7},
         {"temperature": 2.0, "top_k": 2, "u": 0.8}, {"temperature": 2.0, "top_p": 0.8, "u": 0.5},
         # 16.5, both filters: top-k 3 then top-p 0.7 keeps tokens 1 and 2; top-p first would keep 1, 2 and 3
         {"temperature": 2.0, "top_k": 3, "top_p": 0.7, "u": 0.8}]

N_HEADS = 2
I4 = [[1.0 if i == j else 0.0 for j in range(4)] for i in range(4)]
X_NEW = [[1.0, 0.0, 0.0, 1.0]]  # 16.6, 16.7: one new row at position t = 2
CACHE = {"K": [[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 1.0]]],  # (n_heads, t, d_head), keys already rotated
         "V": [[[1.0, 0.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, 2.0]]]}
ATTENTION = {"WQ": I4, "WK": I4, "WV": I4, "WO": I4}
BLOCK = {"g1": [1.0, 1.0, 1.0, 1.0], **ATTENTION, "g2": [1.0, 1.0, 1.0, 1.0],
         "W_gate": [[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 1.0]],
         "W_up": [[0.5, 0.0], [0.0, 0.5], [0.5, 0.0], [0.0, 0.5]],
         "W_down": [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]}
MODEL = {"tok_emb": [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 1.0],
                     [1.0, 0.0, 0.0, 1.0]],
         "blocks": [BLOCK], "g_final": [1.0, 1.0, 1.0, 1.0],
         "W_out": [[1.0, 0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0, -1.0],
                   [0.0, 0.0, 0.0, 1.0, -1.0]]}
PROMPT = [1, 3]  # 16.8, 16.9
NEXT = 2  # 16.8: the token fed after the prompt
GEN_US = [0.4, 0.55, 0.45]  # 16.9: with u = 0.4 the prompt's last row draws token 2, its first row would draw 1
GEN_T = 1.0

# 16.8, 16.10, by hand: vocabulary 3, d_model 2, one head, one block whose W_O and W_down are 0 (it adds nothing)
I2 = [[1.0, 0.0], [0.0, 1.0]]
SMALL = {"tok_emb": [[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]],
         "blocks": [{"g1": [1.0, 1.0], "WQ": I2, "WK": I2, "WV": I2, "WO": [[0.0, 0.0], [0.0, 0.0]],
                     "g2": [1.0, 1.0], "W_gate": [[1.0], [1.0]], "W_up": [[1.0], [1.0]], "W_down": [[0.0, 0.0]]}],
         "g_final": [1.0, 1.0], "W_out": [[1.0, 0.0, 1.0], [0.0, 1.0, -1.0]]}
SMALL_HEADS = 1
SMALL_PROMPT = [1, 2]
SMALL_NEXT = 0  # 16.8: the token fed after the prompt
SMALL_US = [0.3, 0.5, 0.96]  # 16.10: u = 0.3 draws token 0 from the prompt's last row, token 1 from its first

RESTART = "positions restarted at 0 in the cache: the new token rotated as if it were the first"
TWICE = "the cached keys rotated again: they were stored already rotated"
UNMASKED = "the new rows not masked among themselves: a row of the prefill reads the rows after it"
UNROTATED = "the keys stored in the cache unrotated: a later step reads them as if they were turned"
KEYS_AT_ZERO = "the new keys rotated from position 0: the queries turned by their position t + i, the keys by i"
KEYS_FIRST = "the new keys put before the cached ones: every key at another position than its value"
FIRST_ROW = "the first token drawn from the prefill's first row: the next token follows the prompt's last row"
NO_RENORM = "no renormalisation after filtering: the kept probabilities no longer sum to 1"
TIE_UPPER = "a tie at the k-th probability kept the higher index: ties go to the lower index"
DROPPED = "the top-p boundary token dropped: only the tokens before the running sum reaches p kept"
NO_FINAL_NORM = "the final RMSNorm left out: the logits are x W_out"
P_FIRST = ("top-p applied before top-k (or only one of the two filters applied): top-k first, then the nucleus of "
           "what it kept")
OLD_CACHES = ("the caches it was given handed back instead of the new ones: the decode step started again with "
              "nothing cached, as if the new token were the first")
ONTO_NORM = "the attention added to the normalised copy instead of the stream: x₁ = RMSNorm(x) + A(RMSNorm(x))"


# -- sampling, number by number ----------------------------------------------------------------------------------
def softmax(zs):
    """Probabilities from scores, the largest subtracted first."""
    top = max(zs)
    e = [math.exp(z - top) for z in zs]
    total = math.fsum(e)
    return [x / total for x in e]


def ranked(probs, tie_upper=False):
    """Indices from the most likely down, ties by the lower index (tie_upper: the higher, the mistake)."""
    return sorted(range(len(probs)), key=lambda i: (-probs[i], -i if tie_upper else i))


def keep(probs, kept, renormalise=True):
    """Zero what is not kept, then (unless told not to) divide by what is left."""
    total = math.fsum(probs[i] for i in kept) if renormalise else 1.0
    return [probs[i] / total if i in kept else 0.0 for i in range(len(probs))]


def top_k(probs, k, renormalise=True, unsorted=False, tie_upper=False):
    """The k most likely kept (unsorted: the first k tokens; tie_upper: a tie at the k-th kept the higher index)."""
    order = list(range(len(probs))) if unsorted else ranked(probs, tie_upper)
    return keep(probs, set(order[:k]), renormalise)


def top_p(probs, p, renormalise=True, drop_boundary=False, unsorted=False):
    """The smallest prefix of the ranked tokens whose running sum reaches p (the crossing token kept)."""
    order = list(range(len(probs))) if unsorted else ranked(probs)
    kept, running = set(), 0.0
    for i in order:
        running += probs[i]
        if drop_boundary and running >= p:
            break
        kept.add(i)
        if running >= p:
            break
    return keep(probs, kept, renormalise)


def sample(probs, u, at_most=False, sort_first=False):
    """Inverse CDF: the first index whose running sum exceeds u (at_most: u ≤ c, the mistake)."""
    order = ranked(probs) if sort_first else list(range(len(probs)))
    running = 0.0
    for i in order:
        running += probs[i]
        if (u <= running) if at_most else (u < running):
            return i
    return max(i for i in range(len(probs)) if probs[i] > 0)


def choose(zs, u, temperature=1.0, top_k_=None, top_p_=None, multiply=False, no_filters=False, drop_boundary=False,
           tie_upper=False, p_first=False):
    """The next token: greedy at temperature 0, else temperature, the filters, the draw (and the mistakes)."""
    if temperature == 0:
        return max(range(len(zs)), key=lambda i: (zs[i], -i))
    probs = softmax([z * temperature if multiply else z / temperature for z in zs])
    if top_p_ is not None and not no_filters and p_first:  # the mistake: the nucleus of the unfiltered distribution
        probs = top_p(probs, top_p_, drop_boundary=drop_boundary)
    if top_k_ is not None and not no_filters:
        probs = top_k(probs, top_k_, tie_upper=tie_upper)
    if top_p_ is not None and not no_filters and not p_first:
        probs = top_p(probs, top_p_, drop_boundary=drop_boundary)
    return sample(probs, u)


def choose_all(**mistake):
    """16.5: every case of the table."""
    return [choose(LOGITS, c["u"], c["temperature"], c.get("top_k"), c.get("top_p"), **mistake) for c in CASES]


# -- the model, with small matrix products -------------------------------------------------------------------------
def rotate(row, position):
    """One head's row turned pair by pair: pair i by position·base^(−2i/d)."""
    d = len(row)
    out = np.array(row, dtype=np.float64)
    for i in range(d // 2):
        phi = position * BASE ** (-2 * i / d)
        a, b = row[2 * i], row[2 * i + 1]
        out[2 * i], out[2 * i + 1] = a * math.cos(phi) - b * math.sin(phi), a * math.sin(phi) + b * math.cos(phi)
    return out


def rmsnorm(x, g):
    """Each row over the root of its mean square (+ ε), times the gains."""
    x = np.asarray(x, dtype=np.float64)
    return np.asarray(g) * x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS)


def silu(a):
    """a·σ(a)."""
    return a / (1.0 + np.exp(-a))


def attend(x_new, W, cache, restart=False, twice=False, unmasked=False, own_left_out=False, unrotated=False,
           keys_at_zero=False, keys_first=False, heads=N_HEADS):
    """Attention of the new rows at positions t … t+m−1, reading and extending the cache (one dict per head).

    The mistakes: restart, the new rows rotated from position 0; twice, the cached keys rotated again by their
    positions; unmasked, every new row sees every new row; own_left_out, the new rows see the cache only;
    unrotated, the new keys are used rotated but stored in the cache as they were before RoPE; keys_at_zero,
    the new keys rotated from position 0 (the queries from t); keys_first, the new keys put before the cached
    ones (the values in their order).
    """
    x = np.asarray(x_new, dtype=np.float64)
    m, d_model = x.shape
    d_head = d_model // heads
    Q, Kx, Vx = x @ np.asarray(W["WQ"]), x @ np.asarray(W["WK"]), x @ np.asarray(W["WV"])
    K_old = np.zeros((heads, 0, d_head)) if cache is None else np.asarray(cache["K"], dtype=np.float64)
    V_old = np.zeros((heads, 0, d_head)) if cache is None else np.asarray(cache["V"], dtype=np.float64)
    t = K_old.shape[1]
    first = 0 if restart else t
    outs, K_all, V_all = [], [], []
    for h in range(heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        q = [rotate(Q[i, cols], first + i) for i in range(m)]
        k_new = [rotate(Kx[i, cols], i if keys_at_zero else first + i) for i in range(m)]
        k_old = [rotate(K_old[h, j], j) if twice else K_old[h, j] for j in range(t)]
        keys = k_new + k_old if keys_first else k_old + k_new
        values = list(V_old[h]) + [Vx[i, cols] for i in range(m)]
        rows = []
        for i in range(m):
            seen = t if own_left_out else (t + m if unmasked else t + i + 1)
            scores = [float(np.dot(q[i], keys[j])) / math.sqrt(d_head) for j in range(seen)]
            w = softmax(scores)
            rows.append(sum(w[j] * values[j] for j in range(seen)))
        outs.append(np.array(rows))
        K_all.append(np.array(k_old + [Kx[i, cols] for i in range(m)] if unrotated else keys))
        V_all.append(np.array(values))
    merged = np.concatenate(outs, axis=1)  # (m, d_model): head 0's columns, then head 1's
    return merged @ np.asarray(W["WO"]), {"K": np.array(K_all), "V": np.array(V_all)}


def block(x_new, params, cache, residual=True, onto_norm=False, **mistake):
    """x1 = x + A(RMSNorm₁(x)); y = x1 + SwiGLU(RMSNorm₂(x1))."""
    x = np.asarray(x_new, dtype=np.float64)
    a, cache = attend(rmsnorm(x, params["g1"]), params, cache, **mistake)
    x1 = (rmsnorm(x, params["g1"]) if onto_norm else x) + a if residual else a
    h = rmsnorm(x1, params["g2"])
    f = (silu(h @ np.asarray(params["W_gate"])) * (h @ np.asarray(params["W_up"]))) @ np.asarray(params["W_down"])
    return (x1 + f if residual else f), cache


def forward(ids, caches=None, model=None, final_norm=True, old_caches=False, **mistake):
    """The model on new ids after the cached positions: (logits (m, vocab), caches).

    model: MODEL unless given (SMALL, with heads=1); final_norm=False leaves the final RMSNorm out (the mistake);
    old_caches=True hands back the caches it was given (one None a block for none), not the new ones (the mistake).
    """
    model = MODEL if model is None else model
    x = np.asarray(model["tok_emb"], dtype=np.float64)[ids]
    caches = caches or [None] * len(model["blocks"])
    new = []
    for params, cache in zip(model["blocks"], caches, strict=True):
        x, cache = block(x, params, cache, **mistake)
        new.append(cache)
    x = rmsnorm(x, model["g_final"]) if final_norm else x
    return x @ np.asarray(model["W_out"]), (caches if old_caches else new)


def full(ids, model=None, heads=N_HEADS):
    """The full forward over the whole sequence, no cache: the oracle of every KV-cache step."""
    logits, _ = forward(list(ids), model=model, heads=heads)
    return logits


PREFILL_MISTAKES = ("unmasked", "unrotated", "old_caches")  # mistakes the prefill makes too (the others need a cache)


def prefill_then(next_ids, prompt=PROMPT, model=None, heads=N_HEADS, **mistake):
    """The prompt at once, then each next id alone from the caches (the prefill's mistakes planted in both)."""
    prefill = {k: v for k, v in mistake.items() if k in PREFILL_MISTAKES + ("final_norm",)}
    decode = {k: v for k, v in mistake.items() if k != "unmasked"}
    logits, caches = forward(prompt, model=model, heads=heads, **prefill)
    rows = [logits]
    for i in next_ids:
        logits, caches = forward([i], caches, model=model, heads=heads, **decode)
        rows.append(logits)
    return np.vstack(rows)


def generate(us, cached=True, first_row=False, prompt=PROMPT, model=None, heads=N_HEADS, **mistake):
    """len(us) new ids; cached=False recomputes the full forward for every token (the oracle).

    first_row: the mistake of drawing the first token from the prefill's first row instead of its last.
    """
    seq = list(prompt)
    if not cached:
        for u in us:
            seq.append(choose(list(full(seq, model, heads)[-1]), u, GEN_T))
        return seq[len(prompt):]
    logits, caches = forward(prompt, model=model, heads=heads,
                             **{k: v for k, v in mistake.items() if k in PREFILL_MISTAKES})
    out = []
    for u in us:
        out.append(choose(list(logits[0 if first_row and not out else -1]), u, GEN_T))
        logits, caches = forward([out[-1]], caches, model=model, heads=heads,
                                 **{k: v for k, v in mistake.items() if k != "unmasked"})
    return out


def rows(a):
    """A matrix as nested lists of Python floats."""
    return [[float(x) for x in r] for r in np.asarray(a)]


def audit() -> dict[str, dict]:
    """{step id: {"exact": value, "mistakes": {name: value}}}, the names as in the key."""
    steps: dict[str, dict] = {}
    p1 = softmax([z / T for z in LOGITS])
    steps["16.1"] = {"exact": p1, "mistakes": {
        "temperature multiplied instead of divided: softmax(z·T) sharpens where T = 2 should flatten":
            softmax([z * T for z in LOGITS]),
        "temperature left out: softmax(z), the distribution at T = 1": softmax(LOGITS)}}
    steps["16.2"] = {"exact": top_k(p1, K_TOP), "mistakes": {
        NO_RENORM: top_k(p1, K_TOP, renormalise=False),
        "the first k tokens kept instead of the k most likely (the probabilities never sorted)":
            top_k(p1, K_TOP, unsorted=True),
        TIE_UPPER: top_k(p1, K_TOP, tie_upper=True)}}
    steps["16.3"] = {"exact": top_p(p1, P_TOP), "mistakes": {
        DROPPED: top_p(p1, P_TOP, drop_boundary=True),
        NO_RENORM: top_p(p1, P_TOP, renormalise=False),
        "the running sum taken in index order, not from the most likely token": top_p(p1, P_TOP, unsorted=True)}}
    steps["16.4"] = {"exact": [sample(DYADIC, u) for u in US], "mistakes": {
        "u ≤ c instead of u < c: a u exactly on a boundary goes to the token before it":
            [sample(DYADIC, u, at_most=True) for u in US],
        "the probabilities sorted before the running sum: inverse-CDF sampling walks the tokens in index order":
            [sample(DYADIC, u, sort_first=True) for u in US]}}
    steps["16.5"] = {"exact": choose_all(), "mistakes": {
        "temperature multiplied instead of divided": choose_all(multiply=True),
        "top_k and top_p ignored: drawn from the whole distribution": choose_all(no_filters=True),
        DROPPED: choose_all(drop_boundary=True),
        TIE_UPPER: choose_all(tie_upper=True),
        P_FIRST: choose_all(p_first=True)}}

    out, _ = attend(X_NEW, ATTENTION, CACHE)
    steps["16.6"] = {"exact": rows(out), "mistakes": {
        RESTART: rows(attend(X_NEW, ATTENTION, CACHE, restart=True)[0]),
        TWICE: rows(attend(X_NEW, ATTENTION, CACHE, twice=True)[0]),
        "the new token's own key and value left out: it attends to the cache only":
            rows(attend(X_NEW, ATTENTION, CACHE, own_left_out=True)[0]),
        KEYS_AT_ZERO: rows(attend(X_NEW, ATTENTION, CACHE, keys_at_zero=True)[0]),
        KEYS_FIRST: rows(attend(X_NEW, ATTENTION, CACHE, keys_first=True)[0])}}
    y, _ = block(X_NEW, BLOCK, CACHE)
    steps["16.7"] = {"exact": rows(y), "mistakes": {
        RESTART: rows(block(X_NEW, BLOCK, CACHE, restart=True)[0]),
        "no residual connections: y = SwiGLU(RMSNorm(A)) alone": rows(block(X_NEW, BLOCK, CACHE, residual=False)[0]),
        ONTO_NORM: rows(block(X_NEW, BLOCK, CACHE, onto_norm=True)[0])}}

    small = {"prompt": SMALL_PROMPT, "model": SMALL, "heads": SMALL_HEADS}
    oracle = full(SMALL_PROMPT + [SMALL_NEXT], SMALL, SMALL_HEADS)
    if not np.allclose(prefill_then([SMALL_NEXT], **small), oracle, rtol=0, atol=1e-12):
        raise SystemExit("the audit's cached decode of the small model differs from its full forward")
    steps["16.8"] = {"exact": rows(oracle), "mistakes": {
        NO_FINAL_NORM: rows(prefill_then([SMALL_NEXT], final_norm=False, **small))}}

    oracle = full(PROMPT + [NEXT])
    cached = prefill_then([NEXT])
    if not np.allclose(cached, oracle, rtol=0, atol=1e-12):
        raise SystemExit(f"the audit's cached decode {cached} differs from its full forward {oracle}")
    steps["16.9"] = {"exact": rows(oracle), "mistakes": {
        RESTART: rows(prefill_then([NEXT], restart=True)),
        TWICE: rows(prefill_then([NEXT], twice=True)),
        UNMASKED: rows(prefill_then([NEXT], unmasked=True)),
        UNROTATED: rows(prefill_then([NEXT], unrotated=True)),
        OLD_CACHES: rows(prefill_then([NEXT], old_caches=True))}}
    ids = generate(SMALL_US, cached=False, **small)
    if generate(SMALL_US, **small) != ids:
        raise SystemExit("the audit's cached generation of the small model differs from its full-forward one")
    steps["16.10"] = {"exact": ids, "mistakes": {FIRST_ROW: generate(SMALL_US, first_row=True, **small)}}

    ids = generate(GEN_US, cached=False)
    if generate(GEN_US) != ids:
        raise SystemExit("the audit's cached generation differs from its full-forward generation")
    steps["16.11"] = {"exact": ids, "mistakes": {FIRST_ROW: generate(GEN_US, first_row=True),
                                                RESTART: generate(GEN_US, restart=True),
                                                TWICE: generate(GEN_US, twice=True)}}
    return steps


def printed(value):
    """How the worksheet prints a value: 4 decimals (a whole number as it is)."""
    if isinstance(value, list):
        return [printed(v) for v in value]
    if isinstance(value, int):
        return str(value)
    return f"{value:.4f}"
