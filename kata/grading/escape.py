"""Every text from a learner is hostile: this is how it is escaped for each place it lands.

A learner writes their name in the roster (through the instructor), their file names, and, through their
code, every exception message a report quotes. One function per destination, used everywhere:

- ``csv_cell``: a cell of ``gradebook.csv`` (or an LMS export) that a spreadsheet opens;
- ``markdown``: text inside a Markdown page (``summary.md``, the class summary on the run's page);
- ``html``: text inside ``report.html``;
- ``plain_label``: the matplotlib rcParams that draw labels as plain text (no mathtext).
"""

from __future__ import annotations

import html as _html
import re

# OWASP, "CSV Injection": a cell starting with one of these is read as a formula by Excel, LibreOffice and
# Google Sheets; a leading single quote makes the spreadsheet take it as text. ASVS 1.2.10 adds NUL.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\0")
# CommonMark: every ASCII punctuation character may be backslash-escaped, and then stands for itself.
_PUNCTUATION = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


def csv_cell(value) -> str:
    """A CSV cell a spreadsheet shows as text, never runs as a formula.

    Hand-written because neither the ``csv`` module nor the spreadsheets' import dialogs offer it: a cell
    starting with ``=``, ``+``, ``-``, ``@``, a tab, a carriage return or NUL gets a leading ``'`` (OWASP's
    rule). Quoting of commas, quotes and line breaks stays the ``csv`` writer's job.
    """
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def markdown(value, *, limit: int | None = None) -> str:
    r"""``value`` as literal text in Markdown (and in a table cell): no heading, link, image, HTML or code.

    Hand-written because Markdown has no quoting function in the standard library or in the renderers we
    use: every ASCII punctuation character is backslash-escaped (CommonMark: it then stands for itself, so
    ``</details>``, ``[a](b)``, ``![x](y)``, ``|`` and backticks are shown, not obeyed; ``https\://`` is
    no autolink), line breaks become spaces (a line break could start a heading or end a table row), and
    control characters become ``?``. ``limit`` cuts the text (before escaping, so no escape is split).
    """
    text = "" if value is None else str(value)
    text = " ".join(text.splitlines()) if text else text
    if limit is not None and len(text) > limit:
        text = text[:limit] + "…"
    return _PUNCTUATION.sub(r"\\\1", _CONTROL.sub("?", text))


def markdown_code(value, *, limit: int | None = None) -> str:
    """``value`` as a Markdown code span: shown as typed, nothing in it obeyed (HTML, links, emphasis).

    CommonMark's own rule: the fence is one backtick longer than the longest run of backticks inside, with
    a space on each side when the text starts or ends with a backtick; line breaks become spaces.
    """
    text = "" if value is None else str(value)
    text = _CONTROL.sub("?", " ".join(text.splitlines()) if text else text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + "…"
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def html(value) -> str:
    """``value`` as text inside HTML (element content or a quoted attribute): ``html.escape`` with quotes."""
    return _html.escape("" if value is None else str(value), quote=True)


# matplotlib reads a label with two ``$`` as mathtext (``Ka$$ie`` then fails to draw); a learner's name is
# text, so every figure is drawn with math parsing off.
PLAIN_LABELS = {"text.parse_math": False, "text.usetex": False}
