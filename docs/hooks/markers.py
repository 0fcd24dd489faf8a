"""A Markdown extension that renders the ``<!-- kata:... -->`` markers where MkDocs hooks do not run.

Under MkDocs the hooks in this folder fill the markers (``on_page_markdown``) before Markdown sees the
page, so this extension finds nothing left to do. Zensical, Material for MkDocs' successor, reads the
same ``mkdocs.yml`` but does not run MkDocs hooks; it does run Markdown extensions. Listed in
``markdown_extensions`` as ``docs.hooks.markers`` (with the repository root importable), it calls the
very same render functions, so both builders produce the same pages:

- ``kata:worksheet N``, ``kata:hints N``, ``kata:errata N|all`` — ``answer_key.py``;
- ``kata:api`` — ``api.py``;
- ``kata:figure NAME`` — ``figures.py``; the image is the committed ``docs/figures/NAME.svg``, which
  Zensical copies into the site like any file of docs/.

``nox -s docs-zensical`` builds with it and reports what still differs.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from markdown import Extension
from markdown.preprocessors import Preprocessor

from kata.authoring.generated import docs_hook

HERE = Path(__file__).resolve().parent


def _page_path(md) -> str:
    """The page being rendered, relative to docs/ (from Zensical's rendering context), or "" if unknown."""
    context = md.preprocessors["rendering_context"] if "rendering_context" in md.preprocessors else None
    path = getattr(getattr(context, "page", None), "path", "") or ""
    return path.replace("\\", "/").removeprefix("docs/")


class KataMarkers(Preprocessor):
    """Replace every kata marker with the Markdown the MkDocs hooks would have produced."""

    def run(self, lines: list[str]) -> list[str]:  # noqa: D102 - Preprocessor API
        text = "\n".join(lines)
        if "kata:" not in text:
            return lines
        page = SimpleNamespace(file=SimpleNamespace(src_uri=_page_path(self.md)))
        text = docs_hook("answer_key").on_page_markdown(text, page, None, None)
        text = docs_hook("api").on_page_markdown(text, page, None, None)
        text = docs_hook("figures").on_page_markdown(text, page, None, None)
        return text.split("\n")


class KataMarkersExtension(Extension):
    """Register the preprocessor ahead of raw-HTML handling (which would hide the comments)."""

    def extendMarkdown(self, md) -> None:  # noqa: D102, N802 - Markdown API
        md.preprocessors.register(KataMarkers(md), "kata_markers", 40)


def makeExtension(**kwargs) -> KataMarkersExtension:  # noqa: N802 - Markdown API
    """Entry point for ``markdown_extensions: [docs.hooks.markers]``."""
    return KataMarkersExtension(**kwargs)
