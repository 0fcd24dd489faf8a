"""`.github/workflows/ci.yml` runs the README's two commands for a fresh machine on Linux, macOS and Windows."""

from pathlib import Path

import yaml

from tests.test_readme import _fresh_machine_commands

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / ".github" / "workflows" / "ci.yml"


def _runs() -> tuple[dict, list[str]]:
    spec = yaml.safe_load(CI.read_text(encoding="utf-8"))
    job = spec["jobs"]["readme"]  # the README's commands; `latest` runs the suite on the newest versions
    return job, [step["run"] for step in job["steps"] if "run" in step]


def test_ci_names_the_three_operating_systems():
    """one job per OS: ubuntu-latest, macos-latest, windows-latest, none cancelling the others"""
    job, _ = _runs()
    assert job["strategy"]["matrix"]["os"] == ["ubuntu-latest", "macos-latest", "windows-latest"]
    assert job["strategy"]["fail-fast"] is False
    assert job["runs-on"] == "${{ matrix.os }}"


def test_ci_runs_the_readmes_commands_as_written_and_windows_with_py():
    """each README command appears as a command line of its own, and with `py` for Windows"""
    _, runs = _runs()
    lines = [line.strip() for run in runs for line in run.splitlines()]
    for command in _fresh_machine_commands():
        assert any(line == command or line.startswith(command + " ") for line in lines), command
        windows = command.replace("python3 ", "py ", 1)
        assert any(line == windows or line.startswith(windows + " ") for line in lines), windows


def test_ci_expects_chapter1_to_fail_saying_not_started():
    """the first command must exit non-zero on the stubs, and the job checks that it says 'not started'"""
    _, runs = _runs()
    first = [run for run in runs if "start.py -s chapter1" in run]
    assert len(first) == 2
    for run in first:
        assert "not started" in run and "exit 1" in run
