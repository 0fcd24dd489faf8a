"""Sessions for learners, instructors and authors. `nox -l` lists them.

Learners: `nox -s chapter1` … `nox -s chapterN` (pass options through after `--`, e.g.
`nox -s chapter3 -- --impl solutions`), `nox -s progress`.
Authors: `nox -s selfcheck` (the project's own test suite), `nox -s notebooks-build`, `nox -s bench`.

In a student edition (`nox -s release`: no solutions/) the authors' sessions do not exist, every description
speaks of what the edition holds, and a bare `nox` runs `progress` instead of `selfcheck`.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True

# uv trusts the system's certificate store, as pip does: behind a proxy that re-signs TLS with a CA found only
# there (university and company networks), uv's own bundled roots fail with "invalid peer certificate".
os.environ.setdefault("UV_SYSTEM_CERTS", "true")
# The sessions run uv by name. start.py puts its folder of tools (.venv-tools/: nox, and uv beside it) first on
# PATH; nox called by its own path (`.venv-tools/bin/nox -s …`) does the same here, or it would find no uv, or
# another version than the one start.py installed.
_TOOLS = Path(sys.executable).parent
if (_TOOLS / ("uv.exe" if os.name == "nt" else "uv")).is_file() and (
        os.environ.get("PATH", "").split(os.pathsep)[0] != str(_TOOLS)):
    os.environ["PATH"] = os.pathsep.join([str(_TOOLS), os.environ.get("PATH", "")])

ROOT = Path(__file__).parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from kata import process, project  # noqa: E402 - the chapters are found one way (standard library only)

PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
AUTHORS = (ROOT / "solutions").is_dir()  # the authors' edition; a student edition has no solutions/
if not AUTHORS:
    __doc__ = """Transformer Katas: `nox -l` lists the sessions; a bare `nox` shows your progress.

`nox -s chapter1` … `nox -s chapterN` checks a chapter (options after `--`, e.g. `nox -s chapter3 -- -x`);
`nox -s hint -- 4.3`, `nox -s worksheet -- 4`, `nox -s doctor` when stuck; `nox -s lab` for the notebooks.
"""


def authors_session(*args, **kwargs):
    """``nox.session`` in the authors' edition; in a student edition (no solutions/) the session does not exist."""
    if AUTHORS:
        return nox.session(*args, **kwargs)
    return args[0] if args and callable(args[0]) else (lambda function: function)


def install(session: nox.Session, *groups: str, compile_bytecode: bool = False, location: Path | None = None,
            adding: bool = False) -> None:
    """Install dependency groups, at the versions uv.lock pins, once per environment.

    Every session installs from the lock (``uv sync --locked``), so learners, the grader and CI run the same
    NumPy, pytest and matplotlib; `nox -s lock` refreshes it. A warm run skips the installer while the
    environment already holds these groups at this lock (a stamp: the lock's digest, then the groups).
    ``compile_bytecode``: compile every installed module once, at install (the suite starts Python processes
    by the thousand, and where PYTHONDONTWRITEBYTECODE is set each would compile pytest and NumPy afresh).
    ``location``: another environment than this session's own (``proofs`` runs in selfcheck's).
    ``adding``: add the groups to what the environment holds (``uv sync --inexact``) instead of making it hold
    exactly them (the course's environment, which many sessions share: ``course_env``).
    """
    location = location or getattr(session.virtualenv, "location", None)
    if location is None:  # `nox --no-venv`: the caller's environment, as it is
        return
    lock = (ROOT / "uv.lock").read_bytes() + (b" (compiled)" if compile_bytecode else b"")
    digest = hashlib.sha256(lock).hexdigest()
    stamp = Path(location) / ".kata-installed"
    said = stamp.read_text().split() if stamp.exists() else []
    have = set(said[1:]) if said[:1] == [digest] else set()
    if set(groups) <= have if adding else set(groups) == have:
        return
    wanted = sorted(set(groups) | set(said[1:])) if adding else sorted(groups)  # a new lock: what was there too
    ran = session.run_install(
        "uv", "sync", "--locked", *(["--inexact"] if adding else []), "--no-install-project", "--no-default-groups",
        *(f"--group={group}" for group in wanted), *(["--compile-bytecode"] if compile_bytecode else []),
        env={"UV_PROJECT_ENVIRONMENT": str(location)},
        external=True, silent=True)
    if ran is not None:  # None: `nox -R` skipped the install, so the stamp must not claim it
        stamp.write_text(" ".join([digest, *wanted]))


