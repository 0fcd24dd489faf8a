"""The figures: committed drawings of today's solutions, shown by one file wherever the learner reads.

- ``docs/figures/NAME.svg`` is what ``draw_NAME`` draws from ``solutions/`` today (``python scripts/figures.py
  --check``): a change to a solution, an answer key or a drawing that moves a figure fails here until it is
  drawn again; ``docs/figures/`` holds nothing else and ``docs/`` no other generated image.
- Each file is a titled, deterministic SVG that fits the text column.
- Every listed figure is shown on a page, as a Markdown image and its caption that ``scripts/pages.py`` wrote
  (GitHub and the site show the same file), in the chapter's notebook when its section is drawn from the page,
  and the student edition carries the files.
"""

import importlib.util
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from kata import project
from kata.authoring.generated import docs_hook
from kata.grading import release
from kata.judge import answer_key

ROOT = project.ROOT
DOCS = ROOT / "docs"
figures = docs_hook("figures")
FIGURES = list(figures.FIGURES.values())
SVG = "{http://www.w3.org/2000/svg}"
IMAGES = {".svg", ".png", ".jpg", ".jpeg", ".gif", ".webp"}


def _script(name: str = "figures"):
    spec = importlib.util.spec_from_file_location(f"kata_scripts_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("figure", FIGURES, ids=lambda f: f.name)
def test_the_committed_figure_is_todays_drawing(figure):
    """`python scripts/figures.py --check NAME`: docs/figures/NAME.svg is the picture draw_NAME makes today"""
    stale = _script().stale(write=False, names=[figure.name])
    assert not stale, f"docs/{figure.path} is out of date or missing: run python scripts/figures.py"


@pytest.mark.every_chapter
def test_docs_holds_the_listed_figures_and_no_other_image():
    """docs/figures/ holds one file per figure of figures.toml; no other generated image is in docs/"""
    listed = {f"docs/{f.path}" for f in FIGURES}
    images = {p.relative_to(ROOT).as_posix() for p in DOCS.rglob("*")
              if p.suffix.lower() in IMAGES and "vendor" not in p.relative_to(DOCS).parts}
    assert not listed - images, f"not drawn: {sorted(listed - images)}; run python scripts/figures.py"
    assert not images - listed, (f"images in docs/ that figures.toml does not list: {sorted(images - listed)} "
                                 "(python scripts/figures.py removes a dropped figure's file)")


@pytest.mark.parametrize("figure", FIGURES, ids=lambda f: f.name)
def test_the_figure_is_a_titled_svg_that_fits_the_text_column_and_records_no_date(figure):
    """the committed file is an SVG with a <title>, 200–540 pt wide, that draws something and no build date"""
    root = ET.parse(figure.file).getroot()
    assert root.tag == f"{SVG}svg", f"{figure.file.name} is not an SVG document"
    titles = [t.text for t in root.iter(f"{SVG}title") if (t.text or "").strip()]
    assert titles, f"{figure.file.name} has no <title> for screen readers"
    width = float(root.get("viewBox").split()[2])  # in pt: 540 pt = 720 px, the text column at full size
    assert 200 <= width <= 540, f"{figure.file.name} is {width:.0f} pt wide: the page would shrink its labels"
    assert list(root.iter(f"{SVG}path")), f"{figure.file.name} draws nothing"
    text = figure.file.read_text(encoding="utf-8")
    for varying in ("<dc:date>", "<dc:creator>", "Matplotlib v"):
        assert varying not in text, f"{figure.file.name} records {varying!r}, which changes between drawings"


DRAW_TWICE = """
import json, sys
sys.path.insert(0, ".")
from kata.authoring.generated import docs_hook
figures = docs_hook("figures")
print(json.dumps({name: figures.FIGURES[name].draw() for name in ("attention-4", "schedule-15")}))
"""


def test_a_figure_is_the_same_bytes_in_every_process():
    """drawing again in a fresh process gives the same bytes as here: no date, no random ids, no creator"""
    proc = subprocess.run([sys.executable, "-c", DRAW_TWICE], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name, svg in json.loads(proc.stdout).items():
        assert svg == figures.FIGURES[name].draw(), f"figure {name} differs between two drawings"


def test_the_check_sees_a_visible_change_and_forgives_a_last_bit():
    """same_drawing: content-hashed ids and a coordinate moved by 1e-9 are the same picture; a digit is not"""
    same = _script().same_drawing
    old = ('<svg><defs><path id="m1a2b3" d="M 0 0 L 10.000001 5"/></defs>'
           '<use xlink:href="#m1a2b3" x="72.5" y="30"/><text>0.498</text></svg>')
    moved = old.replace("m1a2b3", "m9f8e7").replace("72.5", "72.500000001")
    assert same(old, old) and same(old, moved)
    assert not same(old, old.replace("72.5", "73.5")), "a point moved by 1 pt is a different picture"
    assert not same(old, old.replace("<text>0.498", "<text>0.499")), "a printed digit changed"
    assert not same(old, old.replace("L 10.000001 5", "L 10.000001 5 L 3 3")), "a path grew"


@pytest.mark.every_chapter
def test_every_figure_is_shown_on_a_page_as_a_markdown_image_with_its_caption():
    """each figure's marker is on a page, followed by the standard Markdown image of its file and its caption"""
    shown = figures.shown()
    assert not set(figures.FIGURES) - set(shown), f"figures on no page: {sorted(set(figures.FIGURES) - set(shown))}"
    for name, pages in shown.items():
        figure = figures.FIGURES[name]
        for page in pages:
            text = (DOCS / page).read_text(encoding="utf-8")
            block = f"![{figure.alt}]({figure.link(page)})\n\n*{figure.caption}*"
            assert block in text, f"docs/{page}: figure {name} is not written out (python scripts/pages.py)"
            assert (DOCS / page).parent.joinpath(figure.link(page)).resolve() == figure.file.resolve()


@pytest.mark.parametrize("chapter", [c for c in answer_key.chapters() if any(f.chapter == c.number for f in FIGURES)],
                         ids=lambda c: f"chapter{c.number}")
def test_the_notebook_shows_the_figures_of_the_page_sections_it_draws(chapter):
    """a figure in a page section the notebook draws is in the notebook, linked to the same committed file"""
    tools = _script("notebooks")
    page = (ROOT / chapter.page).read_text(encoding="utf-8")
    source = (ROOT / "notebooks" / "src" / f"{chapter.module}.py").read_text(encoding="utf-8")
    drawn = set(re.findall(r'kata:page-section "([^"]+)"', source))
    wanted = [name for title, body in tools._sections(page) if title in drawn
              for name in figures.MARKER.findall(body)]
    cells = json.loads((ROOT / "notebooks" / f"{chapter.module}.ipynb").read_text(encoding="utf-8"))["cells"]
    markdown = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    for name in wanted:
        figure = figures.FIGURES[name]
        assert f"![{figure.alt}](../docs/{figure.path})" in markdown, (
            f"notebooks/{chapter.module}.ipynb does not show figure {name} (nox -s notebooks-build)")
        assert (ROOT / "notebooks" / f"../docs/{figure.path}").resolve() == figure.file.resolve()


def test_the_student_edition_carries_the_figures():
    """`nox -s release` ships docs/figures/: the edition has no solutions/ to draw them from"""
    missing = [f"docs/{f.path}" for f in FIGURES if not release.belongs(f"docs/{f.path}")]
    assert not missing, f"the student edition would leave out {missing}"


def test_a_figure_without_its_drawing_function_is_named(tmp_path):
    """a figures.toml entry with no draw_NAME in figures.py is refused, naming the figure and the function"""
    listed = tmp_path / "figures.toml"
    listed.write_text('[bar-chart-3]\nchapter = 3\nalt = "a"\ncaption = "c"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(
            "figures.toml: figure 'bar-chart-3' (chapter 3) has no function draw_bar_chart_3 in figures.py")):
        figures._figures(listed)
