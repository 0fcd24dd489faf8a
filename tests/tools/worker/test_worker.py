"""The judge's proxy and the worker: plain data across, exceptions with their place, limits that hold.

Each test writes a small implementation package and calls it through ``kata.judge.proxy.Worker``, as
the tests of a chapter do through ``ch``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import textwrap
import threading
import types

import numpy as np
import pytest

from kata import wire
from kata.judge import proxy

CODE = '''
import numpy as np


def add(a, b):
    return a + b


def loop(n):
    total = 0
    for i in range(n):
        total += i
    return total


def echo(x):
    return x


def first_row(x):
    return x[0]


def scale_in_place(x, k):
    x *= k
    return None


def pair(x):
    return x.sum(), [x.shape, {"n": x.size, "t": (1, 2.5, None, "s", True)}]


def scalars():
    return np.float32(1.5), np.int64(3), np.bool_(True), 2 ** 70


class Cache:
    def __init__(self, x):
        self.x = x


def forward(x):
    return x * 2, Cache(x)


def backward(cache):
    return cache.x + 1


def broken(x):
    y = x + undefined_name  # noqa: F821
    return y


class ShapeError(ValueError):
    pass


def picky(x):
    raise ShapeError(f"x has shape {x.shape}")


def spin():
    while True:
        pass


def calls_spin():
    return spin()


def twirl():  # an endless loop of its own (the worker remembers spin once it has hung)
    while True:
        pass


def silenced():  # turns off the worker's CPU-time alarm, then spins: only the judge's clock can stop it
    import signal

    signal.setitimer(signal.ITIMER_PROF, 0)
    signal.signal(signal.SIGPROF, signal.SIG_IGN)
    while True:
        pass


def computes(cpu_seconds):  # correct, and slow: busy for this much CPU time, then done
    import time

    start = time.process_time()
    while time.process_time() - start < cpu_seconds:
        pass
    return cpu_seconds


def quits():
    import os
    os._exit(0)


def greedy():
    return bytearray(10 * 1024**3)


def chatty():
    for _ in range(20000):
        print("x" * 1000)
    return 1


def objects():
    return np.array([object(), 1], dtype=object)


def apply(f, x):
    return f(x) * 2


def threads():  # this process's threads, NumPy imported (Linux)
    with open("/proc/self/status") as f:
        return int(next(line.split()[1] for line in f if line.startswith("Threads:")))


def exists(path):
    import os
    return os.path.exists(path)


def counted(ids):
    import collections
    return collections.Counter(zip(ids, ids[1:])), collections.defaultdict(int, a=1)


def merged_in_place(ids):
    ids[:] = ids[1:]
    return ids


def popped(counts):
    counts.pop(min(counts))
    return len(counts)


def stepped(state):
    state["step"] += 1
    return None


def moved(state):
    state["m"]["W"] = state["m"]["W"] + 1.0
    return None


def put_back(ids, state):
    ids.append(0)
    ids.pop()
    state["step"] = state["step"] + 0
    return len(ids)


class Box(dict):
    pass


def boxed():
    return Box(a=1)
'''


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    root = tmp_path_factory.mktemp("impl")
    package = root / "learner"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "chapter99_worker.py").write_text(textwrap.dedent(CODE))
    w = proxy.Worker(root, "learner", call_timeout=1.0)
    w.import_module("chapter99_worker")
    yield w
    w.close()


def call(worker, name, *args, **kwargs):
    return worker.call("chapter99_worker", name, args, kwargs)


def test_arrays_numbers_and_containers_cross_as_they_are(worker):
    a, b = np.arange(6.0).reshape(2, 3), np.ones((2, 3), dtype=np.float32)
    got = call(worker, "add", a, b)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64 and np.array_equal(got, a + b)
    total, rest = call(worker, "pair", a)
    assert total == 15.0 and isinstance(total, np.float64)
    assert rest == [(2, 3), {"n": 6, "t": (1, 2.5, None, "s", True)}]
    f32, i64, flag, big = call(worker, "scalars")
    assert type(f32) is np.float32 and type(i64) is np.int64 and type(flag) is np.bool_
    assert big == float(2**70)
    assert call(worker, "echo", [1, 2]) == [1, 2] and call(worker, "echo", (1, 2)) == (1, 2)
    assert call(worker, "echo", {256: b"ab", 0: b""}) == {256: b"ab", 0: b""}  # chapter 14's vocabularies


def test_a_result_that_is_its_argument_or_a_view_of_it_stays_so(worker):
    x = np.arange(4.0).reshape(2, 2)
    assert call(worker, "echo", x) is x
    row = call(worker, "first_row", x)
    row[0] = 99.0
    assert x[0, 0] == 99.0, "a view of the argument must write through, as it would in one process"


def test_an_argument_changed_in_place_fails_naming_the_function_and_the_argument(worker):
    x = np.ones(3)
    with pytest.raises(proxy.ChangedItsInput, match="scale_in_place changed its argument `x` in place"):
        call(worker, "scale_in_place", x, 3.0)
    assert np.array_equal(x, np.ones(3)), "the caller's array is left as it was"


@pytest.mark.parametrize(("name", "given", "named"), [
    ("merged_in_place", ([1, 2, 3],), "ids"),  # ids[:] = ...: chapter 14's merge_pair in place
    ("popped", ({(1, 2): 3, (2, 3): 1},), "counts"),
    ("stepped", ({"step": 1, "m": {}},), "state"),  # chapter 15's state["step"] += 1
    ("moved", ({"m": {"W": np.zeros(2)}},), "state"),  # an array of a dict replaced by a new one
])
def test_a_list_or_dict_changed_in_place_fails_naming_the_argument(worker, name, given, named):
    before = repr(given)
    with pytest.raises(proxy.ChangedItsInput, match=rf"{name} changed its argument `{named}` in place: an item of the (list|dict)"):
        call(worker, name, *given)
    assert repr(given) == before, "the caller's argument is left as it was"


def test_a_list_or_dict_put_back_as_it_came_passes(worker):
    assert call(worker, "put_back", [1, 2, 300], {"step": 2**70, "m": {}}) == 3


def test_the_standard_librarys_dicts_cross_as_dicts_and_a_learners_own_stays_behind_a_handle(worker):
    counts, default = call(worker, "counted", [1, 1, 1, 2])
    assert type(counts) is dict and counts == {(1, 1): 2, (1, 2): 1}
    assert type(default) is dict and default == {"a": 1}
    assert isinstance(call(worker, "boxed"), wire.Handle)


def test_objects_that_are_not_plain_data_stay_in_the_worker_behind_a_handle(worker):
    y, cache = call(worker, "forward", np.ones(2))
    assert isinstance(cache, wire.Handle) and "Cache" in repr(cache)
    assert np.array_equal(call(worker, "backward", cache), [2.0, 2.0])
    assert isinstance(call(worker, "objects"), wire.Handle), "an object array is never unpickled"


def test_a_crash_names_the_learners_file_line_and_source(worker):
    with pytest.raises(NameError) as info:
        call(worker, "broken", np.ones(2))
    assert "undefined_name" in str(info.value)
    where = proxy.where_text(info.value)
    assert "chapter99_worker.py:" in where and "y = x + undefined_name" in where


def test_a_learners_own_exception_comes_back_as_its_builtin_base(worker):
    with pytest.raises(ValueError, match=r"x has shape \(2,\)") as info:
        call(worker, "picky", np.ones(2))
    assert type(info.value).__name__ == "ShapeError"


def test_a_test_function_passed_to_the_learner_is_called_back(worker):
    assert call(worker, "apply", lambda v: v + 1, 3.0) == 8.0


def test_an_endless_loop_costs_one_timeout_then_fails_at_once_naming_the_function(worker):
    """The second call into a hung function is answered by the process at once: nothing waits for a clock.

    "At once" is told by what happened, not by how long it took on this machine: the answer names the earlier
    timeout, and the process that gave it was not stopped (a call that ran out of time ends its process).
    """
    with pytest.raises(proxy.DidNotReturn, match=r"spin did not return within 1 s"):
        call(worker, "spin")
    assert worker.proc is None, "a call that ran out of time ends the learner's process"
    with pytest.raises(proxy.DidNotReturn, match=r"calls spin did not return within 1 s earlier in this run"):
        call(worker, "calls_spin")
    answered = worker.proc
    assert answered is not None, "the process was stopped: calls_spin ran spin again and waited for the clock"
    assert np.array_equal(call(worker, "add", 1, 2), 3), "the restarted worker goes on"
    assert worker.proc is answered


# -- a busy machine ----------------------------------------------------------------------------------------------
# The judge's wall clock (``Worker.wall_limit``) is only where it starts looking: past it, it reads the learner's
# CPU time once a second (``proxy._wait_computing``). These tests control both clocks: the rule itself with a fake
# wall clock and a fake CPU clock, and a real worker with a stopped process, whose CPU clock the judge is told grows
# slowly (what a starved process on a busy machine shows). No verdict depends on how fast this machine is.

class Clocks:
    """A fake wall clock and a fake CPU clock for one ``Worker``: the answer arrives at ``answer_at`` (or never).

    ``cpu_rate`` is the CPU seconds the learner's process gets per second of wall time (1.0 computing alone,
    0.05 on a machine twenty times oversubscribed, 0 asleep or stopped).
    """

    def __init__(self, cpu_rate: float, answer_at: float | None = None) -> None:
        self.now, self.cpu_rate, self.answer_at = 0.0, cpu_rate, answer_at
        self.looks: list[float] = []

    def monotonic(self) -> float:
        """``time.monotonic``: the fake wall clock."""
        return self.now

    def wait(self, seconds: float):
        """``Worker._wait``: the answer if it comes within ``seconds``, else None once they have passed."""
        if self.answer_at is not None and self.now + seconds >= self.answer_at:
            self.now = max(self.now, self.answer_at)
            return ({"ok": "answered"}, [])
        self.now += seconds
        return None

    def cpu(self, pid: int) -> float:
        """``tree_cpu_seconds``: the CPU time the process has had by now (each look is written down)."""
        self.looks.append(self.now)
        return self.cpu_rate * self.now


@pytest.fixture
def clocked(monkeypatch, tmp_path):
    """A ``Worker`` with no process behind it whose clocks the test sets: ``clocked(cpu_rate, answer_at)``."""
    def make(cpu_rate: float, answer_at: float | None = None) -> tuple[proxy.Worker, Clocks]:
        clocks = Clocks(cpu_rate, answer_at)
        w = proxy.Worker(tmp_path, "learner", call_timeout=1.0)
        w.proc = types.SimpleNamespace(pid=-1)
        monkeypatch.setattr(w, "_wait", clocks.wait)
        monkeypatch.setattr(proxy, "time", types.SimpleNamespace(monotonic=clocks.monotonic))
        monkeypatch.setattr(proxy, "tree_cpu_seconds", clocks.cpu)
        return w, clocks
    return make


def test_a_starved_process_that_computes_is_waited_for_past_the_wall_clock(clocked):
    """a twentieth of a CPU: the answer comes at four times the wall clock, and the judge takes it"""
    w, clocks = clocked(cpu_rate=0.05, answer_at=4 * 5.0)
    assert w.wall_limit == 5.0
    assert w._wait_computing(w.wall_limit) == ({"ok": "answered"}, [])
    assert clocks.now == 20.0 and clocks.looks[0] == w.wall_limit


def test_a_process_that_stops_using_the_cpu_is_given_up_at_the_next_look(clocked):
    """asleep, waiting, stopped: no CPU time in a second past the wall clock, and the judge stops waiting"""
    w, clocks = clocked(cpu_rate=0.0, answer_at=100.0)
    assert w._wait_computing(w.wall_limit) is None
    assert clocks.now == w.wall_limit + 1.0


def test_a_process_computing_past_its_cpu_allowance_is_given_up(clocked):
    """a whole CPU past the wall clock: stopped once it has had call_timeout + GRACE more CPU seconds"""
    w, clocks = clocked(cpu_rate=1.0)
    assert w._wait_computing(w.wall_limit) is None
    allowance = w.call_timeout + proxy.GRACE  # 3 CPU seconds past the first look; looks are a second apart
    assert clocks.now == w.wall_limit + allowance + 1.0


def test_a_process_starved_for_ever_is_given_up_at_the_judges_last_deadline(clocked):
    """a hundredth of a CPU for ever: the judge's own last deadline, BUSY_MACHINE times its wall clock"""
    w, clocks = clocked(cpu_rate=0.01)
    assert w._wait_computing(w.wall_limit) is None
    assert clocks.now == pytest.approx(proxy.BUSY_MACHINE * w.wall_limit)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """A worker whose calls have 0.2 s of CPU time (its wall clock: GRACE + 0.6 s)."""
    root = tmp_path_factory.mktemp("quick")
    (root / "learner").mkdir()
    (root / "learner" / "__init__.py").write_text("")
    (root / "learner" / "chapter99_worker.py").write_text(textwrap.dedent(CODE))
    w = proxy.Worker(root, "learner", call_timeout=0.2)
    w.import_module("chapter99_worker")
    yield w
    w.close()


