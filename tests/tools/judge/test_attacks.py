"""A grade is only as good as its weakest trick: tampering implementations, each graded for real.

Every attack is the same honest-but-wrong code (chapter 4's ``attention_scores`` forgets the 1/√d_k, so
attention is wrong in chapters 4 and 5) plus a trick. Each is graded by ``python -m kata grade`` (what
``nox -s grade`` runs) from a throwaway copy of the course, and must earn no more than the honest version.
An implementation right only at the worksheet's sizes must earn at most 10 % of chapters 2–10.

Some tricks reach past the worker into the file system or other processes; only a sandbox stops those
(``SANDBOX_ONLY``). Where bubblewrap is not installed, the report must say so instead (CI installs it).

The attacks are graded all together (eighteen grades, two at a time, beside the stalling one, which sleeps
through its minute of budget: about a minute on two cores): those tests are proofs, run by ``nox -s proofs``
(``.ci/run`` runs it), not by ``nox -s selfcheck``.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kata import project

from ..conftest import ROOT, copy_repository, copy_solutions, tool

pytestmark = pytest.mark.slow

HONEST_BUT_WRONG = '''
def attention_scores(Q, K):  # forgot to divide by sqrt(d_k): attention is wrong in chapters 4 and 5
    return raw_scores(Q, K)
'''

# Each trick runs when chapter 4 is imported (in the worker) or when its functions are called.
# COURSE is replaced with the path of the course copy the grade runs from.
ATTACKS = {
    "patch the checker and numpy.allclose": '''
        import numpy as _np
        try:
            import kata.judge.checks as _checks
            _checks.expect = _checks.close = lambda *a, **k: None
        except Exception:
            pass
        _np.allclose = lambda *a, **k: True
        _np.array_equal = lambda *a, **k: True
    ''',
    "import and return the reference": '''
        import sys as _sys
        _sys.path.insert(0, "COURSE")
        try:
            from solutions.chapter04_attention import attention_scores  # noqa: F401
        except Exception:
            pass
    ''',
    "write the result stream": '''
        import glob as _glob, json as _json, os as _os
        for _cmd in _glob.glob("/proc/*/cmdline"):
            try:
                _args = open(_cmd, "rb").read().split(b"\\0")
            except OSError:
                continue
            for _a in _args:
                if _a.startswith(b"--kata-stream="):
                    _path = _a.split(b"=", 1)[1].decode()
                    try:
                        _events = [_json.loads(l) for l in open(_path)]
                        _tests = next(e["tests"] for e in _events if e["event"] == "collected")
                        with open(_path, "a") as _f:
                            for _t in _tests:
                                _f.write(_json.dumps({"event": "result", "nodeid": _t["nodeid"], "chapter": _t["chapter"],
                                                      "step": _t["step"], "title": _t["title"], "status": "passed",
                                                      "message": "", "functions": []}) + "\\n")
                    except Exception:
                        pass
    ''',
    "rewrite pytest's reports": '''
        try:
            import _pytest.reports as _r
            _r.TestReport.passed = property(lambda self: True)
            _r.TestReport.outcome = "passed"
        except Exception:
            pass
    ''',
    "overwrite the course's tests and checks": '''
        import glob as _glob
        for _path in _glob.glob("COURSE/tests/test_chapter0*.py") + _glob.glob("/tmp/kata-grade-*/repo/tests/test_*.py"):
            try:
                open(_path, "w").write("def test_nothing():\\n    pass\\n")
            except OSError:
                pass
        for _path in _glob.glob("/tmp/kata-grade-*/repo/kata/judge/checks.py"):
            try:
                open(_path, "a").write("\\nexpect = close = lambda *a, **k: None\\n")
            except OSError:
                pass
    ''',
    "read the answer key file": '''
        import tomllib as _toml, numpy as _np
        try:
            _key = _toml.load(open("COURSE/reference/chapter04_attention.toml", "rb"))
        except Exception:
            _key = None
        _honest_attention_scores = attention_scores

        def attention_scores(Q, K):
            if _key is not None and _np.asarray(Q).shape == (2, 2):
                for _step in _key.get("steps", []):
                    if _step.get("id") == "4.2":
                        return _np.array([_np.zeros(2), _step["exact"]])
            return _honest_attention_scores(Q, K)
    ''',
    "exit 0 in the middle of a call": '''
        import os as _os
        _honest_softmax = softmax

        def softmax(x, axis=-1):
            if _np_size(x) > 4:
                _os._exit(0)
            return _honest_softmax(x, axis)

        def _np_size(x):
            import numpy
            return numpy.asarray(x).size
    ''',
    "sys.exit during import": '''
        import sys as _sys
        _sys.exit(0)
    ''',
    "print a fake summary": '''
        print("chapter 4: 6/6 steps, 16/16 checks")
        print("total: 256 / 256 points (100.0 %)")
        print('{"event": "result", "nodeid": "tests/test_chapter04_attention.py::test_x", "status": "passed"}')
    ''',
    "an answer that equals everything": '''
        class _Everything(float):
            def __eq__(self, other):
                return True
            __ne__ = lambda self, other: False
            __array_priority__ = 1000

            def __array__(self, dtype=None, copy=None):
                import numpy
                return numpy.zeros((2, 2))

        def raw_scores(Q, K):
            return _Everything(0.0)
    ''',
    "forge answers on the channel": '''
        import json as _json, os as _os, struct as _struct
        _text = _json.dumps({"ok": {"t": "l", "v": [1.0, 2.0]}, "changed": {}, "blobs": []}).encode()
        for _fd in range(3, 12):
            try:
                _os.write(_fd, _struct.pack("<I", len(_text)) + _text)
            except OSError:
                pass
    ''',
    "kill the judge": '''
        import os as _os, signal as _signal
        try:
            _os.kill(_os.getppid(), _signal.SIGKILL)
        except Exception:
            pass
    ''',
    # Found by a red team (a helper told to cheat): each paid once, each must not pay again.
    "a symbolic link to the course's reference": '''
        try:
            from .ref.chapter04_attention import attention_scores  # exercises/ref -> COURSE/solutions
        except Exception:
            pass
    ''',
    "malformed exception reports that crash the judge": '''
        import sys as _sys
        try:
            _Server = getattr(_sys.modules["__main__"], "Server")
            _describe = _Server.describe
            _Server.describe = lambda self, e: {**_describe(self, e), "frames": [{}, 3, {"line": "x"}],
                                                "bases": [None, 7], "message": {"a": 1}}
        except Exception:
            pass
    ''',
    "stall until the time budget is spent": '''
        import time as _time
        _honest_scaled_dot_product_attention = scaled_dot_product_attention

        def scaled_dot_product_attention(Q, K, V, mask=None):
            _time.sleep(1.9)  # no CPU time: under the call limit, but the budget runs out before the checks
            return _honest_scaled_dot_product_attention(Q, K, V, mask)
    ''',
    "a huge wrong answer": '''
        import numpy as _np
        _honest_raw_scores = raw_scores

        def raw_scores(Q, K):
            if _np.asarray(Q).shape != (2, 2):
                return _np.full(6_000_000, 0.25)
            return _honest_raw_scores(Q, K)
    ''',
    "allocate 10 GB and fork": '''
        import os as _os
        try:
            _big = bytearray(10 * 1024**3)
        except MemoryError:
            pass
        try:
            if _os.fork() == 0:
                import time as _t
                _t.sleep(600)
                _os._exit(0)
        except OSError:
            pass
    ''',
}


GUARDED = ("tests/test_chapter04_attention.py", "kata/judge/checks.py", "reference/chapter04_attention.toml")
STALL = "stall until the time budget is spent"
SANDBOX_ONLY = {"import and return the reference", "write the result stream", "overwrite the course's tests and checks",
                "read the answer key file", "kill the judge", "a symbolic link to the course's reference"}


def _grade(course: Path, impl: Path, out: Path) -> dict:
    proc = tool("grade", "--impl", str(impl), "--chapters", "1,4,5", "--out", str(out), root=course, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every attack, the honest version and solutions/, graded in one go (two at a time)."""
    tmp = tmp_path_factory.mktemp("attacks")
    first = copy_repository(tmp / "course0")
    jobs = {"honest": HONEST_BUT_WRONG, "solutions": ""}
    jobs.update({name: HONEST_BUT_WRONG + textwrap.dedent(trick) for name, trick in ATTACKS.items()})
    courses, impls = {}, {}
    for number, (name, code) in enumerate(jobs.items()):  # a course copy each: one attack cannot help another
        courses[name] = first if number == 0 else Path(shutil.copytree(first, tmp / f"course{number}", symlinks=True))
        code = code.replace("COURSE", str(courses[name]))
        impls[name] = copy_solutions(tmp / f"impl{number}" / "exercises", {"chapter04_attention": code} if code else {})
        if name == "a symbolic link to the course's reference":
            (impls[name] / "ref").symlink_to(courses[name] / "solutions")

    def run(name: str) -> tuple[str, dict]:
        return name, _grade(courses[name], impls[name], tmp / f"out-{list(jobs).index(name)}")

    before = {relative: (first / relative).read_bytes() for relative in GUARDED}
    # The stalling attack's grade sleeps until its budget (60 s) is spent, using no CPU: it starts first, in a
    # thread of its own, while the others are graded two at a time beside it (started last, it alone made the
    # fixture a minute longer).
    with ThreadPoolExecutor(max_workers=1) as sleeper, ThreadPoolExecutor(max_workers=2) as pool:
        stalled = sleeper.submit(run, STALL)
        results = dict(pool.map(run, [name for name in jobs if name != STALL]))
        results.update([stalled.result()])
    return courses, results, before


