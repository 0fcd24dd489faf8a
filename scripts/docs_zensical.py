"""Build the docs with Zensical as well as MkDocs, and report how the two sites differ.

Material for MkDocs is in maintenance mode (end of life 2027-05-05); Zensical, by the same team, reads
the same ``mkdocs.yml``. This report shows what switching would change today, so that the switch stays
one line: ``nox -s docs-zensical``. It is a report, not a gate: it always exits 0 once both builds ran.

The report lists: Zensical's version and warnings; pages one build has and the other lacks; content
the MkDocs hooks (``docs/hooks/``) generate that Zensical leaves out (it does not run MkDocs hooks, so
``<!-- kata:... -->`` markers stay unrendered); references to other hosts; local references to missing
files; and, with ``--browser``, the headless-Chromium check of the Zensical site.

Zensical builds from a copy of ``docs/`` under ``build/docs-zensical/`` (it wants ``docs_dir`` inside
the folder of its config), with ``strict`` off so that every warning is counted rather than the first
aborting the build.
"""

from __future__ import annotations

import argparse
import collections
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts import site_scan  # noqa: E402

OUT = ROOT / "build" / "docs-zensical"
BRIDGE = "docs.hooks.markers"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
MARKER = re.compile(r"<!--\s*kata:([\w-]+)[^>]*-->")


def pages(site: Path) -> set[str]:
    """Every HTML page of a built site, relative to it."""
    return {p.relative_to(site).as_posix() for p in site.rglob("*.html") if "assets" not in p.parts}


def build_mkdocs(site: Path) -> tuple[int, str]:
    """The reference build, exactly as selfcheck makes it."""
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def build_zensical(project: Path, bridge: bool) -> tuple[int, str]:
    """Zensical on a staged copy of docs/ and mkdocs.yml (strict off, so every warning is seen).

    With ``bridge``, the config also lists the Markdown extension that renders the kata markers
    (``docs/hooks/markers.py``), imported from the repository root.
    """
    if project.exists():
        shutil.rmtree(project)
    project.mkdir(parents=True)
    shutil.copytree(ROOT / "docs", project / "docs")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = re.sub(r"^strict:\s*true\s*$", "strict: false", config, flags=re.M)
    if bridge:
        config = re.sub(r"^markdown_extensions:\s*$", f"markdown_extensions:\n  - {BRIDGE}", config, count=1,
                        flags=re.M)
    (project / "mkdocs.yml").write_text(config, encoding="utf-8")
    zensical = shutil.which("zensical", path=str(Path(sys.executable).parent)) or "zensical"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([zensical, "build", "--clean", "--config-file", str(project / "mkdocs.yml")],
                          cwd=project, capture_output=True, text=True, check=False, env=env)
    return proc.returncode, ANSI.sub("", proc.stdout + proc.stderr)


def warnings(log: str) -> collections.Counter:
    """Zensical's warnings, counted by message."""
    return collections.Counter(m.group(1).strip() for m in re.finditer(r"^(?:Warning|Error):\s*(.+)$", log, re.M))


def unrendered(site: Path) -> dict[str, collections.Counter]:
    """Per page, the generator markers left in the HTML (content the MkDocs hooks would have produced)."""
    found = {}
    for page in sorted(pages(site)):
        kinds = collections.Counter(MARKER.findall((site / page).read_text(encoding="utf-8")))
        if kinds:
            found[page] = kinds
    return found


def main(argv: list[str] | None = None) -> int:
    """Build with both, print the report; 0 whenever both builds ran (a report, not a gate)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--browser", action="store_true", help="also read the Zensical site in headless Chromium")
    parser.add_argument("--no-bridge", action="store_true",
                        help=f"build mkdocs.yml exactly as it is, without adding {BRIDGE} to markdown_extensions")
    args = parser.parse_args(argv)

    mk_site, project = OUT / "mkdocs-site", OUT / "project"
    code, log = build_mkdocs(mk_site)
    if code:
        print(log[-3000:])
        print("docs-zensical: the MkDocs build itself fails; fix that first (nox -s selfcheck)")
        return 1
    z_code, z_log = build_zensical(project, bridge=not args.no_bridge)
    z_site = project / "site"
    try:
        version = importlib.metadata.version("zensical")
    except importlib.metadata.PackageNotFoundError:
        version = "not installed"

    print(f"Zensical {version} vs MkDocs {importlib.metadata.version('mkdocs')} + "
          f"Material {importlib.metadata.version('mkdocs-material')}, same mkdocs.yml"
          + ("" if args.no_bridge else f" + `- {BRIDGE}` in markdown_extensions (the switch)"))
    print(f"  build          : {'ok' if z_code == 0 and z_site.is_dir() else f'FAILED (exit {z_code})'}")
    if z_code or not z_site.is_dir():
        print(z_log[-3000:])
        print("docs-zensical: report only (not a gate)")
        return 0
    found = warnings(z_log)
    if not found:
        print("  warnings       : none (the build would pass with strict: true)")
    for message, count in found.most_common():
        print(f"  warning        : {count} × {message}")
    mk_pages, z_pages = pages(mk_site), pages(z_site)
    print(f"  pages          : {len(z_pages)} (MkDocs: {len(mk_pages)})")
    for page in sorted(mk_pages - z_pages):
        print(f"    only in MkDocs  : {page}")
    for page in sorted(z_pages - mk_pages):
        print(f"    only in Zensical: {page}")
    missing = unrendered(z_site)
    total = sum(sum(c.values()) for c in missing.values())
    print(f"  hook output    : {total} marker(s) left unrendered on {len(missing)} page(s)"
          + (" (Zensical does not run MkDocs hooks)" if total else ""))
    for page, kinds in missing.items():
        print(f"    {page}: " + ", ".join(f"{n} × kata:{k}" for k, n in sorted(kinds.items())))
    figures = sorted(p.name for p in (mk_site / "figures").glob("*.svg"))  # docs/figures/, committed
    shown = sum(len(re.findall(r'<img[^>]*src="(?:\.\./)*figures/', p.read_text(encoding="utf-8")))
                for p in z_site.rglob("*.html"))
    print(f"  figures        : {len(figures)} files in the MkDocs site; Zensical: "
          f"{len(list((z_site / 'figures').glob('*.svg')))} files, {shown} shown on its pages")
    external = site_scan.external(z_site)
    print(f"  external refs  : {len(external)}")
    for ref in external[:10]:
        print(f"    {ref.file}: {ref.url}")
    dead = site_scan.unresolved(z_site)
    print(f"  missing files  : {len(dead)}")
    for ref in dead[:10]:
        print(f"    {ref.file}: {ref.url}")
    if args.browser:
        print("  browser check of the Zensical site:")
        sys.stdout.flush()
        subprocess.run([sys.executable, str(ROOT / "scripts" / "docs_browser.py"), "--site", str(z_site),
                        "--search", ""], check=False)
    print("docs-zensical: report only (not a gate)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
