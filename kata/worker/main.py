"""The worker's loop: import the learner's chapters, run the calls the judge asks for, answer in plain data.

Started by ``kata/judge/proxy.py`` as ``python -I main.py '{"machinery": ..., "home": ...}'``, often
before the judge knows whose code it will run: it loads NumPy, then waits for its set-up frame (the
implementation, its folder, the limits) before it loads anything of the learner's. Requests arrive on
stdin, answers leave on the original stdout; the learner's prints go to a capped file instead. Every
answer is data (``kata/wire.py``): the judge compares it, this process decides nothing.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import linecache
import os
import signal
import sys
import traceback
import warnings


class Hung(BaseException):  # noqa: N818 - a BaseException, so a learner's ``except Exception`` lets it through
    """Raised in place of a learner function that did not return earlier in this run."""


def main() -> int:
    """Set up, then answer requests until stdin closes."""
    launched = json.loads(sys.argv[1])
    sys.path[:0] = [launched["machinery"]]
    from kata import wire  # the package is lazy: this imports nothing of the judge (NumPy, though)
    from kata.worker import limits

    channel_in = os.fdopen(os.dup(0), "rb", buffering=0)
    channel_out = os.fdopen(os.dup(1), "wb")
    sealed = probe(launched["home"], os.path.join(launched["machinery"], "kata"))  # before any learner code
    try:
        header, _ = wire.read_frame(channel_in)  # the set-up: until it comes, nothing of the learner's loads
    except EOFError:
        return 0  # a spare nobody took
    config = dict(header.get("setup", {}), **launched)
    home = config["home"]
    os.chdir(home)
    capture = os.open(os.path.join(home, "output.txt"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(capture, 1)
    os.dup2(capture, 2)
    os.close(capture)
    os.close(devnull)
    settings = {**limits.LIMITS, **config.get("limits", {})}
    sys.stdout = sys.stderr = Capped(int(settings["output_bytes"]) // 2)
    applied = limits.apply(settings)
    sys.path[:] = [config["root"], *(p for p in sys.path if p != config["machinery"])]
    warnings.simplefilter("error")  # as in the judge's pytest run: NumPy's overflow warning is an error
    server = Server(config, wire, channel_out, channel_in)
    if hasattr(signal, "setitimer"):  # a call past its time says where it is; the judge then ends this process
        signal.signal(signal.SIGPROF, server.where_now)
    wire.write_frame(channel_out, {"ready": True, "protections": applied, "pid": os.getpid(), "sealed": sealed}, [])
    while True:
        try:
            header, blobs = wire.read_frame(channel_in)
        except EOFError:
            return 0
        server.answer(header, blobs)


MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096  # mount(2)'s flags (<sys/mount.h>)


def probe(home: str, machinery: str) -> dict:
    """Try what the sandbox forbids, before any of the learner's code is loaded; say what got through.

    The judge calls a worker sealed only when every try failed (``held``): a file made in the worker's own
    folder, in the judge's code (``kata/``), in each ``site-packages`` on the path (a ``.pth`` file there runs
    in every later Python of the grader) or in Python's own folder; a remount of the worker's folder read-write
    (``mount(2)`` with ``MS_REMOUNT | MS_BIND``, which any process holding ``CAP_SYS_ADMIN`` may do);
    ``/etc/shadow`` opened; an effective capability held (``CapEff`` in ``/proc/self/status``); uid 0; a network
    interface other than loopback. Each try is undone when it succeeded. Outside a sandbox (or on a system
    without ``/proc``) some tries succeed, and that is the point: the judge is told, not left to presume.
    """
    failed = []
    status = {}
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        failed.append("no /proc/self/status to read its capabilities from")
    capeff = status.get("CapEff", "").strip()
    if capeff and int(capeff, 16):
        failed.append(f"it holds capabilities (CapEff {capeff})")
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid == 0:
        failed.append("it runs as root (uid 0)")
    folders = [home, machinery, sys.prefix, *(p for p in sys.path if p.endswith("-packages") and os.path.isdir(p))]
    for folder in dict.fromkeys(folders):
        path = os.path.join(folder, f".kata-probe-{os.getpid()}")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except OSError:
            continue
        os.unlink(path)
        failed.append(f"a write in {folder} succeeded")
    with contextlib.suppress(ImportError, OSError, AttributeError):  # no ctypes or mount(2) (not Linux): the rest stand
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.mount(None, home.encode(), None, MS_REMOUNT | MS_BIND, None) == 0:  # without MS_RDONLY: writable
            libc.mount(None, home.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)  # read-only again
            failed.append(f"a remount of {home} read-write succeeded")
    with contextlib.suppress(OSError):
        with open("/etc/shadow", "rb"):
            failed.append("/etc/shadow could be read")
    try:  # this network namespace's interfaces (read, not imported: socket's import costs tens of ms)
        with open("/proc/net/dev", encoding="ascii") as f:
            reachable = sorted({line.split(":", 1)[0].strip() for line in f if ":" in line} - {"lo"})
    except OSError:
        reachable = []
    if reachable:
        failed.append(f"the network is there ({', '.join(reachable[:3])})")
    return {"held": not failed, "failed": failed, "uid": uid, "capeff": capeff}


def _flush() -> None:
    """Flush what the learner's code printed to its file (past the output limit there is nothing more to say)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()


