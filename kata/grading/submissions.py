"""Fetch one learner's submission: the commit to grade and its ``exercises/`` folder, and nothing else.

- A repository is a git URL, an ``owner/name`` on GitHub (``--git-host``), or a local path.
- Without a deadline the default branch's head is graded, from a shallow clone (depth 1).
- With a deadline, the last commit on the default branch whose committer date is at or before it (from a
  clone without file contents, ``--filter=blob:none``); later commits are counted for the gradebook's note.
  A committer date is written by the learner's own git, so it can be forged: ``deadline.py`` records the
  heads at the deadline instead (``--snapshot``), with this same fetch, and grades them later (``--at``).
- Only regular files under ``exercises/``, and the chapter notebooks ``notebooks/*.ipynb``, are taken
  out of the commit (nothing else of the learner's: their tests, ``conftest.py`` and ``grading.toml`` never
  reach the grader). A symbolic link or a submodule is left out and named in ``dropped``, so the gradebook
  says why a chapter was not graded.
- Every file is measured before it is read (``git ls-tree -l``: a 1 GiB file of zeros is 1 MB in git and
  would otherwise be read whole): a file over ``MAX_FILE_BYTES`` is not graded, and Python files first,
  then the others, are taken while they fit in ``MAX_TOTAL_BYTES`` and ``MAX_FILES``. Each file left
  out is named in ``dropped`` too.
- Every branch is fetched (its commits, not its files): a branch whose head is newer than the graded
  commit is named in ``branches`` (only the default branch is graded).
- Times in notes are shown in the deadline's time zone (the learner's own zone can read as "before").
- git never asks for a password (a private repository without a token is "missing", not a hang); a token
  in ``$KATA_GIT_TOKEN`` is sent as an HTTP header to the git host only, never written to disk or a report.

Every failure is a ``Missing`` with its reason, never an exception: one learner cannot stop a class.
"""

from __future__ import annotations

import base64
import datetime as dt
import os
import re
import shutil
import subprocess
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from ..process import kill_tree

TOKEN_VARIABLE = "KATA_GIT_TOKEN"
# The course's exercises/ is about 100 KB in 11 files: the limits leave room for a learner's own modules and
# notes, and keep what one learner can make the grader read, copy and hand to every worker restart small.
MAX_FILES = 200
MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 8 * 1024 * 1024
# A path in the repository longer than this is not graded. The course's own are under 40 bytes; 255 leaves room
# for a learner's folders, keeps every name within the 255 bytes a file system allows, and keeps the copies
# the grader writes (students/<name>/graded/...) far below the 4,096 of a whole path, wherever --out is.
MAX_PATH_BYTES = 255
# Lists a note holds (newer branches, files not graded): the first ones are named, the rest counted, so a
# repository of 20,000 branches is one line of the gradebook, not 2.5 MB.
MAX_LISTED = 10
_OWNER_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")

# Hosts where an owner's and a repository's names are the same whatever their case: github.com/Alice/Katas is
# github.com/alice/katas (GitHub, GitLab and Bitbucket all say so). Elsewhere the path's case is kept: a plain
# git server on Linux tells /srv/git/Ana from /srv/git/ana. The --git-host's host is taken as one of these too
# (owner/name repositories live there: GitHub, or a GitHub Enterprise server).
CASE_INSENSITIVE_HOSTS = frozenset({"github.com", "gitlab.com", "bitbucket.org"})
_DEFAULT_PORTS = {"https": 443, "http": 80, "ssh": 22, "git+ssh": 22, "ssh+git": 22, "git": 9418}
# git's "scp-like" address, user@host:path (git@github.com:owner/name.git).
_SCP = re.compile(r"^[\w.-]+@([\w.-]+):(.*)$")


@dataclass
class Submission:
    """What will be graded: ``exercises`` (a folder holding the learner's exercises/ at ``commit``)."""

    commit: str
    committed_at: str
    exercises: Path
    note: str = ""
    late: int | None = None  # commits on the default branch after the deadline (None: no deadline)
    dropped: list[str] = field(default_factory=list)  # "exercises/x.py: symbolic link", left out
    branches: list[str] = field(default_factory=list)  # "work (abc1234, 2027-…)": newer heads elsewhere
    notebooks: Path | None = None  # the learner's notebooks/ (chapter notebooks only), when there are any
    branch: str | None = None  # the default branch's name ("main"), None when HEAD names no branch