def activate(session: nox.Session, location: Path) -> str:
    """Run the session's commands in the environment at ``location``, as if activated; return its Python.

    For a session with no environment of its own (``venv_backend="none"``): the tools it starts by name are
    that environment's.
    """
    python = python_of(location)
    session.env["VIRTUAL_ENV"] = str(location)
    session.env["PATH"] = os.pathsep.join([str(python.parent), os.environ.get("PATH", "")])
    return str(python)


def python_of(location: Path) -> Path:
    """The Python of the environment at ``location``."""
    return location / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def course_env(session: nox.Session, *groups: str) -> str:
    """The course's one environment, ``.nox/course``, holding at least ``groups``; its Python.

    Every session of the learner's and the instructor's (``chapterN``, ``progress``, ``hint``, ``lab``, ``train``,
    ``grade``, ``grade-class``...) runs in it, rather than in an environment of its own: a chapter's first check
    starts at once, where each session used to make its own (about a second and 66 MB each, 24 chapters). A
    session adds the groups it needs (what another session installed stays), at the versions uv.lock pins.
    """
    location = session.env_dir.parent / "course"  # in nox's --envdir, .nox/ by default
    if not python_of(location).exists():
        session.run_install("uv", "venv", "--quiet", "--allow-existing", "--python", sys.executable, str(location),
                            external=True, silent=True)
    install(session, *groups, location=location, adding=True)
    return activate(session, location)


def chapters() -> list[tuple[int, str, str]]:
    """(number, module, title) for every chapter with an answer key in reference/."""
    found = []
    for number, path in project.chapter_files(ROOT / "reference", ".toml").items():
        title = re.search(r'^title\s*=\s*"(.*)"', path.read_text(encoding="utf-8"), re.M)
        found.append((number, path.stem, title.group(1) if title else ""))
    return found


def pytest(session: nox.Session, *args: str, **kwargs) -> None:
    """``python -m pytest ARGS`` in the course's environment, on Linux through the warm judge.

    The warm judge (``kata/judge/warm.py``) answers a repeated check in a fork of a judge that has already
    started; the first check runs the usual way and starts it (``KATA_WARM=0`` switches it off).
    """
    python = course_env(session, "test")
    session.env.update(process.ONE_THREAD)  # the judge's matrices are tiny: BLAS threads would only cost
    if sys.platform.startswith("linux"):
        session.run(python, "-S", "-m", "kata.judge.warm", "run", *args, external=True, **kwargs)
    else:
        session.run(python, "-m", "pytest", *args, external=True, **kwargs)


def _chapter_session(number: int, module: str, title: str) -> None:
    def run(session: nox.Session) -> None:
        pytest(session, f"tests/test_{module}.py", "--steps", *session.posargs)

    other = "-- --impl solutions for the reference" if AUTHORS else "-- --impl FOLDER checks another copy"
    run.__doc__ = f"Check chapter {number}, {title}, in exercises/ ({other})."
    nox.session(name=f"chapter{number}", default=False, venv_backend="none")(run)


for _number, _module, _title in chapters():
    _chapter_session(_number, _module, _title)


@nox.session(default=not AUTHORS, venv_backend="none")
def progress(session: nox.Session) -> None:
    """Every chapter in one run: steps passed per chapter, and the next step to work on."""
    files = [f"tests/test_{module}.py" for _, module, _ in chapters()]
    pytest(session, *files, "--progress", *session.posargs, success_codes=[0, 1])


SUITE_GROUPS = ("test", "docs", "lint", "classroom", "browser", "mutation", "notebook", "suite")
SUITE_ENV = ROOT / ".nox" / "selfcheck"  # the suite's one environment: selfcheck's, which proofs runs in too