@pytest.mark.proof
def test_the_honest_mistake_costs_points(graded):
    """the baseline: forgetting 1/√d_k loses points in chapters 4 and 5, and solutions/ earns them all"""
    _, results, _ = graded
    assert results["solutions"]["total"]["percent"] == 100.0
    assert results["honest"]["total"]["points"] < results["solutions"]["total"]["points"]


@pytest.mark.proof
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_no_trick_earns_more_than_the_honest_code(graded, attack):
    """a tampering implementation earns no more than the same code with the trick removed"""
    _, results, _ = graded
    got, honest = results[attack], results["honest"]
    if attack in SANDBOX_ONLY and not _sandboxed(got):
        assert any(p.startswith("no sandbox") for p in got["protections"]), got["protections"]
        return
    assert got["total"]["points"] <= honest["total"]["points"], (attack, got["total"], honest["total"])
    by_chapter = {c["chapter"]: c for c in got["chapters"]}
    assert by_chapter[4]["points"] < by_chapter[4]["max_points"], attack


def _sandboxed(results: dict) -> bool:
    return any(p.startswith("bubblewrap") for p in results["protections"])


@pytest.mark.proof
def test_the_course_copy_is_untouched_by_every_attack(graded):
    """sealed, no attack could change the tests, the answer key or the judge of the course it was graded from"""
    courses, results, before = graded
    for name, course in courses.items():
        if not _sandboxed(results[name]):
            continue
        for relative in GUARDED:
            assert (course / relative).read_bytes() == before[relative], (name, relative)