class HungImports:
    """Refuses at once to import a learner's module whose import did not finish earlier in this run."""

    def __init__(self, hung: dict[str, str]) -> None:
        self.hung = hung

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201 - the import system's signature
        """Raise ``Hung`` for a module that hung before; otherwise let the next finder look."""
        if name in self.hung:
            raise Hung(self.hung[name])
        return None


class Capped:
    """``print``'s target: keeps the first ``limit`` bytes of what the learner's code prints, drops the rest.

    Writes past the limit vanish instead of failing, so a flood of prints costs time, not a crash; what
    is written to the file descriptors directly still meets the output limit (``limits.py``).
    """

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.file = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115

    def write(self, text: str) -> int:
        """Keep ``text`` while there is room."""
        if self.left > 0:
            part = text[: self.left]
            self.left -= len(part)
            self.file.write(part)
            if self.left <= 0:
                self.file.write("\n… (more output was printed; not kept)\n")
        return len(text)

    def flush(self) -> None:
        """Flush what was kept."""
        self.file.flush()

    def isatty(self) -> bool:
        """Never a terminal."""
        return False

    def fileno(self) -> int:
        """The descriptor the output goes to."""
        return 1


class Layout:
    """A container argument as a call received it: its lists, tuples and dicts, and the very objects in them.

    The judge's own copy of an argument never changes (the call got a copy), so the worker compares what the
    call left against this record: an item appended, removed or replaced in a list or dict the learner was
    given (``ids[:] = out``, ``counts.pop(best)``, ``state["step"] = t``) is an edit in place, as a changed
    array is. The leaves are compared by identity (an array's numbers are compared apart, byte for byte; a
    learner's object behind a handle may change inside), or by value where a number was put back as an equal
    one.
    """

    CONTAINERS = (list, tuple, dict)
    SCALARS = (int, float, complex, bool, str, bytes, type(None))

    __slots__ = ("items", "kind")

    def __init__(self, kind: type, items: list) -> None:
        self.kind, self.items = kind, items

    @classmethod
    def of(cls, value):
        """The record of ``value``: a ``Layout`` for a container, the object itself for a leaf."""
        kind = type(value)
        if kind is dict:
            return cls(kind, [(key, cls.of(item)) for key, item in value.items()])
        if kind in cls.CONTAINERS:
            return cls(kind, [cls.of(item) for item in value])
        return value

    @classmethod
    def same(cls, record, value) -> bool:
        """Whether ``value`` is still what ``record`` says."""
        if isinstance(record, Layout):
            return record.holds(value)
        return value is record or (type(value) is type(record) and type(record) in cls.SCALARS and value == record)

    def holds(self, value) -> bool:
        """Whether ``value`` still has this layout: the same type, the same items, the same keys."""
        if type(value) is not self.kind or len(value) != len(self.items):
            return False
        if self.kind is dict:
            return all(key in value and self.same(item, value[key]) for key, item in self.items)
        return all(self.same(item, v) for item, v in zip(self.items, value, strict=True))


