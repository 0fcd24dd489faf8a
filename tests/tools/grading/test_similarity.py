"""The report's copying signals (``kata/grading/similarity.py``): copying found where it hides, rare code first.

Each test lays learners' graded folders out as ``nox -s grade-class`` keeps them
(``students/<name>/graded/exercises/``) and reads the signals as the report does (``similarity.signals``), so no
learner is graded here. The learners' own code comes from ``tests/tools/alternatives/`` (whole implementations
written apart from ``solutions/``); the course's stubs and solutions are boilerplate.
"""

from __future__ import annotations

import builtins
import keyword
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from kata.grading import class_report, similarity

from ..conftest import ROOT

LOOPS = ROOT / "tests" / "tools" / "alternatives" / "alt_loops"
EINSUM = ROOT / "tests" / "tools" / "alternatives" / "alt_einsum"
CH1, CH2, CH3, CH4 = "chapter01_sequences.py", "chapter02_matrices.py", "chapter03_embeddings.py", \
    "chapter04_attention.py"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One fingerprint cache for the module: the course's stubs and solutions are fingerprinted once."""
    return tmp_path_factory.mktemp("fingerprints")


def renamed(code: str) -> str:
    """The same program with many of its names changed (what a copier does first)."""
    keep = {*keyword.kwlist, *keyword.softkwlist, *dir(builtins), "np", "math", "annotations", "__future__"}
    for name in sorted(set(re.findall(r"(?<![.\w])[a-z_][a-z0-9_]*\b", code)) - keep):
        code = re.sub(rf"(?<![.\w]){name}\b", f"{name}_copy", code)
    return code


def read(folder: Path, name: str) -> str:
    return (folder / name).read_text(encoding="utf-8")


def stub(name: str) -> str:
    return read(ROOT / "exercises", name)


def graded(out: Path, learners: dict[str, dict[str, str]]) -> dict:
    """Lay out each learner's graded files (``{name: {file: code}}``) under ``out``; return their gradebook."""
    for student, files in learners.items():
        folder = similarity.graded_folder(out, student) / "exercises"
        folder.mkdir(parents=True)
        for name, code in files.items():
            (folder / name).write_text(code, encoding="utf-8")
    return {"rows": [{"student": s, "status": "graded", "results": None} for s in learners]}


def pairs(signals: dict) -> list[list[str]]:
    return [p["students"] for p in signals["code"]]


def section(signals: dict) -> str:
    return "".join(class_report.similarity_section(signals, lambda s: f"<span>{class_report._e(s)}</span>"))


def test_a_copy_moved_into_another_file_is_paired_and_placed_by_chapter(tmp_path, cache):
    """ben hides ana's chapter 2 (names changed) in exercises/mine.py, imported by his chapter file"""
    ana = read(LOOPS, CH2)
    book = graded(tmp_path, {
        "ana": {CH1: stub(CH1), CH2: ana},
        "ben": {CH1: stub(CH1), CH2: stub(CH2) + "\nfrom .mine import *  # noqa\n", "mine.py": renamed(ana)},
        "cal": {CH1: stub(CH1), CH2: read(EINSUM, CH2)},  # honest, another style
        "dee": {CH1: read(ROOT / "solutions", CH1), CH2: read(ROOT / "solutions", CH2)},  # the course's answer
        "eve": {CH1: stub(CH1), CH2: stub(CH2)},  # nothing done
    })
    found = similarity.signals(book, tmp_path, ROOT, cache)
    assert found["error"] is None and pairs(found) == [["ana", "ben"]], found["code"]
    where = found["code"][0]["chapters"][0]
    assert where["chapter"] == 2 and where["files"] == [CH2, "mine.py"], where
    assert where["rare"] == found["code"][0]["rare"] >= similarity.MIN_RARE
    assert "chapter 2: chapter02_matrices.py ↔ mine.py" in section(found)


def test_the_course_stubs_and_solutions_are_boilerplate(tmp_path, cache):
    """two learners handing in the course's solutions (names changed) share nothing of their own"""
    solved = {name: read(ROOT / "solutions", name) for name in (CH1, CH2, CH3)}
    book = graded(tmp_path, {"ana": solved, "ben": {k: renamed(v) for k, v in solved.items()},
                             "cal": {CH1: stub(CH1)}, "dee": {CH1: stub(CH1)}, "eve": {CH3: read(LOOPS, CH3)}})
    found = similarity.signals(book, tmp_path, ROOT, cache)
    assert found["error"] is None and pairs(found) == [], found["code"]
    assert "No two learners share" in section(found)


