"""The README's two commands for a fresh machine exist, and CI runs the second one."""

import re

from kata import answer_key

ROOT = answer_key.ROOT


def _fresh_machine_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## On a fresh machine", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_the_readme_gives_two_commands_for_a_fresh_machine():
    """one starts chapter 1, one runs the project's own test suite"""
    commands = _fresh_machine_commands()
    assert len(commands) == 2, f"expected two commands, found {commands}"
    start, suite = commands
    assert start.endswith("nox -s chapter1"), start
    assert suite.endswith("nox -s selfcheck"), suite


def test_ci_runs_the_readmes_test_command():
    """.ci/run runs the README's test command, line for line"""
    _, suite = _fresh_machine_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in ci.splitlines()]
    for part in suite.split("&&"):
        part = part.strip()
        assert any(part in line for line in lines), f".ci/run does not run `{part}`"