@contextlib.contextmanager
def stopped(worker, seconds: float, monkeypatch):
    """The worker's processes are stopped (SIGSTOP) for ``seconds``, longer than the judge's wall clock.

    Meanwhile the judge reads a CPU clock that grows a hundredth of a second at each look: what a process the
    machine is starving shows it. The judge's last deadline is taken away, so only the CPU clock decides.
    """
    from kata.process import process_tree

    tree = list(process_tree(worker.proc.pid))
    real, looks = proxy.tree_cpu_seconds, []

    def starved(pid: int) -> float | None:
        looks.append(pid)
        now = real(pid)
        return None if now is None else now + 0.01 * len(looks)

    def signal_all(number: int) -> None:
        for pid in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, number)

    monkeypatch.setattr(proxy, "tree_cpu_seconds", starved)
    monkeypatch.setattr(proxy, "BUSY_MACHINE", 10_000)
    signal_all(signal.SIGSTOP)
    timer = threading.Timer(seconds, signal_all, args=(signal.SIGCONT,))
    timer.start()
    try:
        yield looks
    finally:
        timer.cancel()
        signal_all(signal.SIGCONT)


ON_PROC = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the judge reads CPU time in /proc")


@ON_PROC
def test_correct_code_on_a_busy_machine_is_not_stopped_by_the_judges_wall_clock(quick, monkeypatch):
    """the learner's process is stopped past the judge's wall clock, computing slowly by its CPU clock, and passes"""
    assert call(quick, "add", 1, 1) == 2  # a worker running
    with stopped(quick, quick.wall_limit + 1.0, monkeypatch) as looks:
        assert call(quick, "computes", 0.05) == 0.05
    assert looks, "the call came back before the judge's wall clock: nothing was tested"