def test_the_stubs_are_taken_at_the_course_commit(tmp_path, cache):
    """an instructor's own answer in the course copy's exercises/ does not make the committed stub count"""
    course = tmp_path / "course"
    (course / "exercises").mkdir(parents=True)
    handed_out = read(LOOPS, CH1)  # stands for a stub with a great deal of given code
    (course / "exercises" / CH1).write_text(handed_out, encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "i", "GIT_AUTHOR_EMAIL": "i@example.invalid", "GIT_COMMITTER_NAME": "i",
           "GIT_COMMITTER_EMAIL": "i@example.invalid", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "course"]):
        subprocess.run(["git", "-C", str(course), *args], env=env, check=True, capture_output=True)
    (course / "exercises" / CH1).write_text(read(EINSUM, CH1), encoding="utf-8")  # tried out in the working tree
    out = tmp_path / "out"
    book = graded(out, {"ana": {CH1: handed_out}, "ben": {CH1: handed_out}, "cal": {CH1: read(ROOT / "exercises", CH1)},
                        "dee": {CH1: read(ROOT / "exercises", CH1)}, "eve": {CH1: read(ROOT / "exercises", CH1)}})
    found = similarity.signals(book, out, course, cache)
    assert found["error"] is None and pairs(found) == [], found["code"]


def test_pairs_are_ranked_by_how_rare_their_shared_code_is(tmp_path, cache):
    """code five of twenty share counts for nothing, three count 2/3, two count 1: the pair comes first"""
    common, trio, pair = read(LOOPS, CH4), read(LOOPS, CH3), read(EINSUM, CH2)
    learners = {f"common{i}": {CH4: common} for i in range(5)}  # more than a fifth of the class: common
    learners |= {f"trio{i}": {CH3: trio} for i in range(3)}
    learners |= {"pair0": {CH2: pair}, "pair1": {CH2: renamed(pair)}}
    learners |= {f"other{i}": {CH1: stub(CH1)} for i in range(10)}
    book = graded(tmp_path, learners)
    found = similarity.signals(book, tmp_path, ROOT, cache)
    # The oracle, by sets: each learner's fingerprints, less the course's; 2/n for each shared one held by n <= 4.
    base = set().union(*(similarity.fingerprints(data.decode()).tolist() for _, data in similarity.course_files(ROOT)))
    held = {s: set().union(*(similarity.fingerprints(c).tolist() for c in files.values())) - base
            for s, files in learners.items()}
    counts = Counter(h for prints in held.values() for h in prints)

    def rare(a: str, b: str) -> float:
        return round(sum(2 / counts[h] for h in held[a] & held[b] if counts[h] <= 4), 1)

    assert pairs(found)[0] == ["pair0", "pair1"] and found["code"][0]["rare"] == rare("pair0", "pair1")
    assert sorted(pairs(found)[1:]) == [["trio0", "trio1"], ["trio0", "trio2"], ["trio1", "trio2"]], found["code"]
    assert [p["rare"] for p in found["code"][1:]] == [rare("trio0", "trio1")] * 3
    assert not any(a.startswith("common") for a, _ in pairs(found))
    assert found["error"] is None and found["holders"] == 4, found
    shown = section(found)
    assert "Rare shared code" in shown and f'<td class="n">{rare("pair0", "pair1"):g}</td>' in shown


def test_a_class_counted_range_by_range_scores_the_same(monkeypatch):
    """a big class's fingerprints are counted one range at a time: the scores are those of one pass"""
    import numpy as np

    rng = np.random.default_rng(7)
    pool = rng.integers(-(2**63), 2**63 - 1, size=3000, dtype=np.int64)
    whole = [np.unique(rng.choice(pool, size=400)) for _ in range(12)]
    once = similarity._rare_scores(whole, 4)
    monkeypatch.setattr(similarity, "RANGE", 500)  # ~10 ranges
    ranged = similarity._rare_scores(whole, 4)
    assert once[2] and ranged[2] == once[2]
    assert np.array_equal(ranged[0], once[0]) and np.array_equal(ranged[1], once[1])


