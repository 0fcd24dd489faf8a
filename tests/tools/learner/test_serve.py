"""`nox -s serve` (kata/learner/serve.py) on a tiny GPT run, as a learner runs it, with solutions/.

One tiny reference run (test_train_gpt.py's settings) is served once (its draft and grouped-query model trained for
20 steps); the tests read what it printed and wrote. Stubs of chapters 17-20 are refused before anything is
trained; a hostile run folder is refused before any child starts. The trainings show the trainer's progress
(here, the output being no terminal, a line every 5 % with the time left). No test times anything: the speed-up
is `benchmarks/bench_serve.py`'s (`nox -s bench-serve`), run here on the tiny run for what it prints, never for
how fast.
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
import shutil
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from kata.learner import serve
from kata.learner.train.progress import Progress
from kata.project import chapter_files

from ..conftest import ROOT, assert_drawn_png, copy_solutions, tool
from .test_train_gpt import TINY

pytestmark = pytest.mark.slow  # tool runs (training, seconds each): handed out first under pytest-xdist


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny reference run's folder."""
    runs = tmp_path_factory.mktemp("runs")
    proc = tool("train", *TINY, "--runs", str(runs), "--name", "tiny", timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return runs / "tiny"


@pytest.fixture(scope="module")
def served(run):
    """`nox -s serve` on the tiny run: (serve.json, the tool's output)."""
    proc = tool("serve", str(run), "--impl", "solutions", "--draft-steps", "20", timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return json.loads((run / serve.SERVE_JSON).read_text(encoding="utf-8")), proc.stdout


def test_every_claim_holds_on_the_tiny_run(served):
    """serve exits 0 only when every claim holds, and serve.json lists them all as true"""
    result, _ = served
    assert len(result["claims"]) == 7 and all(result["claims"].values()), result["claims"]


def test_the_fused_draft_gives_chapter_16s_logits(served):
    """The draft runs on the server's fused NumPy (DraftDecoder): its cached logits within 1e-12 of gpt_forward's"""
    result, out = served
    assert 0 <= result["speculative"]["draft_vs_chapter16"] <= 1e-12
    assert "run by the server's fused NumPy" in out


def test_the_fused_draft_follows_its_cache_as_gpt_forward_does(run):
    """DraftDecoder fed in pieces, cut back and fed again equals gpt_forward's full forward (1e-12), any head count"""
    from solutions import chapter16_sampling

    target, _, heads, context = serve._load(str(run / "model.npz"))
    ids = [3, 17, 250, 9, 9, 101, 42, 7]
    full = chapter16_sampling.gpt_forward(np.array(ids), target, heads, None)[0]
    d = serve.DraftDecoder(target, heads, context)  # the tiny run has 2 heads: the fused heads' split is checked too
    d.feed(ids[:3])
    d.feed([5, 6])  # proposals the target rejects ...
    d.keep(3)  # ... forgotten
    rows = np.concatenate([d.feed(ids[3:6]), d.feed([ids[6]]), d.feed([ids[7]])])
    assert np.max(np.abs(rows - full[3:])) <= 1e-12
    with pytest.raises(serve.TrainError, match="past its context"):
        d.feed([1])


def test_the_tiled_prefill_gives_chapter_16s_logits(served):
    """Chapter 17: tiles that divide the context (2 of 8) and do not (3), at most 1e-12 from gpt_forward"""
    result, out = served
    assert result["tiled"]["tiles"] == [2, 3]
    assert all(0 <= g <= 1e-12 for g in result["tiled"]["largest_difference"].values()), result["tiled"]
    assert "✓ tiled prefill (chapter 17)" in out


def test_int8_weights_keep_the_loss_and_are_smaller(served):
    """Chapter 19: loss within 0.02 nats; one byte per matrix entry, and every float64 byte counted"""
    result, out = served
    q = result["int8"]
    assert abs(q["gap"]) <= 0.02 and q["gap"] == pytest.approx(q["int8_loss"] - q["float_loss"])
    d, vocab, d_ff = 8, 260, 8  # TINY: one block
    matrices = 2 * vocab * d + 4 * d * d + 3 * d * d_ff
    gains = 3 * d
    assert q["bytes"]["int8"] == matrices and q["bytes"]["float64"] == 8 * (matrices + gains)
    assert q["bytes"]["scales"] == 8 * (vocab + vocab + 4 * d + 2 * d_ff + d + gains)  # one scale per channel
    assert "✓ int8 weights (chapter 19)" in out and f"{q['bytes']['float64']:,} bytes in float64" in out


def test_speculative_decoding_counts_add_up(served):
    """Chapter 20, k = 4: tokens per call = mean(accepted + 1); acceptance = accepted / verified, by position too"""
    sp = served[0]["speculative"]
    counts = np.array(sp["accepted_counts"])
    assert sp["k"] == 4 and counts.sum() == sp["rounds"] and len(counts) == 5
    emitted = (counts * np.arange(1, 6)).sum()
    assert emitted >= sp["tokens"] and emitted - sp["tokens"] < 5, "the last round may pass n, by less than k + 1"
    assert sp["tokens_per_target_call"] == pytest.approx(emitted / sp["rounds"])
    assert sp["reached"][0] == sp["rounds"] and sp["reached"] == sorted(sp["reached"], reverse=True)
    assert sp["acceptance_rate"] == pytest.approx(sum(sp["accepted"]) / sum(sp["reached"]))
    assert 0 < sp["acceptance_rate"] < 1 and abs(sp["acceptance_rate"] - sp["alpha_mean"]) < 0.1
    assert 1 < sp["tokens_per_target_call"] < 5


def test_the_first_token_is_the_targets_exactly_and_over_many_draws(served):
    """q·min(1, p/q) + (1 − α)·r equals p to 1e-12; 2,000 rounds pass the chi-square test, and fail it against q"""
    sp, out = served[0]["speculative"], served[1]
    assert sp["first_token"]["largest_difference"] <= 1e-12
    draws = sp["draws"]
    assert draws["rounds"] == 2000 and draws["p_value"] >= serve.P_VALUE, draws
    assert draws["against_draft"]["p_value"] < serve.P_VALUE, "the test can tell the draft's distribution apart"
    assert "✓ 2,000 independent rounds" in out


def test_the_grouped_query_model_divides_the_cache_at_the_same_loss(served):
    """Chapter 18, 1 key/value head for 2: cache bytes halved (measured = kv_cache_bytes), loss within 0.05"""
    result = served[0]
    g, losses = result["gqa"], result["losses"]
    assert (g["n_heads"], g["kv_heads"], g["positions"]) == (2, 1, 8)
    assert g["mha_cache_bytes"] == 2 * g["cache_bytes"] == 2 * g["formula"]["1"] == g["formula"]["2"]
    assert g["cache_bytes"] == 2 * 1 * 1 * 4 * 8 * 8  # K and V, 1 layer, 1 head, d_head 4, 8 positions, 8 bytes
    assert g["cached_vs_full"] <= 1e-9 and losses["gqa"] - losses["float"] <= 0.05


@pytest.mark.parametrize("name", serve.FIGURES)
def test_the_figures_are_pngs_with_something_drawn(served, run, name):
    """serve_acceptance.png, serve_memory.png and serve_loss.png in the run folder, not blank"""
    assert_drawn_png(run / name, 150)


PROGRESS_LINE = re.compile(r"^ +(\d+)% (\d+)/(\d+) steps \[(\d\d:\d\d)<(\d\d:\d\d), loss \d+\.\d{3}, [\d,]+ tok/s\]$",
                           re.M)


def test_each_training_shows_its_progress_with_the_time_left(served):
    """Piped output (no terminal for the bar): the draft's and the grouped-query model's 20 steps, a line each

    The trial this answers saw one line every 200 steps for 11 minutes. The line is the trainer's (tqdm's
    format_meter): percent, step / steps, time so far < time left, the loss and tokens per second. Each training
    is named first, with its steps.
    """
    out = served[1]
    draft, gqa = out.index("training the draft (1 block of width 4), 20 steps"), out.index(
        "training the grouped-query model (1 key/value head, trained like your run), 20 steps")
    assert draft < gqa
    for start, end in ((draft, gqa), (gqa, len(out))):
        lines = PROGRESS_LINE.findall(out[start:end])
        assert [(int(n), int(total)) for _, n, total, _, _ in lines] == [(n, 20) for n in range(1, 21)], lines
        assert [int(pct) for pct, *_ in lines] == [5 * n for n in range(1, 21)]


def test_the_progress_line_of_a_resumed_run_reads_as_the_bar(monkeypatch, capsys):
    """Progress, output no terminal: a line every 5 % of all the steps, the time left from this session's rate

    Steps 101-150 of 200 (100 done before), 10 s after it began: 50 steps in 10 s, 50 left, so 10 s left.
    """
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # what tqdm sees: no terminal, so it disables itself
    progress = Progress(200, initial=100)
    asked = []
    for _ in range(50):
        progress.step(lambda: asked.append(1) or "loss 1.234, 5,000 tok/s")
    progress.close()
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" [")[0] for line in lines] == [f"  {p:3d}% {n}/200 steps" for p, n in
                                                       zip(range(55, 80, 5), range(110, 151, 10), strict=True)]
    assert len(asked) == 5, "the postfix is asked for only when it is shown (every 10th step here)"
    assert progress.line(10.0, "loss 1.234") == "   75% 150/200 steps [00:10<00:10, loss 1.234]"