def suite(session: nox.Session, *args: str, python: str = "python") -> None:
    """The project's own tests (``python -m pytest``) on ``solutions/``, two pytest-xdist workers a core.

    Two a core, not one: much of a test's time is spent waiting for the processes it starts (a judge, its
    worker, a kernel), and a second worker uses the core meanwhile. On two cores, selfcheck took 224 s instead
    of 243 s, the notebook proofs of chapters 1-6 117 s instead of 152 s, with the same CPU time.

    A test module stays in one process (its fixtures are made once); the root conftest.py says which tests may
    go their own way and hands the long ones out first. The course's own modules are compiled once into
    build/pycache (``PYTHONPYCACHEPREFIX``), never into the source folders, even where PYTHONDONTWRITEBYTECODE
    would have every one of the suite's Python processes compile them afresh.
    """
    session.env["KATA_WARM"] = "0"  # the suite's course copies come and go: no warm judge for each
    session.env.update(process.ONE_THREAD)  # NumPy's BLAS threads would only compete with the other workers
    session.env["PYTHONPYCACHEPREFIX"] = str(ROOT / "build" / "pycache")
    session.env["PYTHONDONTWRITEBYTECODE"] = None  # None: unset (the prefix keeps the source folders clean)
    session.run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--impl", "solutions", "--given", "-n",
                str(2 * process.cores()), "--dist", "loadgroup", "--no-loadscope-reorder", "--durations=15", *args,
                external=python != "python")  # the 15 slowest named at the end: where the suite's minutes go


@authors_session
def selfcheck(session: nox.Session) -> None:
    """The project's own test suite: lint, solutions pass, stubs fail, key and sync hold, docs build --strict.

    `-- --chapter 4`: chapter 4's share only (its key, sync, pages, snapshots, notebook, stubs failing,
    solutions passing, its mutants, its heavy proofs too). The heaviest proofs are `nox -s proofs`'s.
    """
    install(session, *SUITE_GROUPS, compile_bytecode=True)
    session.run("ruff", "check", ".")
    if any(arg == "--chapter" or arg.startswith("--chapter=") for arg in session.posargs):
        suite(session, *session.posargs)  # the site is of no chapter: the whole run builds it
        return
    # The docs are built once, --strict, into build/site, by tests/test_docs_site.py (beside the other tests),
    # which then scans that build.
    session.env["KATA_SITE"] = str(ROOT / "build" / "site")
    suite(session, "-m", "not proof", *session.posargs)


@authors_session(default=False, venv_backend="none")
def proofs(session: nox.Session) -> None:
    """The suite's heaviest proofs, left out of selfcheck to keep it quick; `.ci/run` runs both.

    Every listed equivalent mutant still survives, the tampering attacks earn nothing, a class graded in
    shards merges into the same gradebook, and the like: the tests marked `proof`. They run in selfcheck's
    environment (the suite's one, at the same locked versions; made here when it is missing), so `.ci/run`
    installs the suite once.
    """
    suite(session, "-m", "proof", *session.posargs, python=in_suite_env(session))


def in_suite_env(session: nox.Session) -> str:
    """For a session with no environment of its own: selfcheck's, made or brought to the lock; its Python.

    `proofs` and `docs-browser` are the rest of the suite `.ci/run` runs after selfcheck: they run in its
    environment (every dependency group, at the locked versions) rather than installing the same again.
    """
    if python_of(SUITE_ENV).exists():
        install(session, *SUITE_GROUPS, compile_bytecode=True, location=SUITE_ENV)
    else:
        session.run(sys.executable, "-m", "nox", "--noxfile", str(ROOT / "noxfile.py"), "-s", "selfcheck",
                    "--install-only", external=True)
    return activate(session, SUITE_ENV)


@authors_session(default=False)
def mutation(session: nox.Session) -> None:
    """Mutation testing: mutmut's mutants of solutions/chapterNN_*.py against that chapter's tests: `-- 4`.

    Reports killed / survived per chapter and a line per survivor (`-- 4 5 --json out.json`, `-- --help`;
    `-- 4 --record` writes chapter 4's figures into tests/mutants/chapter04.toml and CONTRIBUTING.md's table);
    survivors that cannot change behaviour are listed in tests/mutants/chapterNN.toml. Takes minutes.
    """
    install(session, "test", "mutation")
    session.run("python", "scripts/mutation.py", *session.posargs)


@authors_session(venv_backend="none", default=False)
def lock(session: nox.Session) -> None:
    """Refresh uv.lock to the newest versions pyproject.toml allows (`-- --upgrade-package numpy` for one)."""
    session.run("uv", "lock", *(session.posargs or ["--upgrade"]), external=True)


@nox.session(default=False)
def lint(session: nox.Session) -> None:
    """Ruff with the Google docstring convention: a docstring cannot describe a parameter that is not there."""
    install(session, "lint")
    session.run("ruff", "check", ".", *session.posargs)