@pytest.mark.parametrize(("scores", "said"), [
    ([90, 80, 70, 60], "… and 1 more pair below 70 of rare shared code, the last score shown (the best of them 60)"),
    ([90, 80, 70, 70, 65], "… and 2 more pairs at or below 70 of rare shared code, the last score shown: 1 of them "
                           "scores 70 too (a tie at the cut)"),
])
def test_the_pairs_past_the_cut_are_said_to_be_below_it(monkeypatch, scores, said):
    monkeypatch.setattr(class_report, "MAX_PAIRS", 3)
    code = [{"students": [f"a{i}", f"b{i}"], "rare": float(s), "shared": 1, "share": [0.5, 0.5],
             "chapters": [{"chapter": 1, "files": [CH1, CH1], "rare": float(s), "shared": 1}]}
            for i, s in enumerate(scores)]
    text = section({"compared": 9, "code": code, "min_rare": 60.0, "holders": 2, "common": 0.2, "skipped": [],
                    "failures": [], "min_same_failures": 3, "error": None})
    assert said in text, text
    assert "less alike" not in text


def test_fingerprints_mean_the_same_in_every_process(tmp_path):
    """a re-run takes ana's fingerprints from the cache (another process) and still pairs her with ben"""
    copied = read(LOOPS, CH2)
    out = tmp_path / "out"
    book = graded(out, {"ana": {CH2: copied}, "ben": {CH2: renamed(copied)}, "cal": {CH1: stub(CH1)},
                        "dee": {CH1: stub(CH1)}, "eve": {CH1: stub(CH1)}})
    cache = tmp_path / "cache"
    code = ("import json, sys; from pathlib import Path; from kata.grading import similarity; "
            "book = json.loads(sys.argv[1]); out, root, cache = map(Path, sys.argv[2:]); "
            "print(json.dumps(similarity.signals(book, out, root, cache)['code']))")
    import json

    first = subprocess.run([sys.executable, "-c", code, json.dumps(book), str(out), str(ROOT), str(cache)],
                           env={**os.environ, "PYTHONHASHSEED": "1", "PYTHONPATH": str(ROOT)}, capture_output=True,
                           text=True, check=False)
    assert first.returncode == 0, first.stderr[-2000:]
    assert [p["students"] for p in json.loads(first.stdout)] == [["ana", "ben"]]
    mine = similarity.graded_folder(out, "ben") / "exercises" / CH2
    mine.write_text(mine.read_text(encoding="utf-8") + "\n\ndef extra(x):\n    return x\n", encoding="utf-8")
    found = similarity.signals(book, out, ROOT, cache)  # this process: another hash seed; ana's from the cache
    assert pairs(found) == [["ana", "ben"]], found["code"]


def test_hostile_files_are_compared_or_named_and_never_break_the_report(tmp_path, cache, monkeypatch):
    """a file named like HTML is compared and escaped; a binary file, a link and what is past the cap are named"""
    copied = read(EINSUM, CH3)
    book = graded(tmp_path, {"ana": {CH3: copied}, "ben": {"<img src=x onerror=alert(1)>.py": renamed(copied)},
                             "cal": {}, "dee": {}, "eve": {}})
    ben = similarity.graded_folder(tmp_path, "ben") / "exercises"
    (ben / "data.bin").write_bytes(b"\xff\xfe\x00binary")
    (ben / "ana.py").symlink_to(similarity.graded_folder(tmp_path, "ana") / "exercises" / CH3)
    (ben / "zz_big.py").write_text("x = 1\n" * 100, encoding="utf-8")
    monkeypatch.setattr(similarity, "MAX_BYTES", len(renamed(copied).encode()) + 100)
    found = similarity.signals(book, tmp_path, ROOT, cache)
    assert pairs(found) == [["ana", "ben"]], found["code"]
    assert found["code"][0]["chapters"][0]["files"] == [CH3, "<img src=x onerror=alert(1)>.py"]
    assert sorted(found["skipped"]) == ["ben: data.bin: not UTF-8 text, not compared",
                                        f"ben: zz_big.py: past {similarity.MAX_BYTES:,} bytes of files in all, not "
                                        "compared"], found["skipped"]
    text = section(found)
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;.py" in text
    assert "Not compared: ben: " in text and "ben: data.bin: not UTF-8 text, not compared" in text


def test_the_same_failing_steps_are_grouped():
    def learner(name: str, failing: list[str]) -> dict:
        steps = [{"id": i, "status": "failed"} for i in failing] + [{"id": "9.9", "status": "not started"}]
        return {"student": name, "status": "graded", "results": {"chapters": [{"steps": steps}]}}

    rows = [learner("bo", ["4.2", "4.3", "5.1"]), learner("cy", ["4.3", "4.2", "5.1"]), learner("di", ["4.2", "4.3"]),
            *(learner(f"e{i}", ["1.1", "1.2", "1.3"]) for i in range(5))]
    assert similarity.same_failures(rows) == [{"students": ["bo", "cy"], "steps": ["4.2", "4.3", "5.1"]}]
