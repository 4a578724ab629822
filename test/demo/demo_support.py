"""Helpers of the demo's test: run scripts/demo.py once into a folder, find headless Chromium, render
report.html (DOM dump for the titles and the plots' boxes, a screenshot for the pixels) and look at regions of
the screenshot."""

from __future__ import annotations

import html
import html.parser
import os
import shutil
import subprocess
import sys
from pathlib import Path

from lockstep_testing.harness import REPO_ROOT
from lockstep_testing.png import read_rgb

WIDTH_PX = 1400


def run_demo(out: Path, timeout: float = 900.0) -> subprocess.CompletedProcess:
    """`python3 scripts/demo.py --out <out>` (the binaries come from the cargo build before the suite)."""
    return subprocess.run([sys.executable, str(REPO_ROOT / "scripts/demo.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT)


def chromium() -> str:
    """The headless browser: Debian's `chromium` (scripts/setup.sh installs it), else another Chrome. Not
    found is a failure that says how to get it, never a skip (CI installs it)."""
    for name in (os.environ.get("LOCKSTEP_CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise AssertionError("headless Chromium not found: `apt-get install chromium` (scripts/setup.sh installs it), "
                         "or point LOCKSTEP_CHROMIUM at a Chrome binary")


def _browser(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    run = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          "--disable-dev-shm-usage", "--no-first-run", "--force-device-scale-factor=1", *args],
                         capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, f"chromium {' '.join(args)} failed ({run.returncode}): {run.stderr[-2000:]}"
    return run


class Page(html.parser.HTMLParser):
    """What the DOM dump holds: the plot figures (id, h2 title, data-box of the image), the body's
    data-height, the key figures table's rows."""

    def __init__(self, dom: str):
        super().__init__()
        self.figures: dict[str, dict] = {}
        self.height = 0
        self.rows: list[list[str]] = []
        self._figure = None
        self._h2 = False
        self._cell = None
        self._table = False
        self.feed(dom)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body" and a.get("data-height"):
            self.height = int(a["data-height"])
        elif tag == "figure" and (a.get("id") or "").startswith("plot-"):
            self._figure = a["id"][5:]
            self.figures[self._figure] = {"title": "", "box": None}
        elif tag == "h2" and self._figure:
            self._h2 = True
        elif tag == "img" and self._figure and a.get("data-box"):
            self.figures[self._figure]["box"] = [int(v) for v in a["data-box"].split(",")]
        elif tag == "table" and a.get("id") == "figures-table":
            self._table = True
        elif tag == "tr" and self._table:
            self.rows.append([])
        elif tag in ("td", "th") and self._table:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "figure":
            self._figure = None
        elif tag == "h2":
            self._h2 = False
        elif tag == "table":
            self._table = False
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(self._cell.strip())
            self._cell = None

    def handle_data(self, data):
        if self._h2 and self._figure:
            self.figures[self._figure]["title"] += data
        if self._cell is not None:
            self._cell += data


def render(report: Path, shot: Path) -> Page:
    """The page's DOM after its script ran (at WIDTH_PX), and a screenshot of the whole page at that width
    into `shot`."""
    url = report.resolve().as_uri()
    page = Page(_browser(f"--window-size={WIDTH_PX},1000", "--dump-dom", url).stdout)
    assert page.height > 0, "report.html's script did not run (no data-height on <body>)"
    _browser(f"--window-size={WIDTH_PX},{page.height}", f"--screenshot={shot}", url)
    assert shot.exists(), f"chromium wrote no screenshot {shot}"
    return page


CHECKER = """<!DOCTYPE html><html><body><pre id="stats"></pre><img id="shot" src="data:image/png;base64,%s">
<script>
window.addEventListener('load', () => {
  const img = document.getElementById('shot');
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const out = {size: [c.width, c.height], regions: {}};
  for (const [key, [x, y, w, h]] of Object.entries(%s)) {
    const d = g.getImageData(x + 2, y + 2, Math.max(1, w - 4), Math.max(1, h - 4)).data;
    const colours = new Set(); let ink = 0, n = 0;
    for (let i = 0; i < d.length; i += 8) {
      const v = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
      colours.add(v); if (v !== 0xffffff) ink++; n++;
    }
    out.regions[key] = {colours: colours.size, ink: ink / Math.max(n, 1)};
  }
  document.getElementById('stats').textContent = JSON.stringify(out);
});
</script></body></html>"""


def screenshot_regions(shot: Path, boxes: dict[str, list[int]], work: Path) -> dict:
    """Per box (x, y, width, height) of the screenshot: distinct colours and the fraction of non-white pixels
    (every other pixel), counted by Chromium itself on a canvas (the screenshot inlined as a data URI, so the
    canvas may be read): no imaging library needed in Python."""
    import base64
    import json
    checker = work / "checker.html"
    checker.write_text(CHECKER % (base64.b64encode(shot.read_bytes()).decode(), json.dumps(boxes)))
    dom = _browser("--window-size=200,200", "--dump-dom", checker.resolve().as_uri()).stdout
    start, end = dom.find('<pre id="stats">'), dom.find("</pre>")
    text = dom[start + len('<pre id="stats">'):end]
    assert text.strip(), f"the checker page computed nothing: {dom[:500]}"
    return json.loads(html.unescape(text))


def region_stats(rows: list[bytes], box: list[int]) -> tuple[int, float]:
    """(distinct colours, fraction of non-white pixels) inside box = x, y, width, height (sampled every 2 px)."""
    x, y, w, h = box
    colours, dark, total = set(), 0, 0
    for yy in range(y + 2, min(y + h - 2, len(rows)), 2):
        row = rows[yy]
        for xx in range(x + 2, min(x + w - 2, len(row) // 3), 2):
            px = row[3 * xx:3 * xx + 3]
            colours.add(px)
            dark += px != b"\xff\xff\xff"
            total += 1
    return len(colours), dark / max(total, 1)


def png_stats(path: Path) -> tuple[int, int, int, float]:
    """(width, height, distinct colours, fraction of non-white pixels) of a PNG."""
    w, h, rows = read_rgb(path)
    colours, ink = region_stats(rows, [0, 0, w, h])
    return w, h, colours, ink
