r"""Read the built docs site the way a learner does: in a real, headless browser.

Serves a built site (``mkdocs build``) on localhost, opens every page in Debian's
Chromium (``/usr/bin/chromium``) driven by Playwright, and checks, page by page:

* **console** -- no console error, no uncaught exception, no failed request;
* **offline** -- no request leaves localhost (fonts, scripts, images, iframes);
* **math** -- every formula typeset by KaTeX, no KaTeX error, no raw ``$$``,
  ``\(`` or ``\[`` left in the text a reader sees, and no displayed formula wider
  than the text column (it would be cut off, or scroll sideways);
* **diagrams** -- every mermaid diagram drawn as an SVG;
* **images** -- every ``<img>`` loaded (a non-zero natural width);
* **links** -- every internal link points at a file of the site, and its
  ``#fragment`` at an id on that page.

It also opens the home page from the file system (``file://``, the way a
downloaded copy of the site is read) and runs a search there, and saves a
full-page screenshot of every chapter page.

Playwright for Python (the ``browser`` dependency group) starts the system's
Chromium through ``executable_path``: it never uses or downloads a browser of its
own (do not run ``playwright install``).

Usage::

    python scripts/docs_browser.py --site build/docs-browser/site \
        --screenshots build/docs-browser/screenshots

Exit status 0 when every check passes, 1 otherwise; one line per page.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import functools
import html.parser
import http.server
import json
import shutil
import sys
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from kata import process  # noqa: E402 - standard library only

try:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - told at run time, with the command that installs it
    sync_playwright = None

CHROMIUM_FLAGS = (  # Playwright adds --headless, --hide-scrollbars, --disable-dev-shm-usage, a temporary profile
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
VIEWPORT = {"width": 1280, "height": 900}
PAGE_TIMEOUT_S = 30.0
LOCAL_SCHEMES = ("data", "blob", "about", "file", "chrome-error")

# Runs in the page once it has settled; returns what the checks need as JSON.
COLLECT_JS = r"""
(() => {
  const skip = "pre, code, script, style, textarea, .katex, .mermaid, kbd";
  const raw = [];
  const root = document.querySelector("article") || document.body;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement && n.parentElement.closest(skip)) continue;
    const t = n.textContent;
    for (const d of ["$$", "\\(", "\\[", "\\begin{"]) {
      if (t.includes(d)) raw.push(t.trim().slice(0, 80));
    }
  }
  const math = [...document.querySelectorAll(".arithmatex")];
  return JSON.stringify({
    math_total: math.length,
    math_unrendered: math.filter(e => !e.querySelector(".katex"))
                         .map(e => e.textContent.trim().slice(0, 80)),
    katex_errors: [...document.querySelectorAll(".katex-error")]
                    .map(e => e.getAttribute("title") || e.textContent),
    raw_delimiters: raw,
    too_wide: [...document.querySelectorAll(".katex-display")]
                .filter(e => e.scrollWidth > e.clientWidth + 1)
                .map(e => {
                  const tex = e.querySelector('annotation[encoding="application/x-tex"]');
                  return `${e.scrollWidth} px in ${e.clientWidth} px: ` +
                         (tex ? tex.textContent : e.textContent).trim().replace(/\s+/g, " ").slice(0, 70);
                }),
    mermaid_pending: document.querySelectorAll("pre.mermaid").length,
    images: [...document.images].map(i => ({
      src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0})),
    links: [...document.querySelectorAll("a[href]")].map(a => a.href),
    height: Math.ceil(document.documentElement.scrollHeight),
  });
})()
"""

# True once the page's scripts have done their work (or there is none to do).
READY_JS = r"""
(() => document.readyState === "complete"
  && document.querySelectorAll("pre.mermaid").length === 0
  && [...document.querySelectorAll(".arithmatex")]
       .every(e => e.querySelector(".katex")))()
