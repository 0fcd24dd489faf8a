"""`nox -s grade-class`: a whole class graded in one run on the instructor's side, as each learner deserves.

A class of real local git repositories (tests/tools/grading/class_repos.py) is graded from a snapshot of the
course with `--jobs 4`, a deadline and a fixed seed: everything right, chapter 4 wrong, a softmax that never
returns, a syntax error in chapter 2, edited tests and conftest.py, a fix made after the deadline, and three
repositories with nothing to grade. Chapters 1, 2 and 4 keep it fast while proving every property.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kata.grading import gradebook, roster, schema, strict, submissions
from kata.grading import shards as shard_pack
from kata.judge import answer_key

from ..conftest import ROOT, tool, undocumented_fields
from . import class_repos

CHAPTERS = "1,2,4"
COMMON = ("--chapters", CHAPTERS, "--deadline", class_repos.DEADLINE, "--seed", "7")
VOLATILE = ("cached", "seconds")
pytestmark = pytest.mark.slow



def grade_class(course: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return tool("grade-class", *args, root=course, timeout=timeout)


def load(out: Path) -> dict:
    return json.loads((out / "gradebook.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """The course snapshot, the class, and one graded run of it."""
    base = tmp_path_factory.mktemp("class")
    course = class_repos.course_copy(base / "course")
    made = class_repos.build(base / "learners")
    out = base / "out"
    proc = grade_class(course, str(base / "learners" / "roster.csv"), "--out", str(out), "--jobs", "4", *COMMON)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    book = load(out)
    rows = {r["student"]: r for r in book["rows"]}
    return {"base": base, "course": course, "made": made, "out": out, "book": book, "rows": rows, "proc": proc}


def chapter(row: dict, number: int) -> dict:
    return next(c for c in row["results"]["chapters"] if c["chapter"] == number)


def steps(row: dict, number: int) -> dict:
    return {s["id"]: s for s in chapter(row, number)["steps"]}


def full(row: dict, number: int) -> bool:
    c = chapter(row, number)
    return c["points"] == c["max_points"] > 0 and c["status"] == "passed"


# -- each learner, exactly as expected -------------------------------------------------------------------
def test_every_learner_gets_a_row_in_roster_order(klass):
    assert [r["student"] for r in klass["book"]["rows"]] == list(klass["made"])
    assert klass["book"]["summary"] == {**klass["book"]["summary"], "learners": 9, "graded": 6, "missing": 3,
                                        "error": 0}


def test_everything_right_gets_full_marks(klass):
    ada = klass["rows"]["ada"]
    assert ada["status"] == "graded" and ada["percent"] == 100.0
    assert all(full(ada, n) for n in (1, 2, 4))
    assert ada["commit"] == klass["made"]["ada"]["commit"]


def test_chapter_4_wrong_costs_chapter_4_only_and_is_diagnosed(klass):
    brian = klass["rows"]["brian"]
    assert full(brian, 1) and full(brian, 2)
    ch4 = chapter(brian, 4)
    assert 0 < ch4["points"] < ch4["max_points"]
    assert steps(brian, 4)["4.2"]["status"] == "failed"
    assert "looks like: no 1/√d_k scaling" in steps(brian, 4)["4.2"]["message"]
    assert steps(brian, 4)["4.1"]["status"] == "passed"


def test_a_softmax_that_never_returns_times_out_and_costs_nothing_else(klass):
    chen = klass["rows"]["chen"]
    assert chen["status"] == "graded"
    assert full(chen, 1) and full(chen, 2)
    assert steps(chen, 4)["4.3"]["status"] == "timed out"
    assert chapter(chen, 4)["points"] < chapter(chen, 4)["max_points"]
    said = [t["message"] for c in chen["results"]["chapters"] for s in c["steps"] for t in s["tests"]
            if "did not return" in (t["message"] or "")]
    waited = [m for m in said if "earlier in this run" not in m]  # the rest failed at once: no clock waited for
    assert len(waited) == 1 and len(said) > 1, said


def test_a_syntax_error_in_chapter_2_costs_chapter_2(klass):
    dana = klass["rows"]["dana"]
    ch2 = chapter(dana, 2)
    assert ch2["points"] == 0 and ch2["status"] == "error"
    assert "does not import" in ch2["error"] and "SyntaxError" in ch2["error"]
    assert full(dana, 1) and full(dana, 4)


def test_edited_tests_conftest_and_grading_toml_are_ignored(klass):
    eve = klass["rows"]["eve"]
    assert eve["status"] == "graded" and eve["points"] == 0
    statuses = {s["status"] for c in eve["results"]["chapters"] for s in c["steps"]}
    assert statuses == {"not started"}
    # graded with the course's own checks, not her one-test files
    assert eve["max_points"] == klass["rows"]["ada"]["max_points"]
    assert eve["course_version"] == klass["rows"]["ada"]["course_version"] == klass["book"]["course_version"]


def test_the_deadline_picks_the_last_commit_before_it(klass):
    finn, made = klass["rows"]["finn"], klass["made"]["finn"]
    assert finn["commit"] == made["commit"] != made["late"]
    assert finn["committed_at"] == class_repos.JUST_BEFORE
    assert "1 later commit after the deadline" in finn["note"] and made["late"][:7] in finn["note"]
    assert chapter(finn, 4)["points"] == chapter(klass["rows"]["brian"], 4)["points"]
    assert finn["results"]["commit"] == made["commit"]


def test_nothing_to_grade_is_a_missing_row_with_its_reason(klass):
    rows = klass["rows"]
    assert rows["gus"]["status"] == "missing" and "unreachable" in rows["gus"]["note"]
    assert rows["hana"]["status"] == "missing" and "empty repository" in rows["hana"]["note"]
    assert rows["ivan"]["status"] == "missing" and "no exercises/" in rows["ivan"]["note"]
    assert rows["ivan"]["commit"] == klass["made"]["ivan"]["commit"]
    for name in ("gus", "hana", "ivan"):
        assert rows[name]["points"] is None and rows[name]["results"] is None
        assert (klass["out"] / "students" / name / "summary.md").is_file()


def test_results_record_repository_commit_course_version_and_seed(klass):
    for name in ("ada", "brian", "chen", "dana", "eve", "finn"):
        results = klass["rows"][name]["results"]
        assert results["repository"] == name  # the roster's repo value, as given
        assert results["commit"] == klass["made"][name]["commit"]
        assert results["course_version"].startswith("sha256:")
        assert results["options"]["seed"] == 7 and klass["book"]["seed"] == 7


# -- outputs -----------------------------------------------------------------------------------------------
def test_gradebook_csv_has_exactly_the_columns_then_the_rosters(klass):
    text = (klass["out"] / "gradebook.csv").read_text(encoding="utf-8-sig")
    table = list(csv.reader(io.StringIO(text)))
    assert table[0] == ["student", "repo", "commit", "committed_at", "status", "points", "max_points", "percent",
                        *(f"ch{n}" for n in klass["book"]["options"]["chapters"]), "note", *gradebook.FLAGS,
                        "section"]  # a column per chapter graded, not per chapter of the course
    assert "ch3" not in table[0] and len(klass["book"]["options"]["chapters"]) < len(answer_key.chapters())
    body = {r[0]: dict(zip(table[0], r, strict=True)) for r in table[1:]}
    ch4 = chapter(klass["rows"]["ada"], 4)["max_points"]
    assert body["ada"]["percent"] == "100.0" and body["ada"]["ch4"] == f"{ch4:g}"
    assert body["dana"]["ch2"] == "0" and body["gus"]["status"] == "missing" and body["gus"]["points"] == ""
    assert body["brian"]["section"] == "S2"


def test_gradebook_json_validates_against_its_schema(klass):
    book = klass["book"]
    assert schema.errors(book, gradebook.load_schema()) == []
    for row in book["rows"]:
        if row["results"] is not None:
            assert schema.errors(row["results"]) == [], row["student"]


def test_the_gradebook_schema_check_can_fail(klass):
    broken = json.loads(json.dumps(klass["book"]))
    broken["rows"][0]["status"] = "fine"
    del broken["rows"][1]["note"]
    found = "\n".join(schema.errors(broken, gradebook.load_schema()))
    assert "$.rows[0].status: 'fine' is not one of" in found and "$.rows[1]: 'note' is a required property" in found


def test_every_gradebook_field_is_documented_on_the_instructors_page():
    missing = undocumented_fields(gradebook.load_schema())
    assert not missing, f"docs/instructors.md does not document: {missing}"


def test_each_learner_has_their_own_reports(klass):
    for name in ("ada", "brian", "chen", "dana", "eve", "finn"):
        folder = klass["out"] / "students" / name
        assert {p.name for p in folder.iterdir()} == {"results.json", "junit.xml", "summary.md", "graded"}
        assert json.loads((folder / "results.json").read_text(encoding="utf-8")) == klass["rows"][name]["results"]


def test_the_run_ends_with_the_lowest_scores_and_every_missing_row(klass):
    out = klass["proc"].stdout
    assert "lowest scores:" in out and "missing or error:" in out
    tail = out[out.index("lowest scores:"):]
    assert tail.index("eve") < tail.index("ada")  # lowest first
    for name in ("gus", "hana", "ivan"):
        assert name in out[out.index("missing or error:"):]
    assert "[9/9" in klass["proc"].stderr  # progress: learners done / total (one line each without a terminal)


# A learner whose identifier and repository path are long, as class rosters have them.
LONG_STUDENT = "2027-spring-cs4321-section-b-maximiliane.oberhollenzer"
LONG_REPO = "/srv/classes/2027-spring/cs4321/section-b/submissions/maximiliane.oberhollenzer-transformer-katas"


def _long_rows() -> tuple[list[roster.Learner], dict[str, dict]]:
    learners = [roster.Learner(LONG_STUDENT, LONG_REPO, 2), roster.Learner(LONG_STUDENT + "-2", LONG_REPO + "-2", 3)]
    total = {"points": 5.0, "max_points": 10.0, "percent": 50.0}
    rows = {
        LONG_STUDENT: gradebook.row(learners[0], status="missing", repo=LONG_REPO, commit=None, committed_at=None,
                                    note=f"unreachable: no repository at {LONG_REPO}", results=None, chapters=[1]),
        LONG_STUDENT + "-2": gradebook.row(learners[1], status="graded", repo=LONG_REPO + "-2", commit="abc1234" * 5,
                                           committed_at=None, note="", results={"total": total, "chapters": []},
                                           chapters=[1]),
    }
    return learners, rows


@pytest.mark.parametrize("terminal", [False, True], ids=["log", "terminal"])
def test_progress_lines_show_the_learner_and_the_path_in_full(capsys, monkeypatch, terminal):
    """a long learner name and repository path are printed whole, on a terminal (bar) and in a CI log"""
    from kata.grading import classroom

    learners, rows = _long_rows()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    got = classroom._run_all(learners, lambda learner: rows[learner.student], 1, [1])
    assert [r["student"] for r in got] == [x.student for x in learners]
    said = capsys.readouterr()
    text = said.out + said.err
    assert f"{LONG_STUDENT}: missing: unreachable: no repository at {LONG_REPO} (" in text
    assert f"{LONG_STUDENT}-2: 50.0 % (" in text


def test_the_closing_table_never_cuts_a_learners_name():
    """the lowest scores and the missing rows name each learner in full, columns still aligned"""
    from kata.grading import classroom

    _, rows = _long_rows()
    book = {"summary": gradebook.summary(list(rows.values())), "rows": list(rows.values())}
    text = classroom.closing(book, 1.0)
    lowest = text[text.index("lowest scores:"):text.index("missing or error:")].splitlines()
    missing = text[text.index("missing or error:"):].splitlines()
    assert any(line.split()[0] == f"{LONG_STUDENT}-2" for line in lowest[2:] if line.strip())
    assert any(line.split()[0] == LONG_STUDENT and line.endswith(LONG_REPO) for line in missing[2:] if line.strip())
    def end(line: str, column: int) -> int:
        word = line.split()[column]
        return line.index(word, len(line.split()[0]) + 2) + len(word)

    assert end(lowest[1], 1) == end(lowest[2], 1)  # 'percent' (right-aligned) lines up
    assert end(missing[1], 1) - len("status") == end(missing[2], 1) - len("missing")  # 'status' (left-aligned)


# -- the cache, shards and merge ---------------------------------------------------------------------------
def test_a_second_run_with_nothing_changed_grades_nobody_again(klass, tmp_path):
    out = tmp_path / "again"
    proc = grade_class(klass["course"], str(klass["base"] / "learners" / "roster.csv"), "--out", str(out),
                       "--cache", str(klass["out"] / ".cache"), "--jobs", "4", *COMMON)
    assert proc.returncode == 0, proc.stderr[-3000:]
    book = load(out)
    assert all(r["cached"] for r in book["rows"] if r["status"] == "graded")
    assert (out / "gradebook.csv").read_text() == (klass["out"] / "gradebook.csv").read_text()


def _comparable(book: dict) -> list[dict]:
    rows = json.loads(json.dumps(book["rows"]))
    for r in rows:
        for key in VOLATILE:
            r.pop(key)
        if r["results"]:
            r["results"].pop("created")
            for c in r["results"]["chapters"]:
                for s in c["steps"]:
                    for t in s["tests"]:
                        t.pop("seconds", None)
    return rows


def test_two_shards_merged_give_the_same_gradebook_as_one_run(klass, tmp_path):
    """merged as in CI: each shard packed to what it uploads (kata.grading.shards.pack), the rest rewritten"""
    roster_file = str(klass["base"] / "learners" / "roster.csv")
    shards, reports = [], {}
    for i in (1, 2):
        out = tmp_path / f"shard-{i}"
        proc = grade_class(klass["course"], roster_file, "--out", str(out), "--shard", f"{i}/2", "--jobs", "2",
                           "--cache", str(tmp_path / "cache"), *COMMON)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert load(out)["shard"] == f"{i}/2"
        reports |= {p.relative_to(out).as_posix(): p.read_bytes() for p in (out / "students").rglob("*") if p.is_file()}
        shard_pack.pack(out, tmp_path / "upload" / out.name)
        shards.append(tmp_path / "upload" / out.name)
    assert not list((tmp_path / "upload").rglob("results.json")), "a shard uploads no learner's results.json"
    names = [{r["student"] for r in load(s)["rows"]} for s in shards]
    assert names[0] and names[1] and not names[0] & names[1]
    merged = tmp_path / "merged"
    proc = grade_class(klass["course"], "--merge", *map(str, shards), "--out", str(merged))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (merged / "gradebook.csv").read_text() == (klass["out"] / "gradebook.csv").read_text()
    assert _comparable(load(merged)) == _comparable(klass["book"])
    assert {p.name for p in (merged / "students").iterdir()} == set(klass["made"])
    assert (merged / "report.html").is_file()
    # every learner's reports, results.json and junit.xml included, exactly as their shard wrote them
    assert {p.relative_to(merged).as_posix(): p.read_bytes() for p in (merged / "students").rglob("*")
            if p.is_file()} == reports


def test_merging_refuses_a_missing_shard(klass, tmp_path):
    book = json.loads(json.dumps(klass["book"]))
    book["rows"] = book["rows"][:4]
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "gradebook.json").write_text(json.dumps(book), encoding="utf-8")
    with pytest.raises(gradebook.MergeError, match="no shard graded 5 learner"):
        gradebook.merge([tmp_path / "half"], tmp_path / "out")


# -- the report --------------------------------------------------------------------------------------------
def test_the_report_opens_in_headless_chromium_with_its_three_figures(klass):
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium); .ci/run installs it")
    playwright = pytest.importorskip("playwright.sync_api")
    report = klass["out"] / "report.html"
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            problems, requests = [], []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(report.as_uri())
            page.wait_for_load_state("load")
            figures = page.evaluate(
                "Array.from(document.querySelectorAll('figure img')).map(i => "
                "({id: i.parentElement.id, w: i.naturalWidth, h: i.naturalHeight, shown: i.getBoundingClientRect().width}))"
            )
            text = page.inner_text("body")
        finally:
            browser.close()
    assert problems == []
    assert [f["id"] for f in figures] == ["histogram", "heatmap", "failing"]
    assert all(f["w"] > 100 and f["h"] > 100 and f["shown"] > 100 for f in figures), figures
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
    assert "no 1/√d_k scaling" in text  # the top diagnosis of the steps the class fails most
    assert "gus" in text and "unreachable" in text


def _heat_book() -> dict:
    """One learner with chapter 1 passed, 2 failed (no points), 3 failed (some points), 4 not started; one missing."""
    def unit(n, status, points):
        return {"chapter": n, "points": points, "max_points": 10.0, "percent": 10.0 * points, "status": status,
                "steps": []}

    chapters = [unit(1, "passed", 10.0), unit(2, "failed", 0.0), unit(3, "failed", 4.0), unit(4, "not started", 0.0)]
    results = {"total": {"points": 14.0, "max_points": 40.0, "percent": 35.0}, "chapters": chapters}
    rows = [gradebook.row(roster.Learner("ada", "ada", 2), status="graded", repo="ada", commit="a" * 40,
                          committed_at=None, note="", results=results, chapters=[1, 2, 3, 4]),
            gradebook.row(roster.Learner("gus", "gus", 3), status="missing", repo="gus", commit=None,
                          committed_at=None, note="unreachable", results=None, chapters=[1, 2, 3, 4])]
    return {"rows": rows, "options": {"chapters": [1, 2, 3, 4]},
            "chapters": [{"chapter": n, "title": f"chapter {n}"} for n in (1, 2, 3, 4)]}


def test_the_heat_map_colours_not_started_apart_from_failed_and_passed(monkeypatch):
    """a chapter never started (stubs untouched) has a colour of its own in the heat map, and the legend names it"""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from kata.grading import class_report

    drawn = []
    monkeypatch.setattr(class_report, "_svg", lambda fig: drawn.append(fig) or "")
    class_report._draw(_heat_book())
    heat = drawn[1]
    ax = heat.axes[0]
    canvas = FigureCanvasAgg(heat)  # the figure as drawn, in pixels
    canvas.draw()
    pixels = np.asarray(canvas.buffer_rgba())[..., :3].astype(int)

    def cell(row: int, column: int) -> np.ndarray:  # the colour drawn at the centre of a cell
        x, y = ax.transData.transform((column, row))
        return pixels[int(round(pixels.shape[0] - y)), int(round(x))]

    passed, failed, some, not_started, not_graded = cell(0, 0), cell(0, 1), cell(0, 2), cell(0, 3), cell(1, 0)

    def apart(a, b) -> bool:
        return int(np.abs(a - b).max()) > 40

    for other in (passed, failed, some, not_graded):
        assert apart(not_started, other), (not_started, other)
    assert apart(passed, failed) and apart(failed, not_graded)
    legends = [*filter(None, [ax.get_legend()]), *heat.legends]
    entries = {t.get_text(): h for legend in legends
               for t, h in zip(legend.get_texts(), legend.legend_handles, strict=True)}
    said = [text for text in entries if "not started" in text]
    assert said, list(entries)
    colour = np.round(np.array(entries[said[0]].get_facecolor()[:3]) * 255).astype(int)
    assert not apart(colour, not_started), (colour, not_started)  # the legend's swatch is the cells' colour


def test_the_report_figures_are_drawn_the_same_every_time(tmp_path):
    """the same gradebook gives byte-identical figures; the figure cache tells not started from failed"""
    from kata.grading import class_report

    book = _heat_book()
    assert class_report._draw(book) == class_report._draw(_heat_book())
    failed = _heat_book()
    failed["rows"][0]["chapters"][3]["status"] = "failed"  # the same 0 % as not started
    cached = class_report.figures(book, tmp_path)["heatmap"]
    assert cached == class_report._draw(book)["heatmap"]
    assert class_report.figures(failed, tmp_path)["heatmap"] != cached


# -- what stops a run before anything is graded -------------------------------------------------------------
def test_a_bad_roster_names_every_bad_line_and_grades_nothing(klass, tmp_path):
    bad = tmp_path / "roster.csv"
    bad.write_text("student,repo,section\nada,ada,S1\n\nada,brian,S2\nzed,,S1\nyan,y,S1,extra\n", encoding="utf-8")
    proc = grade_class(klass["course"], str(bad), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    for said in ("line 3: an empty row", "line 4: duplicate student 'ada' (first on line 2)", "line 5: no repo",
                 "line 6: 4 values for 3 columns"):
        assert said in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_roster_without_the_columns_is_refused(tmp_path):
    bad = tmp_path / "r.csv"
    bad.write_text("name,url\nada,ada\n", encoding="utf-8")
    with pytest.raises(roster.RosterError, match="line 1: the header has no column 'student'"):
        roster.load(bad)


def test_shards_split_the_roster_by_student_into_even_disjoint_slices(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("student,repo\n" + "".join(f"s{i:02d},r{i}\n" for i in range(11)), encoding="utf-8")
    loaded = roster.load(path)
    slices = [loaded.shard(i, 3) for i in (1, 2, 3)]
    names = [x.student for s in slices for x in s]
    assert sorted(names) == [f"s{i:02d}" for i in range(11)] and len(set(names)) == 11
    assert sorted(len(s) for s in slices) == [3, 4, 4]
    with pytest.raises(ValueError, match="I/N"):
        roster.parse_shard("3/2")


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('[steps]\n"4.33" = 2\n', 'line 2: [steps] "4.33" is not a worksheet step of the course; did you mean \'4.3\''),
        ("[checks]\ntest_softmax_is_stabel_for_large_scores = 2\n",
         "line 2: [checks] \"test_softmax_is_stabel_for_large_scores\" is not the test name of a check beyond the "
         "worksheet; did you mean 'test_softmax_is_stable_for_large_scores'"),
        ("[chapters]\n99 = 30\n", 'line 2: [chapters] "99" is not a chapter of the course'),
        ("[grade]\nstep_point = 2\n", "line 2: [grade] \"step_point\" is not a setting of [grade]; did you mean "
         "'step_points'"),
    ],
)
def test_a_misspelt_grading_toml_is_refused_with_its_line(tmp_path, line, said):
    path = tmp_path / "grading.toml"
    path.write_text(line, encoding="utf-8")
    with pytest.raises(strict.StrictError) as caught:
        strict.check(path, ROOT)
    assert f"grading.toml, {said}" in str(caught.value)


def test_grade_and_grade_class_refuse_a_misspelt_grading_toml(klass, tmp_path):
    course = class_repos.course_copy(tmp_path / "course")
    (course / "grading.toml").write_text('[grade]\ntimeout = 2\n\n[steps]\n"4.33" = 2\n', encoding="utf-8")
    proc = grade_class(course, str(klass["base"] / "learners" / "roster.csv"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "grading.toml, line 5: [steps] \"4.33\"" in proc.stderr
    assert not (tmp_path / "out").exists()
    proc = tool("grade", "--impl", "solutions", "--chapters", "1", "--out", str(tmp_path / "g"), root=course)
    assert proc.returncode == 2 and "line 5" in proc.stderr and "did you mean '4.3'" in proc.stderr


# -- fresh inputs, private tests, repositories ----------------------------------------------------------------
SEEDED = '''"""Shows the first number this module's RNG draws."""