class OverBudget(BaseException):  # noqa: N818 - a BaseException, so a learner's ``except Exception`` lets it through
    """Raised into the learner's code when a counted call has run more lines than the judge allowed."""


class LineCounter:
    """Counts the lines of the learner's code one call runs (``sys.settrace``), up to a budget.

    Work done, not time: the same code on the same input runs the same lines on any machine, busy or not. Only
    frames of the learner's own files count (NumPy's C code, the standard library and the machinery do not);
    past the budget the call is stopped where it is (``OverBudget``), so a slow algorithm costs no more than
    the budget's worth of lines.
    """

    def __init__(self, server: Server, budget: int) -> None:
        self.server, self.budget, self.lines = server, budget, 0
        self.where: list = []
        self.mine: dict = {}  # code object -> whether it is the learner's

    def run(self, fn, args, kwargs):
        """``fn(*args, **kwargs)`` with its learner lines counted."""
        previous = sys.gettrace()
        sys.settrace(self.on_call)
        try:
            return fn(*args, **kwargs)
        finally:
            sys.settrace(previous)

    def on_call(self, frame, event, arg):  # noqa: ARG002 - sys.settrace's signature
        """A new frame: trace its lines if it runs the learner's code."""
        code = frame.f_code
        if code not in self.mine:
            self.mine[code] = self.server.is_learners(code.co_filename)
        return self.on_line if self.mine[code] else None

    def on_line(self, frame, event, arg):  # noqa: ARG002 - sys.settrace's signature
        """A line of the learner's code: count it; past the budget, stop the call here."""
        if event == "line":
            self.lines += 1
            if self.lines > self.budget:
                code = frame.f_code
                self.where = [self.server.shown(code.co_filename), frame.f_lineno, code.co_name]
                sys.settrace(None)
                frame.f_trace = None
                raise OverBudget
        return self.on_line


