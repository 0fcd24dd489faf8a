"""The warm judge (``kata/judge/warm.py``): a repeated check answered by a fork of a judge already started.

Each test works in a copy of the course with its own socket folder, so a learner's (or author's) own warm
judge is never touched. What must hold: the same output and exit code as a plain pytest run, the learner's
code loaded fresh every time, an out-of-date warm judge stepping aside, Ctrl-C reaching the check, the
learner's process exit still named, and nobody else able to reach the socket.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..conftest import copy_repository, copy_solutions

PATIENCE = 120.0  # seconds to wait for what must happen before calling it a hang: a guard, never a measure of speed

pytestmark = pytest.mark.skipif(not (sys.platform.startswith("linux") and hasattr(socket, "send_fds")),
                                reason="the warm judge is Linux only; elsewhere every check runs as plain pytest")


class Course:
    """A copy of the course, its own socket folder, and the commands a nox session would run."""

    def __init__(self, root: Path, run_dir: Path) -> None:
        self.root, self.run_dir = root, run_dir
        self.env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS", "KATA_WARM")}
        self.env.update(XDG_RUNTIME_DIR=str(run_dir), KATA_WARM="1")

    def check(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """What ``nox -s chapterN`` runs on Linux."""
        return subprocess.run([sys.executable, "-S", "-m", "kata.judge.warm", "run", *args], cwd=self.root,
                              env=self.env, capture_output=True, text=True, timeout=timeout, check=False)

    def start(self, *args: str) -> subprocess.Popen:
        """The same, without waiting."""
        return subprocess.Popen([sys.executable, "-S", "-m", "kata.judge.warm", "run", *args], cwd=self.root,
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def log(self) -> str:
        """Everything the warm judges of this copy wrote to their logs."""
        return "".join(p.read_text(encoding="utf-8", errors="replace") for p in (self.run_dir / "kata").glob("*.log"))

    def socket(self) -> Path | None:
        """The copy's socket, if a warm judge has made one."""
        found = sorted((self.run_dir / "kata").glob("*.sock"))
        return found[0] if found else None

    def wait_warm(self, limit: float = PATIENCE) -> None:
        """Wait until the copy's warm judge has loaded everything."""
        deadline = time.monotonic() + limit
        while "warm: pytest" not in self.log():
            assert time.monotonic() < deadline, f"the warm judge did not warm up; its log:\n{self.log()}"
            time.sleep(0.1)

    def stop(self) -> None:
        """End the copy's warm judges.

        ``stop`` ends this environment's; a notebook's checks (through the runner, whose environment differs)
        started another, which ends within a second of its socket going.
        """
        subprocess.run([sys.executable, "-m", "kata.judge.warm", "stop"], cwd=self.root, env=self.env,
                       capture_output=True, check=False, timeout=30)
        for path in (self.run_dir / "kata").glob("*.sock"):
            path.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course copy with a slow test (for Ctrl-C) and an implementation whose process exits."""
    base = tmp_path_factory.mktemp("warm")
    root = copy_repository(base / "course")
    (root / "tests" / "test_zz_slow.py").write_text(
        "import time\n\n\ndef test_waits():\n    time.sleep(60)\n", encoding="utf-8")
    copy_solutions(root / "exits", {"chapter01_sequences": "def encode(text):\n    import os\n    os._exit(0)"})
    copy_solutions(root / "loops", {"chapter01_sequences": "def causal_pair_count(n):\n    while True:\n        pass"})
    run_dir = base / "run"
    run_dir.mkdir(mode=0o700)
    made = Course(root, run_dir)
    yield made
    made.stop()


def test_a_repeated_check_has_the_plain_runs_output_and_exit_code(course):
    first = course.check("tests/test_chapter01_sequences.py", "--steps", "--impl", "solutions")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "check " not in course.log()  # the first ran the usual way, and started the warm judge
    course.wait_warm()
    second = course.check("tests/test_chapter01_sequences.py", "--steps", "--impl", "solutions")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "check " in course.log() and "pytest tests/test_chapter01_sequences.py" in course.log()
    assert second.stdout == first.stdout
    stubs = course.check("tests/test_chapter01_sequences.py", "--steps")
    assert stubs.returncode == 1
    assert "chapter 1: 0/6 steps" in stubs.stdout


def test_the_learners_code_is_loaded_fresh_each_time(course):
    impl = copy_solutions(course.root / "mine")
    course.check("tests/test_chapter01_sequences.py", "--impl", "mine")
    course.wait_warm()
    right = course.check("tests/test_chapter01_sequences.py", "--steps", "--impl", "mine")
    assert right.returncode == 0, right.stdout
    path = impl / "chapter01_sequences.py"
    path.write_text(path.read_text(encoding="utf-8") + "\n\ndef causal_pair_count(n):\n    return 0\n",
                    encoding="utf-8")
    wrong = course.check("tests/test_chapter01_sequences.py", "--steps", "--impl", "mine")
    assert wrong.returncode == 1 and "✗" in wrong.stdout, wrong.stdout


def test_the_learners_process_ending_is_still_named(course):
    course.check("tests/test_chapter01_sequences.py", "--impl", "solutions")
    course.wait_warm()
    got = course.check("tests/test_chapter01_sequences.py", "--impl", "exits", "-x", "-q", "--tb=line")
    assert got.returncode == 1
    assert "ended the learner's process (exit code 0) (os._exit or sys.exit" in got.stdout, got.stdout


def test_ctrl_c_reaches_the_check(course):
    course.check("tests/test_chapter01_sequences.py", "--impl", "solutions")
    course.wait_warm()
    before = course.log().count("check ")
    proc = course.start("tests/test_zz_slow.py", "--steps")
    deadline = time.monotonic() + PATIENCE
    while course.log().count("check ") == before:
        assert time.monotonic() < deadline, course.log()
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 2, out  # pytest's "interrupted"
    assert "KeyboardInterrupt" in out and "interrupted (Ctrl-C) after" in out


def test_an_out_of_date_warm_judge_steps_aside(course):
    course.check("tests/test_chapter01_sequences.py", "--impl", "solutions")
    course.wait_warm()
    started = course.log().count("starting")
    test = course.root / "tests" / "test_chapter01_sequences.py"
    test.write_text(test.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    got = course.check("tests/test_chapter01_sequences.py", "--steps", "--impl", "solutions")
    assert got.returncode == 0 and "chapter 1: 6/6 steps" in got.stdout, got.stdout
    assert "out of date" in course.log()
    deadline = time.monotonic() + PATIENCE
    while course.log().count("starting") == started:  # the check started a new one for next time
        assert time.monotonic() < deadline, f"no new warm judge started; the log:\n{course.log()}"
        time.sleep(0.1)
    course.wait_warm()
    again = course.check("tests/test_chapter01_sequences.py", "--steps", "--impl", "solutions")
    assert again.stdout == got.stdout
    assert course.log().count("check ") > 0 and course.log().rstrip().splitlines()[-1].endswith("exit code 0")


def test_only_its_user_can_reach_it(course):
    course.check("tests/test_chapter01_sequences.py", "--impl", "solutions")
    course.wait_warm()
    folder = course.run_dir / "kata"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(course.socket().stat().st_mode) == 0o600


def test_switched_off_in_ci_and_with_kata_warm_0(course, monkeypatch):
    from kata.judge import warm

    monkeypatch.delenv("KATA_WARM", raising=False)
    monkeypatch.setenv("CI", "true")
    assert not warm.enabled()
    monkeypatch.delenv("CI")
    monkeypatch.setenv("KATA_WARM", "0")
    assert not warm.enabled()


def test_a_warm_judge_that_does_not_answer_is_left_alone(course):
    course.check("tests/test_chapter01_sequences.py", "--impl", "solutions")
    course.wait_warm()
    pid = int(course.log().strip().splitlines()[-1].split("[", 1)[1].split("]", 1)[0])
    checks = course.log().count("check ")
    os.kill(pid, signal.SIGSTOP)  # a wedged warm judge
    try:
        waits = ("import sys; from kata.judge import warm; warm.WAIT = 1.0; "
                 "sys.exit(warm.run(['tests/test_chapter01_sequences.py', '--steps', '--impl', 'solutions']))")
        # Output to a file: a pipe would stay open in the stopped judge's socket until it runs again.
        with (course.run_dir / "out.txt").open("w+", encoding="utf-8") as out:
            code = subprocess.run([sys.executable, "-S", "-c", waits], cwd=course.root, env=course.env,
                                  stdout=out, stderr=subprocess.STDOUT, timeout=120, check=False).returncode
            out.seek(0)
            said = out.read()
    finally:
        os.kill(pid, signal.SIGCONT)
    assert code == 0 and "chapter 1: 6/6 steps" in said, said
    time.sleep(1.0)
    assert course.log().count("check ") == checks  # the check it gave up on never ran twice


@pytest.mark.parametrize(("impl", "first"), [("exits", "1.1"), ("loops", "1.6")])
def test_a_crash_or_a_hang_costs_the_same_warm_as_cold(course, impl, first):
    """the warm judge answers a check whose learner's process exits or hangs as the cold run does, word for word"""
    course.check("tests/test_chapter01_sequences.py", "--impl", "solutions")
    course.wait_warm()
    checks = course.log().count("check ")
    warm = course.check("tests/test_chapter01_sequences.py", "--steps", "--impl", impl)
    assert course.log().count("check ") > checks, f"the warm judge did not take the check; its log:\n{course.log()}"
    cold = subprocess.run([sys.executable, "-m", "pytest", "tests/test_chapter01_sequences.py", "--steps",
                           "--impl", impl], cwd=course.root, env=dict(course.env, KATA_WARM="0"),
                          capture_output=True, text=True, timeout=120, check=False)
    assert warm.returncode == cold.returncode == 1
    assert warm.stdout == cold.stdout  # the worker it ended is not charged to the next test
    said = {"exits": "encode ended the learner's process (exit code 0) (os._exit or sys.exit",
            "loops": "causal_pair_count did not return within 2 s"}[impl]
    assert f"first failing check, in full:\n  {first} " in warm.stdout, warm.stdout
    assert said in warm.stdout