@ON_PROC
def test_an_endless_loop_on_a_busy_machine_is_still_found_where_it_loops(quick, monkeypatch):
    """stopped past the judge's wall clock, the loop's own alarm (0.2 s of CPU time) comes later, and says where"""
    assert call(quick, "add", 1, 1) == 2
    with stopped(quick, quick.wall_limit + 1.0, monkeypatch) as looks, \
            pytest.raises(proxy.DidNotReturn, match=r"it was running twirl at .*chapter99"):
        call(quick, "twirl")
    assert looks, "the call came back before the judge's wall clock: nothing was tested"


@ON_PROC
def test_a_loop_that_silences_the_alarm_is_stopped_within_its_cpu_allowance(quick, monkeypatch):
    """A loop with the worker's alarm turned off is stopped by the judge, past its wall clock, by CPU time.

    Measured as the judge measures it, in the learner's CPU time: at most ``call_timeout + GRACE`` past the first
    look, and one look more (a look is a second apart: at most a second of CPU). The same verdict at any load.
    """
    seen: list[float] = []
    real = proxy.tree_cpu_seconds

    def watched(pid: int) -> float | None:
        now = real(pid)
        if now is not None:
            seen.append(now)
        return now

    monkeypatch.setattr(proxy, "GRACE", 0.3)  # a cheaper test: 0.9 s of wall clock, 0.5 s of CPU allowance
    monkeypatch.setattr(proxy, "tree_cpu_seconds", watched)
    with pytest.raises(proxy.DidNotReturn, match=r"silenced did not return within 0.2 s"):
        call(quick, "silenced")
    assert seen, "the judge never looked at the learner's CPU time past its wall clock"
    assert seen[-1] - seen[0] <= quick.call_timeout + proxy.GRACE + 1.0, f"{seen[-1] - seen[0]:.2f} s of CPU"
    assert call(quick, "add", 1, 2) == 3, "the restarted worker goes on"