@authors_session(default=False)
def bench(session: nox.Session) -> None:
    """Benchmark a warm chapter run against bare pytest, and the capstones (KV cache, BPE, speculation): ratios.

    `-- suite`: the project's own suite instead (selfcheck, one chapter's share, proofs, docs-browser: what
    `.ci/run` runs), each one's minutes against its budget (benchmarks/bench_suite.py; `-- suite --help`).
    """
    install(session, "test")
    if session.posargs[:1] == ["suite"]:
        session.run("python", "benchmarks/bench_suite.py", *session.posargs[1:])
        return
    session.run("python", "benchmarks/bench_chapter_run.py", *session.posargs)
    session.run("python", "benchmarks/bench_gpt.py", env={"PYTHONPATH": str(ROOT)})
    session.run("python", "benchmarks/bench_serve.py", env={"PYTHONPATH": str(ROOT)})  # needs runs/gpt and its draft


@nox.session(name="bench-serve", default=False, venv_backend="none")
def bench_serve(session: nox.Session) -> None:
    """Time speculative decoding against cached generation on your GPT and its draft: `-- runs/gpt` (after serve)."""
    python = course_env(session, "test", "train")
    session.run(python, "benchmarks/bench_serve.py", *session.posargs, env={"PYTHONPATH": str(ROOT)}, external=True)


@nox.session(default=False)
def docs(session: nox.Session) -> None:
    """Build the course site into site/ (open site/index.html); `-- serve` serves it on localhost:8000."""
    install(session, "docs", "test")
    session.env["NO_MKDOCS_2_WARNING"] = "1"
    if session.posargs[:1] == ["serve"]:
        session.run("python", "-m", "mkdocs", "serve", "--dev-addr", "127.0.0.1:8000")
    else:
        session.run("python", "-m", "mkdocs", "build", "--strict", "--site-dir", "site")


@authors_session(name="docs-browser", default=False, venv_backend="none")
def docs_browser(session: nox.Session) -> None:
    """Read every page of the built site in headless Chromium (Debian's chromium package) as a learner would.

    No console error, every formula and diagram drawn, every image and internal link resolving, nothing loaded
    from another host, search working from file://; screenshots of the chapter pages in build/docs-browser/.
    Playwright drives the system's Chromium; it never downloads a browser of its own. `-- --site DIR` reads a
    site built already instead of building one (`.ci/run` passes the one selfcheck built, `build/site`).
    """
    python = in_suite_env(session)
    session.env["NO_MKDOCS_2_WARNING"] = "1"
    site, shots = "build/docs-browser/site", "build/docs-browser/screenshots"
    if "--site" in session.posargs:  # a site built already: `.ci/run` reads the one selfcheck built --strict
        built = session.posargs[session.posargs.index("--site") + 1:][:1]
        if not built or not (ROOT / built[0] / "index.html").is_file():
            session.error(f"--site {' '.join(built)}: no built site there (index.html); build one with mkdocs")
    else:
        session.run(python, "-m", "mkdocs", "build", "--strict", "--site-dir", site, external=True)
    session.run(python, "scripts/docs_browser.py", "--site", site, "--screenshots", shots, *session.posargs,
                external=True)


@authors_session(name="docs-zensical", default=False)
def docs_zensical(session: nox.Session) -> None:
    """Build the same mkdocs.yml with Zensical, Material for MkDocs' successor: a report, not a gate.

    Reports how its site differs from the MkDocs one (pages, warnings, generated content, external references);
    `-- --browser` also reads the Zensical site in headless Chromium.
    """
    install(session, "test", "docs", "zensical")
    session.env["NO_MKDOCS_2_WARNING"] = "1"
    session.run("python", "scripts/docs_zensical.py", *session.posargs)


# -- the learner's loop and course grading: kata/learner/, kata/grading/, docs/instructors.md ---------------
def _kata_tool(session: nox.Session, command: str, *groups: str) -> None:
    """Run ``python -m kata COMMAND`` with the session's arguments, in the course's environment (with ``groups``)."""
    python = course_env(session, "test", *groups)
    session.run(python, "-m", "kata", command, *session.posargs, env={"PYTHONPATH": str(ROOT)}, external=True)


@nox.session(default=False, venv_backend="none")
def watch(session: nox.Session) -> None:
    """Re-check a chapter every time you save: `nox -s watch -- 3` (add `--poll` where saves go unnoticed)."""
    _kata_tool(session, "watch")


@nox.session(default=False, venv_backend="none")
def hint(session: nox.Session) -> None:
    """The next hint for a step, one layer at a time: `nox -s hint -- 4.3` (`--all` for every layer)."""
    _kata_tool(session, "hint")


