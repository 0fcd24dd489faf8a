"""The built docs site: offline, complete, and generated from the sources it describes.

The site is built once per run with MkDocs (``--strict``) into a temporary folder (under ``nox -s selfcheck``:
into build/site, named in ``KATA_SITE``; the session builds the docs no other way), then scanned:
it must reference no other host, every local reference must exist, the Errata page must carry every
erratum of the answer keys, the API page every function of ``exercises/``, and every figure a page shows
must be the committed file of ``docs/figures/`` (drawn from ``solutions/`` by ``scripts/figures.py``;
``tests/test_figures.py`` checks the files), shown in a ``<figure>`` with its caption. The reader's view
(maths typeset, diagrams drawn, console clean) is checked in a real browser by ``nox -s docs-browser``.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kata import project
from kata.judge import answer_key
from scripts import site_scan

ROOT = answer_key.ROOT
DOCS = ROOT / "docs"
pytestmark = pytest.mark.slow  # the docs are built first


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built from the working tree with `mkdocs build --strict`.

    Into ``KATA_SITE`` where it is set (`nox -s selfcheck` sets build/site: the run's one build of the docs),
    else into a temporary folder.
    """
    out = Path(os.environ["KATA_SITE"]) if os.environ.get("KATA_SITE") else tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return out


def test_the_scanner_finds_external_and_missing_references(tmp_path):
    """the scan itself can fail: it sees a CDN script, a web font, a protocol-relative image, a dead file"""
    (tmp_path / "index.html").write_text(
        '<html><head><script src="https://cdn.example.org/lib.js"></script>'
        '<style>@import "//fonts.example.org/css";</style></head><body>'
        '<img src="//img.example.org/x.png" srcset="local.png 1x, https://img.example.org/y.png 2x">'
        '<a href="missing.html#top">dead</a><a href="#here">anchor</a><a href="mailto:a@b.c">mail</a>'
        '<svg><use xlink:href="sprite.svg#icon"></use></svg></body></html>', encoding="utf-8")
    (tmp_path / "local.png").write_bytes(b"")
    (tmp_path / "sprite.svg").write_text("<svg/>", encoding="utf-8")
    (tmp_path / "style.css").write_text('a { background: url("https://img.example.org/z.png") }', encoding="utf-8")
    found = sorted(r.url for r in site_scan.external(tmp_path))
    assert found == ["//fonts.example.org/css", "//img.example.org/x.png", "https://cdn.example.org/lib.js",
                     "https://img.example.org/y.png", "https://img.example.org/z.png"]
    assert [r.url for r in site_scan.unresolved(tmp_path)] == ["missing.html#top"]


def test_the_built_site_references_no_other_host(site):
    """no page, stylesheet or figure of the built site loads or links anything from another host"""
    found = site_scan.external(site)
    assert not found, "the site must work offline; these references leave it:\n" + "\n".join(
        f"  {r.file}: {r.url}" for r in found[:40])


def test_every_local_reference_of_the_built_site_exists(site):
    """every local src/href/url() (pages, scripts, KaTeX fonts, figures) points at a file of the site"""
    missing = site_scan.unresolved(site)
    assert not missing, "these references point at nothing:\n" + "\n".join(
        f"  {r.file}: {r.url}" for r in missing[:40])


def test_the_maths_diagram_and_search_libraries_ship_with_the_site(site):
    """KaTeX, mermaid and the file:// search shim are served from the site itself, and search has its index"""
    page = (site / "index.html").read_text(encoding="utf-8")
    for script in ("assets/vendor/katex/katex.min.js", "assets/vendor/mermaid/mermaid.min.js",
                   "assets/vendor/iframe-worker/shim.js", "assets/javascripts/katex-init.js"):
        assert f'src="{script}"' in page, f"index.html does not load {script}"
        assert (site / script).is_file(), f"{script} is not in the built site"
    assert (site / "search" / "search_index.js").is_file(), "the offline plugin wrote no search/search_index.js"


