"""The README's two commands for a fresh machine exist, go through start.py, and CI runs the second one."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _fresh_machine_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("## On a fresh machine", 1)[1].split("\n## ", 1)[0]


def _fresh_machine_commands() -> list[str]:
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", _fresh_machine_section(), re.S)]


def test_the_readme_gives_two_commands_for_a_fresh_machine():
    """one starts chapter 1, one runs the project's own test suite, both through start.py"""
    commands = _fresh_machine_commands()
    assert len(commands) == 2, f"expected two commands, found {commands}"
    start, suite = commands
    assert start == "python3 start.py -s chapter1", start
    assert suite == "python3 start.py -s selfcheck", suite
    assert (ROOT / "start.py").is_file()


def test_the_readme_gives_the_windows_variant_and_keeps_the_suite_for_authors():
    """Windows gets the same command with `py`; the test suite's command is in the authors-only block"""
    section = _fresh_machine_section()
    assert "`py start.py -s chapter1`" in section
    authors = section.split("<!-- kata:authors-only -->", 1)[1].split("<!-- /kata:authors-only -->", 1)[0]
    assert "python3 start.py -s selfcheck" in authors
    assert "-m pip install" not in section, "PEP 668 refuses pip installs into a system Python"


def test_the_tools_environment_is_not_committed():
    """.venv-tools/, where start.py installs nox and uv, is in .gitignore"""
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".venv-tools/" in ignored


def test_ci_runs_the_readmes_test_command():
    """.ci/run runs the README's test command as a line of its own, and every other nox session through start.py"""
    _, suite = _fresh_machine_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in ci.splitlines() if not line.lstrip().startswith("#")]
    assert suite in lines, f".ci/run does not run `{suite}` as a line of its own"
    bare = [line for line in lines if re.match(r"(nox|python3? -m nox)\b", line)]
    assert not bare, f".ci/run runs nox without start.py (it is only in .venv-tools/): {bare}"