def _bench():
    """benchmarks/bench_serve.py as a module."""
    spec = importlib.util.spec_from_file_location("bench_serve", ROOT / "benchmarks" / "bench_serve.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_serve_measures_the_tiny_run_and_its_draft(served, run, capsys):
    """nox -s bench-serve's script on the tiny run: every call timed, cached and speculative k = 1-4 printed

    No time is asserted. A context of 8 times the calls after 3 positions (32 would not fit).
    """
    assert _bench().main([str(run), "--impl", "solutions", "--n", "8", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "one call, after 3 positions (best of 100):" in out and "speculative_step, k = 4" in out, out
    assert "chapter 16, cached:" in out and all(f"speculative, k = {k}:" in out for k in range(1, 5)), out
    assert re.search(r"speed-up at k = 4: [\d.]+x, best k = \d", out), out
    assert re.search(r"expected_tokens and the calls: k = 1: [\d.]+x, .*; best k = \d", out), out
    assert ", solutions/" in out
    draft = run / "serve" / "draft"
    assert _bench().main([str(run), "--impl", "solutions", "--n", "4", "--repeat", "1", "--temperature", "0",
                          "--draft", str(draft)]) == 0
    out = capsys.readouterr().out
    assert f"draft {draft / 'model.npz'} (1 block" in out and "tokens at temperature 0," in out, out


def test_the_targets_rows_in_one_call_are_each_rows_distribution():
    """distributions (your chapter 4 softmax of all k + 1 rows at once) gives distribution's rows; T = 0: one-hot"""
    from solutions import chapter04_attention, chapter16_sampling

    ch = SimpleNamespace(c04=chapter04_attention, c16=chapter16_sampling)
    rows = np.random.default_rng(0).normal(0.0, 3.0, (5, 7))
    for T in (0.0, 0.5, 1.0, 2.0):
        one = np.stack([serve.distribution(ch, r, T) for r in rows])
        assert np.allclose(serve.distributions(ch, rows, T), one, rtol=0, atol=1e-15), T


def test_bench_serve_measures_whose_code_a_benchmark_measures_and_names_a_stub(served, run, tmp_path, capsys,
                                                                               monkeypatch):
    """No --impl: learners_code.measured_impl()'s code; a stub of chapter 20 there is named, exit 1

    measured_impl is solutions/ here, the learner's work in a student edition, where the trial found the bench
    stopping with "no implementation 'solutions'".
    """
    impl = copy_solutions(tmp_path / "impl")
    name = chapter_files(impl)[20].name
    shutil.copy(ROOT / "exercises" / name, impl / name)
    bench = _bench()
    monkeypatch.setattr(bench.learners_code, "measured_impl", lambda: str(impl))
    assert bench.main([str(run), "--n", "8", "--repeat", "1"]) == 1
    err = capsys.readouterr().err
    assert f"chapter 20 is not finished: speculative_step stops at {impl}/{name}:" in err, err
    assert "Measure once `nox -s chapter20` passes every step." in err and "Traceback" not in err, err


def test_a_second_serve_reuses_the_trained_draft_and_grouped_query_model(served, run):
    """The draft and the grouped-query model are trained once, with a marker of their settings"""
    for name in ("draft", "gqa1"):
        marker = json.loads((run / "serve" / name / "serve_settings.json").read_text(encoding="utf-8"))
        assert marker["impl"] == "solutions"
    assert json.loads((run / "serve" / "draft" / "run.json").read_text(encoding="utf-8"))["settings"]["layers"] == 1
    assert json.loads((run / "serve" / "gqa1" / "run.json").read_text(encoding="utf-8"))["settings"]["kv_heads"] == 1


def test_a_reused_one_draw_for_accepting_and_resampling_fails_the_test(run, served):
    """Chapter 20's classic mistake planted (u_i reused at the rejection): the chi-square test rejects the draws"""
    from solutions import (
        chapter04_attention,
        chapter11_multi_head_attention,
        chapter12_rope,
        chapter13_modern_block,
        chapter14_bpe,
        chapter16_sampling,
    )
    from solutions import (
        chapter20_speculative_decoding as c20,
    )

    def reused(draft, q, p, us):
        for i, x in enumerate(draft):
            if us[i] < c20.acceptance_probability(p[i], q[i], x):
                continue
            return [*draft[:i], chapter16_sampling.sample_index(c20.residual_distribution(p[i], q[i]), us[i])]
        return [*draft, chapter16_sampling.sample_index(p[len(draft)], us[-1])]

    ch = SimpleNamespace(c04=chapter04_attention, c11=chapter11_multi_head_attention, c12=chapter12_rope,
                         c13=chapter13_modern_block, c14=chapter14_bpe, c16=chapter16_sampling,
                         c20=SimpleNamespace(speculative_step=reused))
    target, merges, heads, _ = serve._load(str(run / "model.npz"))
    draft, _, d_heads, _ = serve._load(str(run / "serve" / "draft" / "model.npz"))
    prompt = [int(i) for i in chapter14_bpe.encode("A list is", merges)][-8:]
    counts = serve.many_rounds(ch, target, draft, (heads, d_heads), prompt, 2000, 1.0, np.random.default_rng(0))
    p = serve.distribution(ch, serve.chapter16_logits(ch, prompt, target, heads)[-1], 1.0)
    assert serve.chi_square(counts, p)[2] < serve.P_VALUE


@pytest.mark.parametrize("number", [17, 18, 19, 20])
def test_an_unfinished_chapter_is_refused_before_anything_is_trained(run, tmp_path, number):
    """A stub of chapter 17, 18, 19 or 20: 'chapter N is not finished', naming the function; nothing trained"""
    impl = copy_solutions(tmp_path / "impl")
    name = chapter_files(impl)[number].name
    shutil.copy(ROOT / "exercises" / name, impl / name)
    folder = tmp_path / "run"
    folder.mkdir()
    for f in ("model.npz", "run.json"):
        shutil.copy(run / f, folder / f)
    proc = tool("serve", str(folder), "--impl", str(impl), timeout=120)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"chapter {number} is not finished" in proc.stderr and f"{name}:" in proc.stderr, proc.stderr
    assert f"Serve once `nox -s chapter{number}` passes every step." in proc.stderr, proc.stderr
    assert not (folder / "serve").exists(), "nothing is trained before the chapters are checked"


def _hostile(run, folder, damage: str) -> None:
    shutil.copytree(run, folder, ignore=shutil.ignore_patterns("serve", "*.png", "checkpoint*", "serve.json"))
    if damage == "no model":
        (folder / "model.npz").unlink()
    elif damage == "not a zip":
        (folder / "model.npz").write_bytes(b"this is not a model")
    elif damage == "truncated":
        data = (folder / "model.npz").read_bytes()
        (folder / "model.npz").write_bytes(data[:len(data) // 2])
    elif damage == "an array missing":
        with np.load(folder / "model.npz", allow_pickle=False) as a:
            arrays = {k: a[k] for k in a.files if k != "blocks.0.WV"}
        np.savez(folder / "model.npz", **arrays)
    elif damage == "no run.json":
        (folder / "run.json").unlink()
    elif damage == "run.json not JSON":
        (folder / "run.json").write_text("{not json", encoding="utf-8")
    elif damage == "another run's run.json":
        info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        info["settings"]["d_model"] = 16
        (folder / "run.json").write_text(json.dumps(info), encoding="utf-8")


@pytest.mark.parametrize(("damage", "said"), [
    ("no folder", "is not a run folder"),
    ("no model", "there is no model at"),
    ("not a zip", "is not a model written by nox -s train"),
    ("truncated", "is not a model written by nox -s train"),
    ("an array missing", "is damaged: it has no blocks.0.WV"),
    ("no run.json", "has no run.json: the run did not finish"),
    ("run.json not JSON", "run.json is damaged"),
    ("another run's run.json", "says d_model 16 but"),
])
def test_a_hostile_run_folder_is_refused_clearly(run, tmp_path, capsys, damage, said):
    """Missing or damaged files: exit 2 and a message naming what is wrong, before any child starts"""
    folder = tmp_path / "run"
    if damage != "no folder":
        _hostile(run, folder, damage)
    code = serve.main([str(folder), "--impl", "solutions"])
    out, err = capsys.readouterr()
    assert code == 2 and err.startswith("error: ") and said in err, (damage, out, err)
    assert not (folder / "serve").exists()