"""


class Tab:
    """One browser page, with what it reported (console, errors, requests) since it was last drained."""

    def __init__(self, browser) -> None:
        self.page = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
        self.page.set_default_timeout(60_000)
        self._seen: list[tuple] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self._seen.append(
            ("exception", error.stack or f"{error.name}: {error.message}")))
        self.page.on("request", lambda request: self._seen.append(("request", request.url)))
        self.page.on("response", lambda response: self._seen.append(("response", response.status, response.url)))
        self.page.on("requestfailed", lambda request: self._seen.append(
            ("failed", request.failure or "", request.url)))
        # Material draws each mermaid diagram into a *closed* shadow root, out of reach of page scripts
        # and of Playwright's selectors; the DevTools DOM (``pierce``) still sees it.
        self.devtools = self.page.context.new_cdp_session(self.page)

    def _console(self, message) -> None:
        if message.type in ("error", "assert"):
            # Chromium's own log entries (a resource that failed, a blocked request) come without arguments.
            kind = "console" if message.args else "browser"
            self._seen.append((kind, message.text, message.location.get("url", "")))

    def events(self) -> list[tuple]:
        """Drain what the page reported so far."""
        seen, self._seen = self._seen, []
        return seen

    def evaluate(self, expression: str):
        """Run JavaScript in the page; return its value (JSON-serialisable), raise on an exception."""
        return self.page.evaluate(expression)

    def open(self, url: str) -> list[tuple]:
        """Load url, wait until its scripts have settled, return what it reported."""
        self.events()
        deadline = time.monotonic() + PAGE_TIMEOUT_S
        try:
            self.page.goto(url, wait_until="load", timeout=PAGE_TIMEOUT_S * 1000)
            self.page.wait_for_function(READY_JS, polling=50,
                                        timeout=max(deadline - time.monotonic(), 0.1) * 1000)
        except PlaywrightError as error:  # not loaded, or not settled in time: the checks will say what is missing
            self._seen.append(("load", str(error).splitlines()[0]))
        self.page.wait_for_timeout(300)  # late console errors (a failed font, a promise)
        return self.events()

    def mermaid_svgs(self) -> tuple[int, int]:
        """(diagram containers, containers holding an <svg>), shadow roots included."""
        root = self.devtools.send("DOM.getDocument", {"depth": -1, "pierce": True})["root"]
        total = drawn = 0

        def has_svg(node: dict) -> bool:
            if node.get("nodeName", "").lower() == "svg":
                return True
            kids = node.get("children", []) + node.get("shadowRoots", [])
            return any(has_svg(k) for k in kids)

        def walk(node: dict) -> None:
            nonlocal total, drawn
            attrs = node.get("attributes", [])
            classes = dict(zip(attrs[::2], attrs[1::2], strict=True)).get("class", "").split()
            if "mermaid" in classes and node.get("nodeName") in ("DIV", "PRE"):
                total += 1
                drawn += has_svg(node)
                return
            for kid in node.get("children", []) + node.get("shadowRoots", []):
                walk(kid)

        walk(root)
        return total, drawn

    def screenshot(self, path: Path, height: int) -> None:
        """Save a PNG of the page's top ``height`` pixels (at most 16000) at the viewport's width."""
        height = max(VIEWPORT["height"], min(height, 16000))
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=path, full_page=True,
                             clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": height})


class _Ids(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs) -> None:
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)


def page_ids(path: Path) -> set[str]:
    """Every ``id`` (and ``name``) in a page's HTML: the anchors a link's #fragment may name."""
    parser = _Ids()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.ids