def test_an_exit_in_the_learners_code_ends_only_that_call(worker):
    with pytest.raises(proxy.WorkerCrashed, match="ended the learner's process"):
        call(worker, "quits")
    assert call(worker, "add", 2, 2) == 4


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="resource limits need POSIX")
def test_ten_gigabytes_are_refused(worker):
    with pytest.raises(MemoryError):
        call(worker, "greedy")


def test_a_flood_of_prints_is_cut_and_costs_nothing_else(worker, capsys):
    assert call(worker, "chatty") == 1
    shown = capsys.readouterr().out
    assert len(shown) <= 70_000


def test_nothing_but_plain_data_is_decoded():
    header = {"ok": {"t": "x"}}
    with pytest.raises(wire.WireError):
        wire.decode(header["ok"], [], lambda t: None)
    pickled = __import__("pickle").dumps(np.array([1, 2], dtype=object))
    with pytest.raises(wire.WireError):
        wire.read_array(pickled)
    import io
    buf = io.BytesIO()
    np.save(buf, np.array([object()], dtype=object), allow_pickle=True)
    with pytest.raises(wire.WireError):
        wire.read_array(buf.getvalue())


def test_the_report_lists_the_protections(worker):
    assert "separate process" in worker.protections
    assert any(p.startswith(("bubblewrap", "no sandbox")) for p in worker.protections)