@nox.session(default=False, venv_backend="none")
def worksheet(session: nox.Session) -> None:
    """A chapter's worksheet with your numbers beside the printed and exact ones: `nox -s worksheet -- 5`."""
    _kata_tool(session, "worksheet")


@nox.session(default=False, venv_backend="none")
def train(session: nox.Session) -> None:
    """Train a transformer of your chapter 10 on real text: `nox -s train` (`-- --model gpt`: chapters 11-16)."""
    _kata_tool(session, "train", "train")


@nox.session(default=False, venv_backend="none")
def generate(session: nox.Session) -> None:
    """Continue a prompt with a trained model: `nox -s generate -- runs/zen --prompt "Beautiful" --n 200`."""
    _kata_tool(session, "generate", "train")


@nox.session(default=False, venv_backend="none")
def serve(session: nox.Session) -> None:
    """Serve your GPT faster and smaller with chapters 17-20: `nox -s serve -- runs/gpt` (docs/serve-gpt.md)."""
    _kata_tool(session, "serve", "train")


@nox.session(default=False, venv_backend="none")
def align(session: nox.Session) -> None:
    """Teach your GPT to answer with chapters 21-24: `nox -s align -- lora runs/gpt`, then `dpo` (docs/align-gpt.md)."""
    _kata_tool(session, "align", "train")


@nox.session(default=False, venv_backend="none")
def doctor(session: nox.Session) -> None:
    """What to tell a helper when stuck: versions, which code runs, which chapters import, what to run next."""
    _kata_tool(session, "doctor")


@nox.session(default=False, venv_backend="none")
def grade(session: nox.Session) -> None:
    """Grade every chapter into grade/ (results.json, junit.xml, summary.md); `-- --help` lists the options.

    Without `--impl`, exercises/ is graded with every function finished in a saved notebook in its place (read
    with ast, no cell run): the one rule the chapter sessions and doctor use (kata/learners_code.py).
    """
    python = course_env(session, "test")
    session.run(python, "-m", "kata", "grade", *session.posargs, env={"PYTHONPATH": str(ROOT)}, external=True)


@nox.session(name="notebook-answers", default=False, venv_backend="none")
def notebook_answers(session: nox.Session) -> None:
    """Your saved notebooks' answers put into a copy of exercises/, for grading: `-- --out build/notebook-answers`."""
    _kata_tool(session, "notebook-answers")


@authors_session(name="notebooks-build", default=False)
def notebooks_build(session: nox.Session) -> None:
    """Build notebooks/*.ipynb from notebooks/src/ (jupytext): `-- --check` only compares, `-- --scaffold N` starts one.

    Run it after changing a stub, an answer key or a notebook source (tests/tools/learner/test_notebooks.py fails until
    the notebooks are rebuilt). `nox -s notebook-answers` is the learners' session that reads their saved answers.
    """
    install(session, "test", "notebook")
    session.run("python", "scripts/notebooks.py", *session.posargs, env={"PYTHONPATH": str(ROOT)})


@nox.session(default=False, venv_backend="none")
def lab(session: nox.Session) -> None:
    """JupyterLab on the chapter notebooks (notebooks/): fill in a function, `kata.check(softmax)` checks it."""
    python = course_env(session, "test", "lab")
    # As root (a container, a cloud notebook), Jupyter refuses to start without --allow-root: say it once here.
    as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    session.run(python, "-m", "jupyter", "lab", f"--ServerApp.root_dir={ROOT}",
                "--LabApp.default_url=/lab/tree/notebooks", *as_root, *session.posargs, env={"PYTHONPATH": str(ROOT)},
                external=True)


@nox.session(name="grade-class", default=False, venv_backend="none")
def grade_class(session: nox.Session) -> None:
    """Grade a whole class from a roster: `nox -s grade-class -- roster.csv --out gradebook` (`-- --help`)."""
    _kata_tool(session, "grade-class", "classroom")


@authors_session(default=False, venv_backend="none")
def release(session: nox.Session) -> None:
    """Write the student edition (no solutions, with the grading workflow): `nox -s release -- DIR --tag v1`."""
    _kata_tool(session, "release")


@authors_session(name="bench-watch", default=False, venv_backend="none")
def bench_watch(session: nox.Session) -> None:
    """Benchmark `nox -s watch`: seconds from a save to the re-checked chapter, against the 0.5 s target."""
    _kata_tool(session, "bench-watch")