@contextlib.contextmanager
def serve(site: Path):
    """Serve site on an ephemeral localhost port; yield its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def event_problems(events: list[tuple], base: str) -> list[str]:
    """Console errors, exceptions, failed and off-site requests."""
    problems = []
    for kind, *details in events:
        if kind == "console":
            problems.append(f"console error: {details[0][:200]}")
        elif kind == "browser":
            problems.append(f"browser error: {details[0][:160]} {details[1]}")
        elif kind == "exception":
            problems.append(f"uncaught exception: {details[0][:200]}")
        elif kind == "load":
            problems.append(f"page did not load: {details[0][:200]}")
        elif kind == "request":
            url = details[0]
            scheme = urllib.parse.urlsplit(url).scheme
            if scheme not in LOCAL_SCHEMES and not url.startswith(base):
                problems.append(f"request leaves the site: {url}")
        elif kind == "response" and details[0] >= 400:
            problems.append(f"HTTP {details[0]}: {details[1]}")
        elif kind == "failed" and details[0] != "net::ERR_ABORTED":  # aborted: cancelled by the page itself
            problems.append(f"request failed: {details[0]}")
    return problems


def check_page(tab: Tab, url: str, base: str, site: Path, ids: dict[str, set[str]],
               shots: Path | None, relative: str) -> tuple[list[str], dict]:
    """Open one page and run every check on it; return its problems and what it holds (for the summary)."""
    events = tab.open(url)
    problems = event_problems(events, base)
    data = json.loads(tab.evaluate(COLLECT_JS))
    for tex in data["math_unrendered"]:
        problems.append(f"formula not typeset: {tex}")
    for message in data["katex_errors"]:
        problems.append(f"KaTeX error: {message[:160]}")
    for text in data["raw_delimiters"]:
        problems.append(f"raw math delimiter left in text: {text!r}")
    for formula in data["too_wide"]:
        problems.append(f"displayed formula wider than the text column, {formula}")
    total, drawn = tab.mermaid_svgs()
    if data["mermaid_pending"] or drawn < total:
        problems.append(f"mermaid: {drawn} of {total} diagrams drawn as SVG")
    for image in data["images"]:
        if not image["ok"]:
            problems.append(f"image did not load: {image['src']}")
    for href in sorted(set(data["links"])):
        problems += link_problems(href, base, site, ids)
    if shots is not None:
        tab.screenshot(shots / (Path(relative).with_suffix("").as_posix()
                                .replace("/", "__") + ".png"), data["height"])
    stats = {"math": data["math_total"], "diagrams": total,
             "images": len(data["images"]), "links": len(set(data["links"]))}
    return problems, stats


def link_problems(href: str, base: str, site: Path, ids: dict[str, set[str]]) -> list[str]:
    """Why one link does not resolve (other host, no such file, no such anchor), or nothing."""
    parts = urllib.parse.urlsplit(href)
    if parts.scheme in ("mailto", "javascript", "data"):
        return []
    if not href.startswith(base):
        return [f"link leaves the site: {href}"]
    path = urllib.parse.unquote(parts.path)[1:]
    if path == "" or path.endswith("/"):
        path += "index.html"
    if not (site / path).is_file():
        return [f"broken link: {href} (no file {path})"]
    if parts.fragment and path.endswith(".html"):
        fragment = urllib.parse.unquote(parts.fragment)
        if path not in ids:  # each page parsed once (``setdefault`` would parse it for every link to it)
            ids[path] = page_ids(site / path)
        if fragment not in ids[path]:
            return [f"broken anchor: {href} (no id {fragment!r} in {path})"]
    return []


def check_search_offline(tab: Tab, site: Path, query: str) -> tuple[list[str], int]:
    """Open the home page from the file system, the way a downloaded copy is read, and search it."""
    url = (site / "index.html").resolve().as_uri()
    problems = event_problems(tab.open(url), url)
    if not tab.evaluate("!!document.querySelector('[data-md-toggle=search]')"
                        " && !!document.querySelector('input[data-md-component=search-query]')"):
        return problems + ["no search box found on the home page"], 0
    tab.evaluate("document.querySelector('[data-md-toggle=search]').click()")
    count, deadline = 0, time.monotonic() + 60  # a cold machine can take long to load the index
    while not count and time.monotonic() < deadline:
        # Type the query (real key presses: the search box reads its value on keyup) again every few
        # seconds: keys typed before the search worker has loaded its index are not searched again.
        tab.evaluate("(() => { const q = document.querySelector('input[data-md-component=search-query]');"
                     " q.value = ''; q.focus(); })()")
        tab.page.keyboard.type(query)
        retype = time.monotonic() + 3
        while not count and time.monotonic() < min(retype, deadline):
            tab.page.wait_for_timeout(200)
            count = tab.evaluate("document.querySelectorAll('.md-search-result__item').length")
    if not count:
        state = tab.evaluate(
            "(() => { const q = document.querySelector('input[data-md-component=search-query]');"
            " const m = document.querySelector('.md-search-result__meta');"
            " return `query=${q ? JSON.stringify(q.value) : 'none'},`"
            " + ` meta=${m ? JSON.stringify(m.textContent) : 'none'}`;"
            " })()")
        problems.append(f"search for {query!r} from file:// found nothing ({state})")
    return problems, count


def chromium_binary() -> str:
    """The system's Chromium; exit with the install command when there is none."""
    for name in ("chromium", "chromium-browser"):
        if found := shutil.which(name):
            return found
    sys.exit("docs-browser: Chromium not found; install Debian's package: "
             "apt-get install -y chromium")