import numpy as np

CHAPTER = 1
RNG = np.random.default_rng(1)


def test_show_the_first_draw(ch):
    """the first draw"""
    assert False, f"first draw {RNG.normal()!r}"
'''


def test_seed_draws_fresh_inputs_for_the_checks(tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "test_seeded.py").write_text(SEEDED, encoding="utf-8")
    draws = []
    for seed in (0, 1, 2):
        out = tmp_path / f"out-{seed}"
        args = ["--impl", "solutions", "--chapters", "1", "--extra-tests", str(extra), "--out", str(out)]
        proc = tool("grade", *args, "--seed", str(seed))
        assert proc.returncode == 0, proc.stderr[-2000:]
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        message = next(s["message"] for s in results["chapters"][0]["steps"] if s["private"])
        draws.append(re.findall(r"first draw (-?\d[\d.e+-]*)", message)[0])
    import numpy as np

    assert draws[0] == repr(np.random.default_rng(1).normal())  # --seed 0: the test's own inputs
    assert draws[1] != draws[0] and draws[2] != draws[1] != draws[0]


def test_private_tests_are_reported_separately(klass, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "test_private.py").write_text(
        'CHAPTER = 1\n\n\ndef test_decoding_a_long_text_round_trips(ch):\n    """a long text round-trips"""\n'
        '    assert ch.decode(ch.encode("A B B A")) == "A B B A"\n', encoding="utf-8")
    roster_file = tmp_path / "roster.csv"
    roster_file.write_text(f"student,repo\nada,{klass['made']['ada']['repo']}\n", encoding="utf-8")
    out = tmp_path / "out"
    proc = grade_class(klass["course"], str(roster_file), "--out", str(out), "--chapters", "1",
                       "--extra-tests", str(extra), "--allow-outside-paths")
    assert proc.returncode == 0, proc.stderr[-3000:]
    header = (out / "gradebook.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[-2:] == ["private_points", "private_max_points"]
    row = load(out)["rows"][0]
    assert row["private"] == {"points": 1.0, "max_points": 1.0}
    assert row["results"]["checks"] == "public and private"


def test_repositories_are_found_by_path_owner_name_or_url(tmp_path):
    (tmp_path / "local").mkdir()
    assert submissions.source("local", tmp_path) == str((tmp_path / "local").resolve())
    assert submissions.source("alice/katas-2027", tmp_path) == "https://github.com/alice/katas-2027.git"
    assert submissions.source("https://git.example/a/b.git", tmp_path) == "https://git.example/a/b.git"
    assert submissions.source("git@github.com:a/b.git", tmp_path) == "git@github.com:a/b.git"
    assert submissions.shown("https://x-access-token:secret@github.com/a/b.git") == "https://github.com/a/b.git"


def test_a_token_is_never_asked_for_and_never_shown(tmp_path, monkeypatch):
    """an unreachable URL is 'missing' at once, without a prompt; the token appears in no reason"""
    monkeypatch.setenv(submissions.TOKEN_VARIABLE, "s3cret-token")
    (tmp_path / "t").mkdir()
    found = submissions.fetch("http://127.0.0.1:9/nobody/nothing.git", tmp_path / "t", base=tmp_path, timeout=30)
    assert isinstance(found, submissions.Missing) and found.reason.startswith("unreachable")
    assert "s3cret-token" not in found.reason


# -- the workflows -----------------------------------------------------------------------------------------
def test_every_workflow_file_is_valid_for_github():
    """check-jsonschema with its built-in GitHub workflow schema (actionlint has no binary wheel here)"""
    exe = Path(sys.executable).with_name("check-jsonschema")
    if not exe.exists():
        pytest.fail("check-jsonschema is not installed (pyproject.toml, dependency group 'lint')")
    files = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert {f.name for f in files} >= {"grade.yml", "grade-class.yml"}
    proc = subprocess.run([str(exe), "--builtin-schema", "vendor.github-workflows", *map(str, files)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_class_workflow_shards_merges_and_keeps_the_gradebook():
    text = (ROOT / ".github" / "workflows" / "grade-class.yml").read_text(encoding="utf-8")
    for said in ("workflow_dispatch:", "deadline:", "roster:", "secrets.LEARNERS_READ_TOKEN", "matrix:",
                 "--shard", "--merge", "name: gradebook", "contents: read", "${{ github.run_id }}"):
        assert said in text, said
    # the number of shards comes from the class's size (test_workflow_scale.py), the same for grading and merging
    assert text.count("SHARDS: ${{ fromJSON(needs.plan.outputs.plan).shards }}") == 2
    assert "shard: ${{ fromJSON(needs.plan.outputs.plan).matrix }}" in text
