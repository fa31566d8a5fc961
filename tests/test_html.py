"""The built book as a reader gets it: a crawl of every HTML page.

A session fixture renders the book from the committed results (a copy of ``data/results`` in a temp folder, so the
run cannot touch the repository; the execution is ``committed_book`` of ``tests/conftest.py``, shared with
``tests/test_committed_results.py``), exactly what ``make book`` and the Pages workflow publish. Then

* every internal link, image and script resolves, and every ``#anchor`` exists on its target page (static parse);
* no page shows a log line, a tqdm widget warning or papermill's injected-parameters cell;
* in one headless Chromium (Chrome DevTools protocol over ``--remote-debugging-pipe``) every page loads with no
  console error, every ``<img>`` has loaded (natural width > 0), all maths is typeset by MathJax (each ``.math``
  element holds an ``mjx-container``) and no raw ``$$`` or ``\\(`` remains in the text.

Set ``MAELAB_TEST_BOOK_HTML`` to an already built ``_build/html`` folder to check that one instead of building.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from bs4 import BeautifulSoup

from maelab import paths

pytestmark = pytest.mark.book
ROOT = paths.repo_root()
SKIP_DIRS = ("_static", "_sources", "_images", "_sphinx_design_static")


@pytest.fixture(scope="session")
def site(request) -> Path:
    given = os.environ.get("MAELAB_TEST_BOOK_HTML")
    if given:
        return Path(given)
    return request.getfixturevalue("committed_site")


@pytest.fixture(scope="session")
def pages(site) -> dict[Path, BeautifulSoup]:
    found = {
        p: BeautifulSoup(p.read_text(encoding="utf-8"), "html.parser")
        for p in sorted(site.rglob("*.html"))
        if not any(part in SKIP_DIRS for part in p.relative_to(site).parts)
    }
    assert site / "index.html" in found and len(found) >= 10, sorted(found)
    return found


def _ids(soup: BeautifulSoup) -> set[str]:
    return {t["id"] for t in soup.find_all(id=True)} | {t["name"] for t in soup.find_all("a", attrs={"name": True})}


def _redirect(soup: BeautifulSoup) -> str | None:
    """The target of a ``<meta http-equiv="refresh">`` redirect page (the book's index.html), else None."""
    meta = soup.find("meta", attrs={"http-equiv": lambda v: v and v.lower() == "refresh"})
    content = meta.get("content", "") if meta else ""
    return content.split("url=", 1)[1].strip() if "url=" in content else None


def _internal_refs(soup: BeautifulSoup):
    urls = [
        t[attr]
        for tag, attr in (("a", "href"), ("link", "href"), ("img", "src"), ("script", "src"))
        for t in soup.find_all(tag, attrs={attr: True})
    ]
    for url in urls + ([_redirect(soup)] if _redirect(soup) else []):
        parts = urlsplit(url)
        if parts.scheme or url.startswith("//"):
            continue  # external: not followed (and the page check below sees any that fail to load)
        yield url, parts


def test_every_internal_link_and_anchor_resolves(site, pages):
    ids = {p: _ids(s) for p, s in pages.items()}
    broken = []
    for page, soup in pages.items():
        for url, parts in _internal_refs(soup):
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {url} (no file)")
                continue
            if parts.fragment and target.suffix == ".html":
                tid = ids.get(target) if target in ids else _ids(BeautifulSoup(target.read_text(), "html.parser"))
                if unquote(parts.fragment) not in tid:
                    broken.append(f"{page.relative_to(site)}: {url} (no anchor)")
    assert not broken, f"{len(broken)} broken internal links: " + "; ".join(broken[:15])


def test_pages_show_no_logs_warnings_or_injected_parameters(site, pages):
    bad = []
    for page, soup in pages.items():
        if page.relative_to(site).parts[0] == "_modules":  # viewcode's highlighted library source, not output
            continue
        text, main = soup.get_text(" "), str(soup.find("main") or "")
        for needle in ("IProgress", "[store]", "TqdmWarning", "injected-parameters", "# Parameters"):
            if needle in text or needle in main:
                bad.append(f"{page.relative_to(site)}: {needle!r}")
        if soup.select(".output.stderr, .cell_output .stderr"):
            bad.append(f"{page.relative_to(site)}: a stderr output")
    assert not bad, "; ".join(bad)


# ------------------------------------------------------------------------------------------- headless Chromium
class Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe (fd 3 in, fd 4 out): one process, all pages."""

    def __init__(self, exe: str, profile_dir: Path, width: int = 1280, height: int = 900):
        self._to_child = os.pipe()
        self._from_child = os.pipe()
        fds = (self._to_child[0], self._from_child[1])

        def remap():  # in the child: the protocol pipes become fds 3 and 4
            a, b = os.dup(fds[0]), os.dup(fds[1])
            os.dup2(a, 3)
            os.dup2(b, 4)

        cmd = [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--disable-extensions",
            f"--user-data-dir={profile_dir}",
            "--allow-file-access-from-files",
            "--remote-debugging-pipe",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=remap,
            pass_fds=(3, 4),
        )
        os.close(self._to_child[0])
        os.close(self._from_child[1])
        self._buf, self._next, self.events = b"", 0, []
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=True)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child[0]], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_child[0], 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, session: bool = False, timeout: float = 60.0, **params) -> dict:
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_child[1], json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self._next:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def wait_for(self, method: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(e["method"] == method for e in self.events):
            self.events.append(self._read(deadline))

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child[1])
        os.close(self._from_child[0])


# Runs in each page once it has loaded: waits for MathJax and every image, then reports what a reader would see.
PROBE = r"""
(async () => {
  const imgs = [...document.images];
  imgs.forEach(i => { i.loading = "eager"; });
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const body = document.body.cloneNode(true);
  body.querySelectorAll("pre, code, script, style, mjx-container, textarea").forEach(e => e.remove());
  const math = [...document.querySelectorAll(".math")];
  return JSON.stringify({
    images: imgs.map(i => [i.getAttribute("src"), i.naturalWidth]),
    math: math.length,
    untypeset: math.filter(e => !e.querySelector("mjx-container")).map(e => e.textContent.slice(0, 60)),
    mjx: document.querySelectorAll("mjx-container").length,
    text: body.innerText,
  });
})()
"""


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is missing: `make test` installs Debian's chromium (apt-get install chromium)")
    return exe


def _problems(page: str, report: dict, events: list[dict]) -> list[str]:
    out = []
    for e in events:
        p = e.get("params", {})
        if e["method"] == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append(f"{page}: uncaught {d.get('exception', {}).get('description') or d.get('text')}")
        elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append(
                f"{page}: console.{p['type']}: "
                + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", []))
            )
        elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append(f"{page}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
    out += [f"{page}: image not loaded: {src}" for src, w in report["images"] if not w]
    out += [f"{page}: maths not typeset: {t!r}" for t in report["untypeset"]]
    if report["math"] and not report["mjx"]:
        out.append(f"{page}: no mjx-container although the page has maths")
    for raw in ("$$", "\\(", "\\["):
        if raw in report["text"]:
            at = report["text"].index(raw)
            out.append(f"{page}: raw {raw!r} in the text: {report['text'][max(0, at - 40) : at + 40]!r}")
    return out


def test_every_page_loads_cleanly_in_chromium(site, pages, tmp_path):
    """Every page but viewcode's highlighted sources (``_modules/``, ~80 pages of one template holding only code,
    without the sidebar: ``html_sidebars`` in ``_config.yml``), of which their index and one module are loaded."""
    exe = _chromium()
    browser = Chromium(exe, tmp_path / "chromium-profile")
    problems, n_math, n_img = [], 0, 0
    sources = [p for p in pages if p.relative_to(site).parts[0] == "_modules"]
    code = [p for p in sources if p.name != "index.html"]
    assert code, "no viewcode source page: the build has no [source] links"
    skipped = set(sources) - {site / "_modules" / "index.html", code[0]}
    try:
        for path, soup in pages.items():
            if _redirect(soup):
                continue  # a redirect page (index.html): its target is crawled, and checked in the link test
            if path in skipped:
                continue
            rel = str(path.relative_to(site))
            # leave the previous page first: what its scripts do while unloading is not this page's doing
            browser.events.clear()
            browser.send("Page.navigate", session=True, url="about:blank")
            browser.wait_for("Page.loadEventFired")
            browser.events.clear()
            browser.send("Page.navigate", session=True, url=path.resolve().as_uri())
            browser.wait_for("Page.loadEventFired")
            res = browser.send(
                "Runtime.evaluate", session=True, expression=PROBE, awaitPromise=True, returnByValue=True
            )
            if "exceptionDetails" in res:
                problems.append(f"{rel}: the probe failed: {res['exceptionDetails'].get('text')}")
                continue
            report = json.loads(res["result"]["value"])
            n_math += report["math"]
            n_img += len(report["images"])
            problems += _problems(rel, report, browser.events)
    finally:
        browser.close()
    assert not problems, f"{len(problems)} problems: " + "; ".join(problems[:15])
    assert n_math > 0 and n_img > 0, "no maths or no images in the whole book: the probe saw nothing"


# ------------------------------------------------------------------------------------------- findings and scoreboard
def test_every_notebook_page_opens_with_its_findings_box_and_overviews_paste_theirs(site, pages):
    """Findings first: the first output of each notebook page is its findings box; the landing page and each paper's
    overview show the boxes the scoreboard computed (pasted by glue, with every claim's verdict badge)."""
    bad = []
    for page, soup in pages.items():
        rel = page.relative_to(site)
        main = soup.find("main") or soup
        if rel.parts[0] == "notebooks":
            first = main.select_one(".cell_output")
            if first is None or first.select_one("div.maelab-findings") is None:
                bad.append(f"{rel}: the first output is not a findings box")
        elif rel.parts[:2] == ("book", "papers") or rel == Path("book/intro.html"):
            box = main.select_one("div.maelab-findings")
            if box is None or not box.select("span.maelab-badge"):
                bad.append(f"{rel}: no findings box with verdict badges")
    assert not bad, "; ".join(bad)


# Widths of the scoreboard's tables (and the findings boxes on the page) against their containers, at the window size
OVERFLOW = r"""
JSON.stringify({
  tables: [...document.querySelectorAll("table.maelab-scoreboard, div.maelab-findings table")].map(t => {
    const box = t.closest(".cell_output") || t.closest(".output") || t.parentElement;
    return {id: t.id || t.className || "findings", table: t.scrollWidth, box: box.clientWidth,
            box_scroll: box.scrollWidth};
  }),
  page: document.documentElement.scrollWidth, window: window.innerWidth,
})
"""


def test_scoreboard_tables_do_not_overflow_at_1280px(site, tmp_path):
    exe = _chromium()
    browser = Chromium(exe, tmp_path / "chromium-profile", width=1280)
    try:
        browser.send("Page.navigate", session=True, url=(site / "notebooks" / "scoreboard.html").resolve().as_uri())
        browser.wait_for("Page.loadEventFired")
        res = browser.send("Runtime.evaluate", session=True, expression=OVERFLOW, returnByValue=True)
    finally:
        browser.close()
    report = json.loads(res["result"]["value"])
    boards = [t for t in report["tables"] if t["id"].startswith("scoreboard-")]
    assert len(boards) >= 4, report  # one table per paper
    wide = [t for t in report["tables"] if t["table"] > t["box"] or t["box_scroll"] > t["box"]]
    assert not wide, f"tables wider than their container at 1280 px: {wide}"
    assert report["page"] <= report["window"], report