def read_pages(binary: str, pages: list[str], base: str, site: Path, screenshots: Path | None,
               shoot: str) -> list[tuple[str, list[str], dict]]:
    """(page, its problems, its counts) for each of ``pages``, read in turn by a browser of its own.

    One browser, with a Playwright of its own, per thread: Playwright's sync API is not to be shared between
    threads. Chromium draws each page in processes of its own, so two browsers read two pages at once.
    """
    done, ids = [], {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=binary, args=list(CHROMIUM_FLAGS), headless=True)
        try:
            tab = Tab(browser)
            for relative in pages:
                shots = screenshots if relative.startswith(shoot) else None
                done.append((relative, *check_page(tab, base + relative, base, site, ids, shots, relative)))
        finally:
            browser.close()
    return done


def main(argv: list[str] | None = None) -> int:
    """Check every page of the site; return 0 when all checks pass, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, required=True, help="built site directory")
    parser.add_argument("--screenshots", type=Path, help="where chapter screenshots go")
    parser.add_argument("--no-screenshots", action="store_true",
                        help="take none, whatever --screenshots says (`.ci/run`: nobody looks at them there)")
    parser.add_argument("--search", default="attention",
                        help="word to search for from file:// (empty: skip the search check)")
    parser.add_argument("--shoot", default="chapters/",
                        help="screenshot pages whose path starts with this")
    parser.add_argument("--browsers", type=int, default=process.cores(),
                        help="browsers reading the pages side by side (default: one a core, %(default)s)")
    args = parser.parse_args(argv)
    if args.browsers < 1:
        parser.error(f"--browsers must be at least 1, got {args.browsers}")
    if args.no_screenshots:
        args.screenshots = None
    site = args.site.resolve()
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if "assets" not in p.relative_to(site).parts)
    if not pages:
        sys.exit(f"docs-browser: no pages in {site}; build the site first")
    if args.screenshots is not None:  # no stale pictures of pages that are gone
        args.screenshots.mkdir(parents=True, exist_ok=True)
        for old in args.screenshots.glob("*.png"):
            old.unlink()
    binary = chromium_binary()
    if sync_playwright is None:
        sys.exit("docs-browser: Playwright for Python is not installed; `nox -s docs-browser` installs it "
                 "(the 'browser' dependency group). Never run `playwright install`: the system's Chromium is used.")
    failures, checks = 0, len(pages)
    shares = [pages[k::args.browsers] for k in range(max(1, min(args.browsers, len(pages))))]
    with serve(site) as base, concurrent.futures.ThreadPoolExecutor(len(shares)) as pool:
        def read(share: list[str]) -> list[tuple[str, list[str], dict]]:
            return read_pages(binary, share, base, site, args.screenshots, args.shoot)

        read_all = sorted(page for share in pool.map(read, shares) for page in share)
    for relative, problems, stats in read_all:  # in the site's order, once every browser is done
        mark = "✗" if problems else "✓"
        summary = ", ".join(f"{v} {k}" for k, v in stats.items())
        print(f"{mark} {relative}  ({summary})")
        for problem in problems:
            print(f"    {problem}")
        failures += bool(problems)
    if args.search:
        checks += 1
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=binary, args=list(CHROMIUM_FLAGS), headless=True)
            try:
                tab = Tab(browser)
                problems, hits = check_search_offline(tab, site, args.search)
                if not hits:  # on a loaded machine the worker can miss the first page load; load it once more
                    print(f"    first try: {'; '.join(problems)}; loading the page again")
                    problems, hits = check_search_offline(tab, site, args.search)
            finally:
                browser.close()
        print(f"{'✗' if problems else '✓'} search from file:// for {args.search!r}: {hits} results")
        for problem in problems:
            print(f"    {problem}")
        failures += bool(problems)
    print(f"docs-browser: {checks - failures}/{checks} checks passed"
          + (f"; screenshots in {args.screenshots}" if args.screenshots else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