class Server:
    """Answers one request at a time; keeps the learner's modules and the objects behind handles."""

    def __init__(self, config: dict, wire, out, inp) -> None:
        self.wire, self.out, self.inp = wire, out, inp
        self.impl = config["impl"]
        self.root = os.path.realpath(config["root"])
        self.shown_as = config.get("shown_as", {})  # folder in the worker -> how the learner knows it
        self.hung = {tuple(h[:2]): h[2] for h in config.get("hung", []) if h[1] != "<module>"}
        self.hung_modules = {h[0]: h[2] for h in config.get("hung", []) if h[1] == "<module>"}
        sys.meta_path.insert(0, HungImports(self.hung_modules))
        self.generation = config.get("generation", 0)
        self.call_timeout = float(config.get("call_timeout", 2.0))
        self.first_look: list | None = None
        self.replying = False
        self.modules: dict[str, object] = {}
        self.objects: dict[int, object] = {}
        self.lines: int | None = None  # the lines of the learner's code the last counted call ran
        self.peak: int | None = None  # the bytes the last traced call held at most at once

    # -- requests -----------------------------------------------------------------------------------
    def answer(self, header: dict, blobs: list[bytes]) -> None:
        """Run one request and write its answer."""
        op = header.get("op")
        if hasattr(signal, "setitimer"):  # call_timeout seconds of CPU time, imports included
            self.first_look = None
            signal.setitimer(signal.ITIMER_PROF, self.call_timeout)
        try:
            if op == "import":
                module = self.module(header["module"])
                functions = [n for n, v in vars(module).items()
                             if not n.startswith("_") and callable(v) and not isinstance(v, type)]
                self.reply({"ok": None, "uses": self.uses(module), "functions": functions})
            elif op == "get":
                self.reply_value(getattr(self.module(header["module"]), header["name"]), [])
            elif op == "call":
                self.call(header, blobs)
            else:
                self.reply({"failure": f"unknown request {op!r}"})
        except Hung as hung:
            self.reply({"hung": str(hung)})
        except BaseException as err:  # noqa: BLE001 - everything the learner's code raises is reported
            self.reply({"error": self.describe(err)})
        finally:
            if hasattr(signal, "setitimer"):
                signal.setitimer(signal.ITIMER_PROF, 0)
            _flush()

    def module(self, name: str):
        """The learner's chapter module ``name``, imported once; hung functions replaced after import."""
        full = f"{self.impl}.{name}"
        if full in self.hung_modules and full not in sys.modules:
            raise Hung(self.hung_modules[full])
        if name not in self.modules:
            self.modules[name] = importlib.import_module(f"{self.impl}.{name}")
            for module in list(sys.modules.values()):
                if self.is_learners(getattr(module, "__file__", None)):
                    self.disarm(module)
        return self.modules[name]

    def uses(self, module) -> dict[str, str]:
        """The functions a chapter module took from the learner's other chapters: name -> their module."""
        import types

        found = {}
        for name, value in vars(module).items():
            home = getattr(value, "__module__", "") if isinstance(value, types.FunctionType) else ""
            if home.startswith(self.impl + ".chapter") and home != module.__name__:
                found[name] = home.removeprefix(self.impl + ".")
        return found

    def call(self, header: dict, blobs: list[bytes]) -> None:
        """Call a learner's function; answer with its result and the arguments it changed in place."""
        fn = getattr(self.module(header["module"]), header["fn"])
        arrays: list = []
        owners: list = []  # the parameter each argument array belongs to
        args = []
        for position, item in enumerate(header["args"].get("v", []) if isinstance(header["args"], dict) else []):
            start = len(arrays)
            args.append(self.wire.decode(item, blobs, self.resolve, arrays))
            owners += [position] * (len(arrays) - start)
        kwargs = {}
        tree = header["kwargs"] if isinstance(header["kwargs"], dict) else {}
        for key, item in zip(tree.get("k", []), tree.get("v", []), strict=False):
            start = len(arrays)
            kwargs[str(key)] = self.wire.decode(item, blobs, self.resolve, arrays)
            owners += [str(key)] * (len(arrays) - start)
        before = [a.tobytes() for a in arrays]
        given = [*enumerate(args), *kwargs.items()]
        layouts = {where: Layout.of(value) for where, value in given if type(value) in Layout.CONTAINERS}
        budget = header.get("lines")
        if type(budget) is int and budget > 0:  # the judge measures the work done: the learner's lines run
            counter = LineCounter(self, budget)
            with contextlib.suppress(OverBudget):
                result = counter.run(fn, args, kwargs)
            if counter.lines > budget:  # stopped there, or the learner's code caught OverBudget and went on
                self.reply({"over_budget": {"lines": counter.lines, "where": counter.where}})
                return
            self.lines = counter.lines
        elif header.get("peak") is True:  # the judge measures the memory the call holds at its peak
            result = self.traced(fn, args, kwargs)
        else:
            result = fn(*args, **kwargs)
        changed = [i for i, a in enumerate(arrays) if a.tobytes() != before[i]]
        edited = [where for where, value in given if where in layouts and not layouts[where].holds(value)]
        names = self.parameter_names(fn, len(args)) if changed or edited else []  # only an edit in place needs them

        def name(o) -> str:
            return names[o] if isinstance(o, int) and o < len(names) else str(o)

        self.reply_value(result, arrays, changed, {str(i): name(o) for i, o in enumerate(owners) if i in changed},
                         [[name(o), layouts[o].kind.__name__] for o in edited])

    def traced(self, fn, args: list, kwargs: dict):
        """``fn(*args, **kwargs)`` under ``tracemalloc``: the most memory it held at once, in bytes, is kept.

        NumPy reports its arrays' memory to ``tracemalloc``, so the peak counts every temporary array the call
        made (its arguments, decoded before, do not count). Tracing stopped by the call itself is reported as
        no measurement (``peak`` None).
        """
        import tracemalloc

        tracemalloc.start()
        try:
            result = fn(*args, **kwargs)
            self.peak = tracemalloc.get_traced_memory()[1] if tracemalloc.is_tracing() else None
        finally:
            tracemalloc.stop()
        return result

    @staticmethod
    def parameter_names(fn, count: int) -> list[str]:
        """The names of ``fn``'s first ``count`` positional parameters (``arg 1``, … where unknown)."""
        import inspect

        try:
            names = [p.name for p in inspect.signature(fn).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            names = []
        return names[:count] + [f"argument {i + 1}" for i in range(len(names), count)]

    def reply_value(self, value, arrays: list, changed: list[int] = (), names: dict | None = None,
                    edited: list[list[str]] = ()) -> None:
        """Answer with ``value`` as plain data (handles for what is not).

        ``changed`` are the argument arrays the call changed in place; ``edited`` names the arguments whose
        lists or dicts it changed (an item added, removed or replaced), each as [name, "list" or "dict" …].
        """
        encoder = self.wire.Encoder(lambda obj: self.keep(obj, arrays), alias=lambda a: self.alias(a, arrays))
        tree = {"t": "f"} if callable(value) and not isinstance(value, type) else encoder.encode(value)
        changes = {str(i): encoder.blob(self.wire.array_bytes(arrays[i])) for i in changed}
        lines, self.lines = self.lines, None
        peak, self.peak = self.peak, None
        self.reply({"ok": tree, "changed": changes, "names": names or {}, "edited": list(edited),
                    **({"lines": lines} if lines is not None else {}),
                    **({"peak": peak} if peak is not None else {})}, encoder.blobs)

    @staticmethod
    def alias(value, arrays: list) -> dict | None:
        """Whether a result array is an argument array itself, or a view into one (and where)."""
        import numpy as np

        for i, a in enumerate(arrays):
            if value is a:
                return {"r": i}
        if value.base is None:  # it owns its memory: the arguments, decoded fresh for this call, are no view of it
            return None
        for i, a in enumerate(arrays):
            if value.size and a.size and value.dtype == a.dtype and a.flags.c_contiguous \
                    and np.may_share_memory(value, a):
                offset = value.__array_interface__["data"][0] - a.__array_interface__["data"][0]
                return {"v": i, "offset": offset, "strides": list(value.strides), "shape": list(value.shape)}
        return None

    def keep(self, obj, arrays: list) -> dict:
        """Hold an object that is not plain data; the judge gets a handle to it."""
        import numpy as np

        for i, a in enumerate(arrays):
            if obj is a:
                return {"t": "r", "i": i}
        if isinstance(obj, np.ndarray):  # object arrays, structured arrays: not plain numbers
            kind = f"ndarray of dtype {obj.dtype}"
        else:
            kind = type(obj).__qualname__
        self.objects[id(obj)] = obj
        return {"t": "h", "id": id(obj), "type": kind, "g": self.generation}

    def resolve(self, tree: dict):
        """The object behind a handle, or a stand-in for a function of the judge's (a callback)."""
        if tree.get("t") == "h" and tree.get("id") in self.objects:
            return self.objects[tree["id"]]
        if tree.get("t") == "c" and type(tree.get("id")) is int:
            return self.callback(tree["id"])
        raise self.wire.WireError("a handle to an object this process does not hold")

    def callback(self, number: int):
        """A function the judge passed (``f`` of ``numerical_gradient(f, x)``): each call asks the judge."""
        server = self

        def call_the_judge(*args, **kwargs):
            encoder = server.wire.Encoder(lambda obj: server.keep(obj, []))
            tree = encoder.encode([list(args), kwargs])
            server.reply({"callback": number, "args": tree}, encoder.blobs)
            header, blobs = server.wire.read_frame(server.inp)
            if "error" in header:
                raise RuntimeError(f"the test's function raised {header['error']}")
            return server.wire.decode(header["ok"], blobs, server.resolve)

        return call_the_judge

    def reply(self, header: dict, blobs: list[bytes] = ()) -> None:
        """Write one message to the judge (the time-out alarm waits until it is written whole).

        What the learner's code printed is flushed to its file first: the judge reads that file as soon as the
        answer arrives (a flush after the answer lost the prints of a busy machine's runs).
        """
        self.replying = True
        try:
            _flush()
            self.wire.write_frame(self.out, header, list(blobs))
        finally:
            self.replying = False

    # -- where the learner's code is ------------------------------------------------------------------
    def is_learners(self, filename: str | None) -> bool:
        """Whether ``filename`` is part of the learner's code."""
        return bool(filename) and os.path.realpath(filename).startswith(self.root + os.sep)

    def shown(self, filename: str) -> str:
        """``filename`` as the learner knows it (``exercises/chapter04_attention.py``)."""
        path = os.path.realpath(filename)
        for inside, outside in self.shown_as.items():
            if path.startswith(os.path.realpath(inside) + os.sep):
                return outside + path[len(os.path.realpath(inside)):].replace(os.sep, "/")
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    def frames(self, tb) -> list[dict]:
        """The learner's frames of a traceback, outermost first."""
        out = []
        for frame in traceback.extract_tb(tb):
            if self.is_learners(frame.filename):
                out.append({"file": self.shown(frame.filename), "line": frame.lineno, "function": frame.name,
                            "source": (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()})
        return out

    def describe(self, err: BaseException) -> dict:
        """An exception as data: its type and base types by name, message, and the learner's frames."""
        frames = self.frames(err.__traceback__)
        if isinstance(err, SyntaxError) and err.filename and self.is_learners(err.filename):
            frames.append({"file": self.shown(err.filename), "line": err.lineno, "function": "<module>",
                           "source": (err.text or "").strip()})
        try:
            message = str(err)
        except BaseException:  # noqa: BLE001 - a learner's exception whose __str__ raises
            message = "(the exception's message could not be read)"
        if isinstance(err, SyntaxError):
            message = err.msg
        return {
            "type": type(err).__name__,
            "bases": [c.__name__ for c in type(err).__mro__],
            "message": message[:8000],
            "frames": frames[-12:],
        }

    def where_now(self, signum, frame) -> None:
        """When a call runs out of time: say which learner function is stuck (the judge then ends us).

        Two looks, a quarter of a second apart: the deepest of the learner's frames seen both times is
        the one that has been running all along (an endless loop in ``softmax``), not whichever short
        call a long loop happened to be in (``causal_mask`` inside a slow ``train``).
        """
        if self.replying:
            return
        frames = []
        while frame is not None:
            if self.is_learners(frame.f_code.co_filename):
                frames.append(frame)
            frame = frame.f_back
        if self.first_look is None:
            self.first_look = frames  # holding them keeps each frame object unique until the second look
            signal.setitimer(signal.ITIMER_PROF, 0.25)
            return
        earlier, self.first_look = self.first_look, None
        still = next((i for i, f in enumerate(frames) if any(f is e for e in earlier)), len(frames))
        stack = []
        for frame in frames[still:]:
            code = frame.f_code
            module = frame.f_globals.get("__name__", "")
            stack.append([module, code.co_qualname, self.shown(code.co_filename), frame.f_lineno])
        with contextlib.suppress(BaseException):  # the judge kills this process next anyway
            self.reply({"where": stack})

    def disarm(self, module) -> None:
        """Replace each function that did not return earlier in this run with one that says so at once."""
        import types

        for name, value in list(vars(module).items()):
            if not isinstance(value, types.FunctionType):
                continue
            said = self.hung.get((value.__module__, value.__qualname__))
            if said is None:
                continue
            source = f"def {value.__name__}(*args, **kwargs):\n    raise __kata_hung__({said!r})\n"
            space: dict = {}
            exec(compile(source, "<kata: did not return earlier>", "exec"), space)  # noqa: S102 - our own text
            value.__globals__["__kata_hung__"] = Hung
            try:
                value.__code__ = space[value.__name__].__code__
            except ValueError:  # a closure: replace the name instead
                stub = space[value.__name__]
                stub.__globals__["__kata_hung__"] = Hung
                setattr(module, name, stub)


if __name__ == "__main__":
    sys.exit(main())
