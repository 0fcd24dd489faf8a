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


# -- the map of kata/ -----------------------------------------------------------------------------------------
def kata_tree(readme: str) -> dict[str, set[str]]:
    """The README's ``kata/`` tree as {folder ("" at the top): the names it gives, ``x.py`` and ``sub/``}.

    A folder's entry (``├── judge/``) names it; in its text, a module is a ``name.py`` and a folder of its own a
    ``name/`` that is not part of a longer path (``tests/snapshots/chapterNN.py`` names nothing).
    """
    block = readme.split("```text\nkata/\n", 1)[1].split("```", 1)[0]
    named: dict[str, set[str]] = {}
    folder = ""
    for line in block.splitlines():
        entry = re.match(r"[├└]── (\w+/|\w+\.py)", line)
        if entry:
            folder = entry.group(1)[:-1] if entry.group(1).endswith("/") else ""
            named.setdefault("", set()).add(entry.group(1))
            line = line[entry.end():]
        named.setdefault(folder, set()).update(re.findall(r"(?<![\w/.])\w+(?:\.py|/)(?![\w/])", line))
    return named


def kata_modules(package: Path) -> dict[str, set[str]]:
    """What the README's tree must name: each module of kata/ and of its folders, and each folder in them."""
    def names(folder: Path) -> set[str]:
        return ({f.name for f in folder.glob("*.py") if f.name != "__init__.py"}
                | {f"{d.name}/" for d in folder.iterdir() if d.is_dir() and any(d.glob("*.py"))})
    found = {"": names(package)}
    found.update({d.name: names(d) for d in package.iterdir() if d.is_dir() and any(d.glob("*.py"))})
    return found


def tree_problems(readme: str, package: Path) -> list[str]:
    """Each module the README's kata/ tree leaves out, and each name in it that is not there."""
    named, there = kata_tree(readme), kata_modules(package)
    problems = []
    for folder in sorted(set(named) | set(there)):
        where = f"kata/{folder}/" if folder else "kata/"
        problems += [f"{where}{name} is not in README.md's kata/ tree" for name in sorted(there.get(folder, set())
                                                                                          - named.get(folder, set()))]
        problems += [f"README.md's kata/ tree names {where}{name}, which is not there"
                     for name in sorted(named.get(folder, set()) - there.get(folder, set()))]
    return problems


def test_the_readmes_map_of_kata_names_every_module_and_only_those():
    """every module of kata/ and of its folders is in README.md's kata/ tree, and everything the tree names exists"""
    problems = tree_problems((ROOT / "README.md").read_text(encoding="utf-8"), ROOT / "kata")
    assert not problems, "\n".join(problems)


def test_a_module_left_off_the_map_is_named(tmp_path):
    """a module added to kata/judge/ and a folder name the tree gives that is gone: both named"""
    (tmp_path / "judge").mkdir()
    (tmp_path / "judge" / "checks.py").write_text("", encoding="utf-8")
    (tmp_path / "judge" / "new.py").write_text("", encoding="utf-8")
    (tmp_path / "wire.py").write_text("", encoding="utf-8")
    readme = "```text\nkata/\n├── judge/   checks.py\n├── wire.py  plain data\n└── gone/    x.py\n```\n"
    assert tree_problems(readme, tmp_path) == [
        "README.md's kata/ tree names kata/gone/, which is not there", "README.md's kata/ tree names kata/gone/x.py, "
        "which is not there", "kata/judge/new.py is not in README.md's kata/ tree"]


def test_kata_s_own_map_names_its_folders_and_the_section_it_points_to():
    """kata/__init__'s map names each folder of kata/ and only those, and points to a section CONTRIBUTING.md has"""
    doc = (ROOT / "kata" / "__init__.py").read_text(encoding="utf-8").split('"""')[1]
    named = set(re.findall(r"^- ``(\w+)/``", doc, re.M))
    there = {d.name for d in (ROOT / "kata").iterdir() if d.is_dir() and any(d.glob("*.py"))}
    assert named == there, f"kata/__init__'s map names {sorted(named)}; kata/ has {sorted(there)}"
    assert '"Architecture" in CONTRIBUTING.md' in doc
    assert "\n## Architecture\n" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
