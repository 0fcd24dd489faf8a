r"""Read the built docs site the way a learner does: in a real, headless browser.

Serves a built site (``mkdocs build``) on localhost, opens every page in Debian's
Chromium (``/usr/bin/chromium``; nothing is downloaded) and checks, page by page:

* **console** -- no console error, no uncaught exception, no failed request;
* **offline** -- no request leaves localhost (fonts, scripts, images, iframes);
* **math** -- every formula typeset by KaTeX, no KaTeX error, no raw ``$$``,
  ``\(`` or ``\[`` left in the text a reader sees;
* **diagrams** -- every mermaid diagram drawn as an SVG;
* **images** -- every ``<img>`` loaded (a non-zero natural width);
* **links** -- every internal link points at a file of the site, and its
  ``#fragment`` at an id on that page.

It also opens the home page from the file system (``file://``, the way a
downloaded copy of the site is read) and runs a search there, and saves a
full-page screenshot of every chapter page.

The browser is driven with the Chrome DevTools Protocol over a pipe
(``--remote-debugging-pipe``): JSON messages separated by NUL bytes on file
descriptors 3 (to the browser) and 4 (from it), so no websocket client and no
third-party package are needed.

Usage::

    python scripts/docs_browser.py --site build/docs-browser/site \
        --screenshots build/docs-browser/screenshots

Exit status 0 when every check passes, 1 otherwise; one line per page.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import functools
import html.parser
import http.server
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
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


class CDPError(RuntimeError):
    """The browser answered a DevTools command with an error."""


class Chromium:
    """A headless Chromium driven over ``--remote-debugging-pipe``."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # Move the child's ends out of the way of 3 and 4 before dup2 there.
        keep_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
        keep_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
        os.close(to_child_r)
        os.close(from_child_w)

        def wire_pipes() -> None:  # runs in the child, before exec
            os.dup2(keep_r, 3)
            os.dup2(keep_w, 4)

        self.process = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4, keep_r, keep_w),
            preexec_fn=wire_pipes,
        )
        os.close(keep_r)
        os.close(keep_w)
        self._next_id = 0
        self._replies: dict[int, dict] = {}
        self._replied = threading.Condition()
        self.events: queue.Queue[dict] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        while chunk := os.read(self._from_child, 1 << 16):
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self._replied:
                        self._replies[message["id"]] = message
                        self._replied.notify_all()
                else:
                    self.events.put(message)
        with self._replied:  # the browser went away: wake every waiter
            self._replies[-1] = {}
            self._replied.notify_all()

    def call(self, method: str, session: str | None = None, timeout: float = 60.0,
             **params) -> dict:
        """Send one DevTools command and wait for its answer."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._replied:
            while self._next_id not in self._replies:
                if -1 in self._replies:
                    raise CDPError(f"{method}: the browser exited")
                if not self._replied.wait(deadline - time.monotonic()):
                    raise CDPError(f"{method}: no answer in {timeout:.0f} s")
            reply = self._replies.pop(self._next_id)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def close(self) -> None:
        """Ask the browser to quit; kill it if it does not."""
        with contextlib.suppress(Exception):
            self.call("Browser.close", timeout=5)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_child)


class Tab:
    """One page target, with the events the checks listen to."""

    def __init__(self, browser: Chromium) -> None:
        self.browser = browser
        target = browser.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = browser.call(
            "Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride", deviceScaleFactor=1,
                  mobile=False, **VIEWPORT)

    def send(self, method: str, **params) -> dict:
        """Send one DevTools command to this tab."""
        return self.browser.call(method, session=self.session, **params)

    def events(self) -> list[dict]:
        """Drain the events received so far for this tab."""
        out = []
        while True:
            try:
                event = self.browser.events.get_nowait()
            except queue.Empty:
                return out
            if event.get("sessionId") == self.session:
                out.append(event)

    def evaluate(self, expression: str):
        """Run JavaScript in the page; return its value (JSON-serialisable), raise on an exception."""
        result = self.send("Runtime.evaluate", expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise CDPError(result["exceptionDetails"].get("text", "evaluate failed"))
        return result["result"].get("value")

    def open(self, url: str) -> list[dict]:
        """Load url, wait until its scripts have settled, return its events."""
        self.events()
        self.send("Page.navigate", url=url)
        seen: list[dict] = []
        deadline = time.monotonic() + PAGE_TIMEOUT_S
        while time.monotonic() < deadline:
            seen += self.events()
            if any(e["method"] == "Page.loadEventFired" for e in seen):
                with contextlib.suppress(CDPError):
                    if self.evaluate(READY_JS):
                        break
            time.sleep(0.05)
        time.sleep(0.3)  # late console errors (a failed font, a promise)
        return seen + self.events()

    def mermaid_svgs(self) -> tuple[int, int]:
        """(diagram containers, containers holding an <svg>), shadow roots included.

        Material draws each diagram into a *closed* shadow root, out of reach
        of page scripts; the DevTools DOM (``pierce``) still sees it.
        """
        root = self.send("DOM.getDocument", depth=-1, pierce=True)["root"]
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
        shot = self.send(
            "Page.captureScreenshot", format="png", captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": height,
                  "scale": 1})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))


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


def event_problems(events: list[dict], base: str) -> list[str]:
    """Console errors, exceptions, failed and off-site requests."""
    problems = []
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", "")))
                            for a in params.get("args", []))
            problems.append(f"console error: {text[:200]}")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            problems.append(f"uncaught exception: {str(text)[:200]}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            problems.append(f"browser error: {entry['text'][:160]} {entry.get('url', '')}")
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            scheme = urllib.parse.urlsplit(url).scheme
            if scheme not in LOCAL_SCHEMES and not url.startswith(base):
                problems.append(f"request leaves the site: {url}")
        elif method == "Network.responseReceived":
            status = params["response"]["status"]
            if status >= 400:
                problems.append(f"HTTP {status}: {params['response']['url']}")
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            problems.append(f"request failed: {params.get('errorText')}")
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
        if fragment not in ids.setdefault(path, page_ids(site / path)):
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
        # Type the query again every few seconds: keys typed before the search worker has loaded
        # its index are not searched again once it is ready.
        tab.evaluate("(() => { const q = document.querySelector('input[data-md-component=search-query]');"
                     " q.value = ''; q.focus(); })()")
        tab.send("Input.insertText", text=query)
        retype = time.monotonic() + 3
        while not count and time.monotonic() < min(retype, deadline):
            time.sleep(0.2)
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


def main(argv: list[str] | None = None) -> int:
    """Check every page of the site; return 0 when all checks pass, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, required=True, help="built site directory")
    parser.add_argument("--screenshots", type=Path, help="where chapter screenshots go")
    parser.add_argument("--search", default="attention",
                        help="word to search for from file:// (empty: skip the search check)")
    parser.add_argument("--shoot", default="chapters/",
                        help="screenshot pages whose path starts with this")
    args = parser.parse_args(argv)
    site = args.site.resolve()
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if "assets" not in p.relative_to(site).parts)
    if not pages:
        sys.exit(f"docs-browser: no pages in {site}; build the site first")
    if args.screenshots is not None:  # no stale pictures of pages that are gone
        args.screenshots.mkdir(parents=True, exist_ok=True)
        for old in args.screenshots.glob("*.png"):
            old.unlink()
    failures = 0
    ids: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory(prefix="docs-browser-") as profile, serve(site) as base:
        browser = Chromium(chromium_binary(), Path(profile))
        try:
            browser.call("Browser.getVersion")
            tab = Tab(browser)
            for relative in pages:
                shoot = args.screenshots if relative.startswith(args.shoot) else None
                problems, stats = check_page(tab, base + relative, base, site, ids,
                                             shoot, relative)
                mark = "✗" if problems else "✓"
                summary = ", ".join(f"{v} {k}" for k, v in stats.items())
                print(f"{mark} {relative}  ({summary})")
                for problem in problems:
                    print(f"    {problem}")
                failures += bool(problems)
            checks = len(pages)
            if args.search:
                checks += 1
                problems, hits = check_search_offline(tab, site, args.search)
                if not hits:  # on a loaded machine the worker can miss the first page load; load it once more
                    print(f"    first try: {'; '.join(problems)}; loading the page again")
                    problems, hits = check_search_offline(tab, site, args.search)
                print(f"{'✗' if problems else '✓'} search from file:// for "
                      f"{args.search!r}: {hits} results")
                for problem in problems:
                    print(f"    {problem}")
                failures += bool(problems)
        finally:
            browser.close()
    print(f"docs-browser: {checks - failures}/{checks} checks passed"
          + (f"; screenshots in {args.screenshots}" if args.screenshots else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
