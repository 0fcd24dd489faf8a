"""One locked environment: uv.lock pins one version of every package, and the sessions run those versions.

Every nox session installs from uv.lock (``uv sync --locked``), so learners who set up a week apart, the
grader and CI run the same NumPy; `nox -s lock` refreshes it, and ci.yml's weekly `latest` job runs the suite
on the newest versions instead, so drift shows as a failing scheduled run, not as a red main.
"""

import tomllib
from collections import Counter
from pathlib import Path

import yaml

from kata import project

ROOT = Path(__file__).resolve().parents[1]
LOCK = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))


def test_the_lock_pins_one_version_of_each_package_for_every_python():
    """no package is locked at two versions (one per Python version would split learners' NumPy)"""
    counts = Counter(p["name"] for p in LOCK["package"])
    assert not [name for name, n in counts.items() if n > 1], f"locked twice: {counts.most_common(5)}"


def test_this_session_runs_the_locked_versions():
    """the environment running the suite holds exactly the lock's NumPy, pytest and matplotlib"""
    found = project.versions(("numpy", "pytest", "pytest-check", "matplotlib"))
    differ = {name: v for name, v in found.items() if v["installed"] != v["locked"]}
    assert not differ, f"installed differs from uv.lock: {differ} (delete .nox/ and run the session again)"


def test_every_session_installs_from_the_lock():
    """noxfile's one installer syncs from uv.lock with --locked (a stale lock fails, never drifts)"""
    text = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert '"uv", "sync", "--locked"' in text
    assert "session.install(" not in text, "a session installs around the lock"


def test_a_scheduled_job_runs_the_suite_on_the_newest_versions():
    """ci.yml has a weekly job that refreshes the lock (nox -s lock) and runs selfcheck"""
    ci = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))
    assert "schedule" in ci[True], "ci.yml has no schedule"
    steps = " ".join(s.get("run", "") for s in ci["jobs"]["latest"]["steps"])
    assert "start.py -s lock" in steps and "start.py -s selfcheck" in steps