@dataclass
class Missing:
    """Nothing to grade, and why."""

    reason: str
    commit: str | None = None
    committed_at: str | None = None


def source(repo: str, base: Path, git_host: str = "https://github.com") -> str:
    """Where git fetches ``repo`` from: a URL as it is, ``owner/name`` on the git host, or a local path."""
    if "://" in repo or _SCP.match(repo):
        return repo
    path = Path(repo).expanduser()
    for candidate in ([path] if path.is_absolute() else [base / path, Path.cwd() / path]):
        if _exists(candidate):
            return str(candidate.resolve())
    if _OWNER_NAME.fullmatch(repo):
        return f"{git_host.rstrip('/')}/{repo.removesuffix('.git')}.git"
    return str(path if path.is_absolute() else base / path)


def _exists(path: Path) -> bool:
    """Whether ``path`` exists; a path the system cannot even look up (too long, say) does not."""
    try:
        return path.exists()
    except OSError:
        return False


def local_path(place: str) -> Path | None:
    """The folder a local ``place`` (a path or a ``file://`` URL) names, resolved as git would read it; else None.

    git looks for ``PATH/.git``, ``PATH``, ``PATH.git/.git`` and ``PATH.git`` in that order: the first that is a
    folder is the repository. Symbolic links are followed, and the ``.git`` folder of a working tree stands for
    the working tree (``/c/ana/.git/`` is ``/c/ana``).
    """
    if "://" in place:
        parts = urllib.parse.urlsplit(place)
        if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
            return None
        place = urllib.parse.unquote(parts.path)
    elif _SCP.match(place):
        return None
    given = Path(os.path.realpath(os.path.expanduser(place)))
    found = given
    for candidate in (given / ".git", given, Path(f"{given}.git") / ".git", Path(f"{given}.git")):
        try:
            if candidate.is_dir():
                found = Path(os.path.realpath(candidate))
                break
        except OSError:  # a name too long to look up: nothing there
            break
    return found.parent if found.name == ".git" else found


def identity(place: str, git_host: str = "https://github.com") -> str:
    """One repository's identity however it is written: two learners whose identities are equal share one.

    ``place`` is where git fetches from (:func:`source`). A local repository is its folder (:func:`local_path`):
    ``learners/ana``, ``learners/ana/``, ``learners/ana/.git/`` and a link to it are one. A URL keeps only what
    names the repository: not its scheme (https, ssh, git), user, password, default port, a leading ``www.``,
    the case of its host, a trailing ``/`` or ``.git``, nor, on :data:`CASE_INSENSITIVE_HOSTS` and the git host,
    the case of its path. ``https://github.com/o/r``, ``ssh://git@github.com/o/r.git``,
    ``https://www.github.com:443/O/R/`` and ``git@github.com:o/r.git`` are all ``//github.com/o/r``; a port that
    is not its scheme's default stays (``//git.example.edu:8443/o/r``). Local folders start with ``/``, URLs
    with ``//``: the two never meet.
    """
    folder = local_path(place)
    if folder is not None:
        return str(folder)
    scp = _SCP.match(place)
    if scp:
        scheme, host, port, path = "ssh", scp.group(1), None, scp.group(2)
    else:
        parts = urllib.parse.urlsplit(place)
        scheme, netloc, path = parts.scheme.lower(), parts.netloc.rpartition("@")[2], parts.path
        host, _, port = netloc.rpartition(":") if re.search(r":\d*$", netloc) else (netloc, "", "")
        port = int(port) if port else None
    host = host.rstrip(".").lower().removeprefix("www.")
    where = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    path = "/".join(p for p in urllib.parse.unquote(path).split("/") if p)
    path = path.removesuffix(".git").rstrip("/")
    if host in CASE_INSENSITIVE_HOSTS or host == _host(git_host):
        path = path.casefold()
    return f"//{where}/{path}"


def _host(url: str) -> str:
    return (urllib.parse.urlsplit(url).hostname or "").rstrip(".").removeprefix("www.")


def shown(repo: str) -> str:
    """``repo`` as it may appear in a report: without a user name or token in a URL."""
    if "://" not in repo:
        return repo
    parts = urllib.parse.urlsplit(repo)
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def shortened(text: str, limit: int = 160) -> str:
    """``text`` whole when it is at most ``limit`` characters; else its start, "…", its end and its length.

    A learner's path or branch name can be thousands of characters long: a note names it in one short line
    that still shows where it starts and how it ends.
    """
    if len(text) <= limit:
        return text
    room = max(limit - 28, 8)
    return f"{text[:room * 2 // 3]}…{text[-(room // 3):]} ({len(text):,} characters)"