def test_sealed_the_worker_sees_neither_the_course_nor_other_files(worker, tmp_path):
    """in the sandbox, the course's reference, answer key and tests, and other files, are not there at all"""
    from ..conftest import ROOT

    if not any(p.startswith("bubblewrap") for p in worker.protections):
        pytest.skip("no sandbox on this machine: the report says 'no sandbox' (tested in test_attacks.py)")
    secret = tmp_path / "another-checkout" / "solutions"
    secret.mkdir(parents=True)
    for path in (ROOT / "solutions", ROOT / "reference", ROOT / "tests", secret):
        assert not call(worker, "exists", str(path)), path
    assert call(worker, "exists", "/usr/lib")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="counts threads in /proc (Linux)")
def test_numpy_runs_on_one_thread_in_the_worker_and_in_the_judges_pytest(worker, monkeypatch):
    """the worker and the judge's child pytest start NumPy's BLAS with one thread (``kata.process.ONE_THREAD``)

    OpenBLAS otherwise starts a thread per core at ``import numpy`` (twice the CPU time of the import on two
    cores) and keeps it spinning beside matrices this small; on a one-core machine this cannot fail.
    """
    import subprocess
    import sys

    from kata.judge import runner
    from kata.process import ONE_THREAD

    from ..conftest import ROOT

    assert call(worker, "threads") == 1
    for name in ONE_THREAD:  # as if the grader's own environment said nothing (the suite's says one thread)
        monkeypatch.delenv(name, raising=False)
    env = runner.child_env(ROOT)
    count = ("import numpy\nwith open('/proc/self/status') as f:\n"
             "    print(next(l.split()[1] for l in f if l.startswith('Threads:')))")
    out = subprocess.run([sys.executable, "-c", count], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1", f"the judge's pytest would run NumPy on {out.stdout.strip()} threads"


def test_arrays_are_read_without_evaluating_their_header():
    """NumPy's own headers take the fast path (a regular expression, nothing compiled); others fall back"""
    for a in (np.ones(2), np.arange(6.0).reshape(2, 3), np.asfortranarray(np.arange(6.0).reshape(2, 3)),
              np.array(3.5), np.zeros((0, 3)), np.array([True, False]), np.arange(5, dtype=np.int32),
              np.ones((2, 2), dtype=np.complex128)):
        blob = wire.array_bytes(a)
        fast = wire._read_plain(blob)
        assert fast is not None and fast.dtype == a.dtype and fast.shape == a.shape and np.array_equal(fast, a)
        assert fast.flags.writeable
    odd = wire.array_bytes(np.ones(3)).replace(b"'shape': (3,), }", b"'shape': (9,), }")
    assert wire._read_plain(odd) is None, "a header that does not fit its data is not taken"
    with pytest.raises(wire.WireError):
        wire.read_array(odd)


def test_arrays_are_written_as_numpy_writes_them():
    """the header written once per dtype, shape and order: byte for byte NumPy's write_array, views and odd shapes too"""
    import io

    for a in (np.ones(2), np.arange(6.0).reshape(2, 3), np.asfortranarray(np.arange(6.0).reshape(2, 3)),
              np.array(3.5), np.zeros((0, 3)), np.zeros((2, 0, 3)), np.asfortranarray(np.zeros((2, 0, 3))),
              np.array([True, False]), np.arange(5, dtype=np.int32), np.ones((2, 2), dtype=np.complex128),
              np.arange(24.0).reshape(2, 3, 4)[:, ::2], np.arange(10.0)[::3], np.arange(12.0).reshape(3, 4).T,
              np.ones((3, 1)).T, np.ones(3, dtype=">f8"), np.ones((1,) * 32), np.array(np.int64(5))):
        expected = io.BytesIO()
        np.lib.format.write_array(expected, a, allow_pickle=False)
        assert wire.array_bytes(a) == expected.getvalue(), (a.shape, a.dtype, a.strides)
        assert np.array_equal(wire.read_array(wire.array_bytes(a)), a)


def test_a_worker_sending_long_headers_cannot_fill_the_judges_memory():
    """a header padded to 8 kB still reads (NumPy's reader) and is not kept; one of 60 kB is refused, as NumPy does"""
    import struct

    blob = wire.array_bytes(np.arange(3.0))
    (size,) = struct.unpack("<H", blob[8:10])
    header, data = blob[10:10 + size], blob[10 + size:]

    def padded_to(n: int) -> bytes:
        text = header[:-1] + b" " * (n - len(header)) + b"\n"
        return blob[:8] + struct.pack("<H", len(text)) + text + data

    before = wire._plain_header.cache_info().currsize
    for k in range(20):  # twenty distinct headers of 8 kB
        assert np.array_equal(wire.read_array(padded_to(8_000 + k)), np.arange(3.0))
    assert wire._plain_header.cache_info().currsize == before
    with pytest.raises(wire.WireError, match="not valid .npy data"):
        wire.read_array(padded_to(60_000))


def test_a_counted_call_gives_the_lines_of_the_learners_code_it_ran(worker):
    got, lines = proxy.FunctionProxy(worker, "chapter99_worker", "add").counted(1000, np.ones(2), np.ones(2))
    assert np.array_equal(got, [2.0, 2.0]) and lines == 1, "add is one line: `return a + b`"
    loop = proxy.FunctionProxy(worker, "chapter99_worker", "loop")
    assert loop.counted(1000, 10) == (45, 2 * 10 + 3), "total = 0, 11 loop heads, 10 bodies, the return"
    assert loop.counted(1000, 20)[1] == 2 * 20 + 3, "the same code on another input: the count follows the work"
    with pytest.raises(proxy.OverBudget, match="loop ran more than 50 lines of your code") as info:
        loop.counted(50, 10**9)
    assert info.value.lines == 51 and "chapter99_worker.py:" in info.value.where
    assert call(worker, "add", np.ones(1), np.ones(1)) == [2.0], "the next call runs as usual, uncounted"
