"""Scan a built docs site for what it points at: other hosts (not allowed) and local files (must exist).

A *reference* is anything the browser follows or loads by itself: ``src``, ``href``, ``srcset``,
``poster``, ``data``, ``action`` and ``xlink:href`` attributes, ``url(...)`` and ``@import`` in
stylesheets and ``style`` attributes, and ``<meta http-equiv="refresh">``. Strings inside JavaScript
are not references (the libraries mention many URLs in comments and messages); what scripts actually
load at run time is watched by the browser check (``scripts/docs_browser.py``), which fails on any
request that leaves localhost.

Used by ``tests/test_docs_site.py`` and the ``docs-zensical`` report.
"""

from __future__ import annotations

import html.parser
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

URL_ATTRIBUTES = {"src", "href", "poster", "data", "action", "formaction", "xlink:href", "background"}
CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)|@import\s+(['"])([^'"]+)\3""")
SCANNED = (".html", ".css", ".svg")


@dataclass(frozen=True)
class Reference:
    """One reference: the file it is in, and the URL as written."""

    file: str
    url: str

    @property
    def external(self) -> bool:
        """True when the URL names another host (``https://…``, ``//host/…``, ``ftp:``, ``ws:``)."""
        parts = urllib.parse.urlsplit(self.url.strip())
        if self.url.strip().startswith("//"):
            return True
        return parts.scheme.lower() in {"http", "https", "ftp", "ws", "wss"}

    @property
    def local(self) -> bool:
        """True for a relative or site-absolute path (not ``#anchor``, ``data:``, ``mailto:``, …)."""
        url = self.url.strip()
        return bool(url) and not url.startswith("#") and not urllib.parse.urlsplit(url).scheme \
            and not url.startswith("//")


def _css_urls(text: str) -> list[str]:
    return [m.group(2) or m.group(4) for m in CSS_URL.finditer(text)]


class _Collector(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs) -> None:
        values = dict(attrs)
        for name, value in attrs:
            if value is None:
                continue
            if name in URL_ATTRIBUTES:
                self.urls.append(value)
            elif name in ("srcset", "imagesrcset"):
                self.urls += [part.strip().split()[0] for part in value.split(",") if part.strip()]
            elif name == "style":
                self.urls += _css_urls(value)
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "refresh":
            m = re.search(r"url\s*=\s*(\S+)", values.get("content") or "", re.I)
            if m:
                self.urls.append(m.group(1).strip("'\""))
        self._in_style = tag == "style"

    def handle_endtag(self, tag) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data) -> None:
        if self._in_style:
            self.urls += _css_urls(data)


def references_in(path: Path, text: str | None = None) -> list[str]:
    """Every URL referenced by one HTML, SVG or CSS file."""
    text = path.read_text(encoding="utf-8", errors="replace") if text is None else text
    if path.suffix == ".css":
        return _css_urls(text)
    collector = _Collector()
    collector.feed(text)
    collector.close()
    return collector.urls


def references(site: Path) -> list[Reference]:
    """Every reference in every HTML, SVG and CSS file of a built site."""
    found = []
    for path in sorted(site.rglob("*")):
        if path.suffix in SCANNED and path.is_file():
            rel = path.relative_to(site).as_posix()
            found += [Reference(rel, url) for url in references_in(path)]
    return found


def external(site: Path) -> list[Reference]:
    """The references that leave the site."""
    return [r for r in references(site) if r.external]


def unresolved(site: Path) -> list[Reference]:
    """Local references whose file does not exist in the built site."""
    missing = []
    for ref in references(site):
        if not ref.local:
            continue
        path = urllib.parse.unquote(urllib.parse.urlsplit(ref.url.strip()).path)
        if not path:
            continue
        base = site if path.startswith("/") else (site / ref.file).parent
        target = (base / path.lstrip("/")).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            missing.append(ref)
    return missing