def _env(git_host: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GCM_INTERACTIVE="never", GIT_ASKPASS="echo", SSH_ASKPASS="echo",
               GIT_SSH_COMMAND="ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new",
               GIT_CONFIG_NOSYSTEM="1", GIT_LFS_SKIP_SMUDGE="1")
    token = os.environ.get(TOKEN_VARIABLE, "")
    if token:
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0=f"http.{git_host.rstrip('/')}/.extraheader",
                   GIT_CONFIG_VALUE_0=f"AUTHORIZATION: basic {basic}")
    return env


class _GitFailed(Exception):
    pass


def _git(args: list[str], *, cwd: Path | None, env: dict, until: float, data: bytes | None = None) -> bytes:
    left = until - time.monotonic()
    if left <= 0:
        raise _GitFailed("timed out")
    proc = subprocess.Popen(["git", *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.PIPE if data else subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = proc.communicate(data, timeout=left)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        proc.communicate()
        raise _GitFailed("timed out") from None
    if proc.returncode != 0:
        lines = [line for line in err.decode(errors="replace").splitlines() if line.strip()]
        fatal = [line for line in lines if line.startswith(("fatal:", "error:", "remote:"))] or lines
        raise _GitFailed(" ".join(fatal[-2:])[:300] or f"git {args[0]} failed (exit code {proc.returncode})")
    return out


def fetch(repo: str, target: Path, *, base: Path, deadline: dt.datetime | None = None, timeout: float = 120,
          git_host: str = "https://github.com") -> Submission | Missing:
    """Clone ``repo`` into ``target/clone``, pick the commit, and write its ``exercises/`` into ``target``.

    Args:
        repo: the roster's repo value.
        target: an empty folder for this learner (the clone and the extracted exercises go inside).
        base: the folder relative local paths are resolved against (the roster's).
        deadline: grade the last commit at or before it (committer date); None for the branch head.
        timeout: seconds the whole fetch may take.
        git_host: where ``owner/name`` repositories live.

    Returns:
        The submission, or why there is none.
    """
    until = time.monotonic() + timeout
    url = source(repo, base, git_host)
    env = _env(git_host)
    clone = target / "clone"
    local = not ("://" in url or "@" in url.split("/", 1)[0])
    if local:
        try:
            if not Path(url).exists():
                return Missing(f"unreachable: no repository at {shortened(url)}")
        except OSError as err:  # a path the system cannot look up: one short line, not the path in full
            return Missing(f"unreachable: {(err.strerror or 'cannot be read').lower()}: {shortened(url)}")
    args = ["clone", "--quiet", "--no-checkout", "--no-single-branch", "--no-tags"]
    if deadline is None and not local:
        args += ["--depth", "1"]
    elif not local:
        args += ["--filter=blob:none"]
    try:
        _git([*args, "--", url, str(clone)], cwd=target, env=env, until=until)
    except _GitFailed as err:
        token = os.environ.get(TOKEN_VARIABLE)
        reason = str(err).replace(token, "***") if token else str(err)
        if reason == "timed out":
            return Missing(f"unreachable: git clone took longer than {timeout:g} s")
        return Missing(f"unreachable: git clone failed: {reason}")

    def git(*args: str) -> bytes:
        return _git(list(args), cwd=clone, env=env, until=until)

    try:
        head = git("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except _GitFailed:
        return Missing("empty repository: no commit on the default branch")
    try:
        branch = git("symbolic-ref", "--quiet", "--short", "HEAD").decode(errors="replace").strip()  # any bytes
    except _GitFailed:
        branch = None  # a detached HEAD: the commit is still graded
    zone = deadline.tzinfo if deadline is not None else None
    try:
        if deadline is None:
            commit = head.decode().strip()
            stamp = git("show", "-s", "--format=%cI", commit).decode().strip()
            note = ""
            late = None
        else:
            log = git("log", "--format=%H %ct %cI", "HEAD").decode().split("\n")
            entries = [(h, int(ct), iso) for h, ct, iso in (line.split(" ", 2) for line in log if line.strip())]
            limit = deadline.timestamp()
            before = [e for e in entries if e[1] <= limit]
            after = [e for e in entries if e[1] > limit]
            if not before:
                first = min(entries, key=lambda e: e[1])
                return Missing(f"no commit at or before the deadline (the first is from {when(first[1], zone)})")
            commit, _, stamp = max(before, key=lambda e: e[1])  # max keeps the first (newest in git's order)
            note = ""
            late = len(after)
            if after:
                latest = max(after, key=lambda e: e[1])
                note = (f"{len(after)} later commit{'s' if len(after) != 1 else ''} after the deadline not graded "
                        f"(latest {latest[0][:7]}, {when(latest[1], zone)})")
            skipped = _out_of_order(git, commit, limit)
            if skipped:  # dated before the deadline, yet after the graded commit in history: said, never silent
                newest = skipped[0]
                note = "; ".join(filter(None, [note, (
                    f"{len(skipped)} commit{'s' if len(skipped) != 1 else ''} after the graded one in history "
                    f"{'are' if len(skipped) != 1 else 'is'} dated before the deadline, yet later than a commit "
                    f"dated after it (dates out of order: a clock behind, or a date set by hand): not graded "
                    f"(newest {newest[0][:7]}, dated {when(newest[1], zone)}; --snapshot/--at goes by when work "
                    "was fetched instead)")]))
        branches = _newer_branches(git, commit, deadline, branch)
        listing = git("ls-tree", "-r", "-l", "-z", "--full-tree", commit, "--", "exercises", "notebooks").decode(
            errors="replace")
    except _GitFailed as err:
        return Missing(f"could not read the repository: {err}")
    found, dropped = [], []
    for entry in filter(None, listing.split("\0")):
        meta, _, path = entry.partition("\t")
        mode, kind, sha, size = meta.split()
        if path.startswith("notebooks/") and not (path.count("/") == 1 and path.endswith(".ipynb")):
            continue  # only the chapter notebooks: anything else there is never read
        if any(p in ("..", "", ".") for p in path.split("/")):
            dropped.append(f"{named(path)}: unsafe path")
        elif len(path.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
            dropped.append(f"{named(path)}: path too long (over the {MAX_PATH_BYTES} bytes graded)")
        elif kind == "blob" and mode in ("100644", "100755"):
            found.append((path, sha, int(size)))
        else:
            dropped.append(f"{named(path)}: {_KINDS.get(mode, 'special file')}")
    files, left_out = choose(found)
    dropped = listed(sorted(dropped + left_out), "files not graded")
    if not any(path.startswith("exercises/") for path, _, _ in found):
        return Missing(f"no exercises/ folder at commit {commit[:7]}", commit, stamp)
    if not any(path.startswith("exercises/") for path, _, _ in files):
        return Missing(f"nothing to grade in exercises/ at commit {commit[:7]}: {'; '.join(dropped)}", commit,
                       stamp)
    exercises = target / "exercises"
    try:
        for path, sha, size in files:
            data = git("cat-file", "blob", sha)
            if len(data) != size:  # git said otherwise a moment ago: not the file that was measured
                raise _GitFailed(f"{path} changed size while it was read")
            out = target.joinpath(*Path(path).parts)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
    except _GitFailed as err:
        return Missing(f"could not read exercises/ at commit {commit[:7]}: {err}", commit, stamp)
    except OSError as err:  # the grader's disk, not the learner's code: said in one line, the path shortened
        return Missing(f"could not write exercises/ at commit {commit[:7]}: {err.strerror or type(err).__name__}: "
                       f"{named(path)}", commit, stamp)
    shutil.rmtree(clone, ignore_errors=True)
    notebooks = target / "notebooks"
    return Submission(commit=commit, committed_at=stamp, exercises=exercises, note=note, late=late,
                      dropped=dropped, branches=branches, notebooks=notebooks if notebooks.is_dir() else None,
                      branch=branch)


_KINDS = {"120000": "symbolic link", "160000": "submodule"}


def shown_name(name: str) -> str:
    r"""A learner's file or branch name as text a terminal, a CSV cell and a report show as it is written.

    Control characters (a newline, ESC and its colour codes) are written as escapes, ``\n`` and ``\x1b``:
    a name is data, never a command to the instructor's terminal or a new line in a note.
    """
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in name)


def named(name: str) -> str:
    """A learner's file or branch name in a note: printable (:func:`shown_name`) and at most 160 characters."""
    return shortened(shown_name(name))


def listed(items: list[str], what: str) -> list[str]:
    """The first ``MAX_LISTED`` items, and past them one more: ``"and 19,990 more <what>"``."""
    if len(items) <= MAX_LISTED:
        return list(items)
    return [*items[:MAX_LISTED], f"and {len(items) - MAX_LISTED:,} more {what}"]


def when(timestamp: int, zone: dt.tzinfo | None) -> str:
    """A commit time (seconds since the epoch) in ISO 8601, in ``zone`` (the deadline's), else in UTC."""
    return dt.datetime.fromtimestamp(timestamp, zone or dt.UTC).isoformat()


def _out_of_order(git, commit: str, limit: float) -> list[tuple[str, int]]:  # noqa: ANN001 - fetch's git
    """Commits after ``commit`` on the way to HEAD that are dated at or before ``limit``: (id, time), newest first.

    The deadline picks the latest committer date at or before it; a commit that follows a later-dated one in
    history (a clock behind, or a forged date) is then not graded, and is named instead of left out silently.
    """
    if not commit:
        return []
    lines = git("log", "--ancestry-path", "--format=%H %ct", f"{commit}..HEAD").decode().split("\n")
    found = [(h, int(t)) for h, t in (line.split(" ", 1) for line in lines if line.strip())]
    return [(h, t) for h, t in found if t <= limit]


def _newer_branches(git, commit: str, deadline: dt.datetime | None, default: str | None) -> list[str]:  # noqa: ANN001
    """Other branches whose head is newer than the graded commit: ``"work (abc1234, <time>)"``, newest first.

    The newest ``MAX_LISTED`` are named, the others counted (``"and 19,990 more newer branches"``).

    Only a note: when git cannot say (a detached head, ``default`` None), there is none, and the grade goes on.
    """
    if default is None:
        return []
    try:
        graded = int(git("show", "-s", "--format=%ct", commit).decode().strip())
        refs = git("for-each-ref", "--format=%(refname:lstrip=3) %(objectname) %(committerdate:unix)",
                   "refs/remotes/origin").decode().splitlines()
    except (_GitFailed, ValueError):
        return []
    zone = deadline.tzinfo if deadline is not None else None
    found = []
    for line in refs:
        if line.count(" ") < 2:
            continue
        name, sha, stamp = line.rsplit(" ", 2)
        if name in ("HEAD", default) or sha == commit or not stamp.isdigit() or int(stamp) <= graded:
            continue
        after = " after the deadline" if deadline is not None and int(stamp) > deadline.timestamp() else ""
        found.append((int(stamp), f"{named(name)} ({sha[:7]}, {when(int(stamp), zone)}{after})"))
    return listed([text for _, text in sorted(found, reverse=True)], "newer branches")


def choose(found: list[tuple[str, str, int]]) -> tuple[list[tuple[str, str, int]], list[str]]:
    """The files to grade (path, blob, size) within the limits, and those left out ("path: why").

    Python files come first (the graded code), then the others, each group by path; a file over
    ``MAX_FILE_BYTES``, or past ``MAX_TOTAL_BYTES`` or ``MAX_FILES`` in that order, is left out. Past the
    limits, the first five are named and the rest counted (a repository of 10,000 files is one line).
    """
    taken, too_big, no_room, total = [], [], [], 0
    for path, sha, size in sorted(found, key=lambda f: (not f[0].endswith(".py"), f[0])):
        if size > MAX_FILE_BYTES:
            too_big.append(f"{named(path)}: file over the size limit of {_size(MAX_FILE_BYTES)} ({_size(size)})")
        elif total + size > MAX_TOTAL_BYTES or len(taken) >= MAX_FILES:
            no_room.append(path)
        else:
            taken.append((path, sha, size))
            total += size
    room = f"past the limit of {_size(MAX_TOTAL_BYTES)} or {MAX_FILES} files in all"
    said = [f"{named(path)}: {room}" for path in no_room[:5]]
    if len(no_room) > 5:
        said.append(f"{len(no_room) - 5} more files: {room}")
    return taken, too_big + said


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def parse_deadline(text: str, what: str = "--deadline") -> dt.datetime:
    """An ISO 8601 time with its zone, e.g. ``2027-03-01T23:59:00+01:00`` (``Z``: UTC); ``what`` names it in errors."""
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{what}: {text!r} is not a time such as 2027-03-01T23:59:00+01:00") from None
    if when.tzinfo is None:
        raise ValueError(f"{what}: {text!r} has no time zone; add one, e.g. +01:00 or Z for UTC")
    return when