def test_kata_warm_0_stops_one_that_runs(course):
    course.check("tests/test_chapter01_sequences.py", "--impl", "solutions")
    course.wait_warm()
    assert course.socket() is not None
    stopped = course.log().count("stopped")
    off = subprocess.run([sys.executable, "-S", "-m", "kata.judge.warm", "run", "tests/test_chapter01_sequences.py",
                          "--steps", "--impl", "solutions"], cwd=course.root, env=dict(course.env, KATA_WARM="0"),
                         capture_output=True, text=True, timeout=120, check=False)
    assert off.returncode == 0 and "chapter 1: 6/6 steps" in off.stdout
    deadline = time.monotonic() + PATIENCE
    while course.log().count("stopped") == stopped:
        assert time.monotonic() < deadline, course.log()
        time.sleep(0.1)
    assert course.socket() is None


def test_stop_ends_every_warm_judge_of_the_course_however_python_was_started(course):
    """`python -m kata.judge.warm stop` (as KATA_WARM=0) ends the notebook's warm judge too, not only its own

    A notebook's checks start Python another way (the runner's PYTHONPATH), so their warm judge is another.
    """
    course.check("tests/test_chapter01_sequences.py", "--impl", "solutions")
    course.wait_warm()
    warmed, stopped = course.log().count("warm: pytest"), course.log().count("stopped")
    other = dict(course.env, PYTHONPATH=os.pathsep.join(filter(None, [str(course.root), course.env.get("PYTHONPATH")])))
    for _ in range(2):  # the first runs cold and starts the other judge
        subprocess.run([sys.executable, "-S", "-m", "kata.judge.warm", "run", "tests/test_chapter01_sequences.py",
                        "--impl", "solutions"], cwd=course.root, env=other, capture_output=True, timeout=120,
                       check=False)
    deadline = time.monotonic() + PATIENCE
    while course.log().count("warm: pytest") == warmed:
        assert time.monotonic() < deadline, course.log()
        time.sleep(0.1)
    assert len(list((course.run_dir / "kata").glob("*.sock"))) == 2, course.log()
    said = subprocess.run([sys.executable, "-m", "kata.judge.warm", "stop"], cwd=course.root, env=course.env,
                          capture_output=True, text=True, timeout=30, check=False).stdout
    assert "2 warm judge(s) of this course will stop" in said, said
    while course.log().count("stopped") < stopped + 2:
        assert time.monotonic() < deadline + PATIENCE, course.log()
        time.sleep(0.1)
    assert not list((course.run_dir / "kata").glob("*.sock"))


@pytest.mark.parametrize("impl", ["solutions", "loops"])
def test_a_notebooks_check_asks_the_warm_judge_and_gets_the_cold_runs_results(course, impl, monkeypatch, tmp_path):
    """``run_tests(warm=True)`` (a notebook's check cell): the warm judge takes it, every result as the cold run's"""
    from kata.judge.runner import run_tests

    for name, value in course.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    runs = {}
    for way in ("cold", "first", "warm"):
        if way == "warm":
            course.wait_warm()
            checks = course.log().count(": pytest ")
        (tmp_path / way).mkdir()
        run = run_tests(course.root, ["tests/test_chapter01_sequences.py"], impl=impl, timeout=2.0,
                        stream_dir=tmp_path / way, warm=way != "cold")
        runs[way] = {n: (r["status"], r["message"]) for n, r in run.results.items()}
    assert course.log().count(": pytest ") == checks + 1, f"the warm judge did not take the check:\n{course.log()}"
    assert runs["cold"] and runs["warm"] == runs["first"] == runs["cold"]
    assert {s for s, _ in runs["cold"].values()} == ({"passed"} if impl == "solutions" else {"passed", "timed out"})