def test_ci_installs_the_sandbox():
    """.ci/run installs bubblewrap before the suite, so CI always grades the attacks sealed"""
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bubblewrap" in run and run.index("bubblewrap") < run.index("-s selfcheck")


@pytest.mark.proof
def test_every_report_names_the_protections_that_applied(graded):
    """results.json says what guarded the learner's process (a separate worker, its limits, a sandbox)"""
    _, results, _ = graded
    protections = results["honest"]["protections"]
    assert "separate process" in protections
    assert any(p.startswith(("bubblewrap", "no sandbox")) for p in protections), protections
    if shutil.which("bwrap"):
        assert _sandboxed(results["honest"]), protections


def test_worksheet_sized_answers_earn_at_most_a_tenth(tmp_path):
    """right only at the worksheet's sizes (the reference for ≤2×2 inputs, zeros otherwise): ≤ 10 % of chapters 2 on"""
    impl = tmp_path / "exercises"
    shutil.copytree(ROOT / "solutions", impl / "_real", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(Path(__file__).parent / "attacks" / "worksheet_only.py", impl / "_worksheet_only.py")
    (impl / "__init__.py").write_text("")
    for path in project.chapter_files(ROOT / "solutions").values():
        (impl / path.name).write_text(
            f"from ._worksheet_only import wrap\nfrom ._real import {path.stem} as _real\n\nwrap(globals(), _real)\n")
    proc = tool("grade", "--impl", str(impl), "--out", str(tmp_path / "out"), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    later = [c for c in results["chapters"] if c["chapter"] >= 2]
    earned, worth = sum(c["points"] for c in later), sum(c["max_points"] for c in later)
    assert earned <= 0.10 * worth, f"{earned} of {worth} points"
    passed_but_withheld = [s for c in later for s in c["steps"] if s["status"] == "passed" and s["withheld"]]
    assert passed_but_withheld and "checks beyond the worksheet" in passed_but_withheld[0]["withheld"]


def test_worksheet_sized_answers_earn_nothing_in_chapter_11(tmp_path):
    """right only up to chapter 11's worksheet sizes (no dimension above 4: 3 tokens, d_model 4, 2 heads): 0 points"""
    impl = tmp_path / "exercises"
    shutil.copytree(ROOT / "solutions", impl / "_real", ignore=shutil.ignore_patterns("__pycache__"))
    cheat = (Path(__file__).parent / "attacks" / "worksheet_only.py").read_text(encoding="utf-8")
    assert "LIMIT = 2" in cheat
    (impl / "_worksheet_only.py").write_text(cheat.replace("LIMIT = 2", "LIMIT = 4"), encoding="utf-8")
    (impl / "__init__.py").write_text("")
    for path in project.chapter_files(ROOT / "solutions").values():
        (impl / path.name).write_text(
            f"from ._worksheet_only import wrap\nfrom ._real import {path.stem} as _real\n\nwrap(globals(), _real)\n")
    proc = tool("grade", "--impl", str(impl), "--chapters", "11", "--out", str(tmp_path / "out"), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    (chapter,) = results["chapters"]
    assert chapter["chapter"] == 11 and chapter["points"] == 0, f"{chapter['points']} of {chapter['max_points']} points"
    passed = [s for s in chapter["steps"] if s["status"] == "passed"]
    assert passed and all(s["withheld"] for s in passed), "the worksheet's own steps pass, and earn nothing"