def test_the_errata_page_lists_every_erratum_of_every_answer_key(site):
    """every step with an erratum in reference/ appears on the Errata page, linked to its chapter page"""
    page = (site / "errata.html").read_text(encoding="utf-8")
    missing = []
    for chapter in answer_key.chapters():
        if f"Chapter {chapter.number}: " not in page:
            missing.append(f"chapter {chapter.number} has no section")
        html_page = Path(chapter.page).relative_to("docs").with_suffix(".html").as_posix()
        for step in chapter.steps:
            if step.erratum and f'href="{html_page}#{step.anchor}"' not in page:
                missing.append(f"{step.id} ({step.title})")
    assert not missing, "the Errata page misses:\n  " + "\n  ".join(missing)


def test_the_api_page_shows_every_function_of_exercises(site):
    """every public function in exercises/chapter*.py has its entry, with its signature, on the API page"""
    page = (site / "api.html").read_text(encoding="utf-8")
    missing = []
    for path in project.chapter_files(ROOT / "exercises").values():
        for name in re.findall(r"^def ([a-zA-Z]\w*)\(", path.read_text(encoding="utf-8"), re.M):
            if f'id="api-{path.stem}-{name}"' not in page:
                missing.append(f"{path.stem}.{name}")
    assert not missing, "the API page has no entry for:\n  " + "\n  ".join(missing)


def _shown_figures() -> dict[str, list[str]]:
    """{figure name: the pages (relative to docs/) whose markers show it}."""
    shown: dict[str, list[str]] = {}
    for page in sorted(DOCS.rglob("*.md")):
        for name in re.findall(r"<!--\s*kata:figure\s+([\w-]+)\s*-->", page.read_text(encoding="utf-8")):
            shown.setdefault(name, []).append(page.relative_to(DOCS).as_posix())
    return shown


def test_every_figure_is_the_committed_file_shown_with_its_caption(site):
    """every figure a page shows is docs/figures/NAME.svg, as it is, in a <figure> with its caption"""
    import tomllib

    listed = tomllib.loads((DOCS / "hooks" / "figures.toml").read_text(encoding="utf-8"))
    shown = _shown_figures()
    assert shown, "no page shows a figure"
    for name, pages in sorted(shown.items()):
        built = site / "figures" / f"{name}.svg"
        assert built.is_file(), f"figure {name} is not in the built site"
        assert built.read_bytes() == (DOCS / "figures" / f"{name}.svg").read_bytes(), (
            f"the site's figures/{name}.svg is not docs/figures/{name}.svg")
        for page in pages:
            html_page = (site / page).with_suffix(".html")
            text = html_page.read_text(encoding="utf-8")
            up = "../" * page.count("/")
            assert re.search(rf'<figure class="kata-figure">\s*<p><img alt="[^"]*" src="{up}figures/{name}\.svg"',
                             text), f"{html_page.name} does not show figures/{name}.svg in a <figure>"
            caption = " ".join(listed[name]["caption"].split()[:6])
            assert caption in text, f"{html_page.name} does not show figure {name}'s caption"


def test_material_is_pinned_below_10():
    """Material for MkDocs is in maintenance mode (end of life 2027-05-05): the docs group keeps it below 10"""
    import tomllib

    groups = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["dependency-groups"]
    material = [r for r in groups["docs"] if isinstance(r, str) and r.startswith("mkdocs-material")]
    assert material and "<10" in material[0].replace(" ", ""), f"docs group: {groups['docs']}"


def test_getting_started_quotes_the_real_stub_and_step_titles():
    """the Getting started page's pasted run matches today's chapter-4 stub message and answer-key titles"""
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    stub = (ROOT / "exercises" / "chapter04_attention.py").read_text(encoding="utf-8")
    quoted = re.findall(r'raise NotImplementedError\("[^"]*"\)', page)
    assert quoted, "the page quotes no stub line"
    for line in quoted:
        assert line in stub, f"the page quotes {line!r}, which is not in exercises/chapter04_attention.py"
    titles = {s.id: s.title for s in answer_key.load(4).steps}
    shown = re.findall(r"^  [✓✗·] (4\.\d+)\s+(.+?)(?:  not started)?$", page, re.M)
    assert shown, "the page shows no step lines"
    wrong = [f"{sid}: page {title!r}, key {titles.get(sid)!r}" for sid, title in shown if titles.get(sid) != title]
    assert not wrong, "step titles on the page differ from reference/chapter04_attention.toml:\n  " + "\n  ".join(wrong)
