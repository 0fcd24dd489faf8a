"""scripts/docs_browser.py's link check, without a browser: files and anchors resolve, each page is read once."""

import importlib.util

from kata.project import ROOT

_spec = importlib.util.spec_from_file_location("kata_docs_browser", ROOT / "scripts" / "docs_browser.py")
docs_browser = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs_browser)
BASE = "http://127.0.0.1:8000/"


def test_a_link_to_a_missing_file_or_anchor_is_named_and_each_page_is_parsed_once(tmp_path, monkeypatch):
    """#here resolves, #nowhere and a missing page do not; forty links to one page parse it once"""
    (tmp_path / "a.html").write_text('<h1 id="here">A</h1><a name="old"></a>', encoding="utf-8")
    parsed = []
    real = docs_browser.page_ids
    monkeypatch.setattr(docs_browser, "page_ids", lambda path: parsed.append(path) or real(path))
    ids: dict = {}
    assert docs_browser.link_problems(BASE + "a.html#here", BASE, tmp_path, ids) == []
    assert docs_browser.link_problems(BASE + "a.html#old", BASE, tmp_path, ids) == []
    assert docs_browser.link_problems(BASE + "a.html#nowhere", BASE, tmp_path, ids) == [
        f"broken anchor: {BASE}a.html#nowhere (no id 'nowhere' in a.html)"]
    assert docs_browser.link_problems(BASE + "b.html", BASE, tmp_path, ids) == [
        f"broken link: {BASE}b.html (no file b.html)"]
    assert docs_browser.link_problems("https://example.com/", BASE, tmp_path, ids) == [
        "link leaves the site: https://example.com/"]
    for _ in range(40):
        docs_browser.link_problems(BASE + "a.html#here", BASE, tmp_path, ids)
    assert parsed == [tmp_path / "a.html"]
