"""Open the report in real headless chromium: loads, shows every section, injections inert."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from misstep.report import write_report
from tests.report.report_fixture import injected_run

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BENCH_OUT = Path(__file__).resolve().parents[2] / "benchmarks" / "out"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


class _Elements(HTMLParser):
    """Every element of the dumped DOM with its attributes, and the document title."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.count: Counter[str] = Counter()
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        self.count[tag] += 1
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium / chromium-browser on PATH")
def test_report_in_headless_chromium(tmp_path: Path) -> None:
    result, traces, labels = injected_run()
    page = write_report(tmp_path / "report.html", result, traces=traces, labels=labels)
    url = page.resolve().as_uri()
    dom = _chromium(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    # The page script ran to its end (it marks the body) and built the failure table.
    n = len(result.failures)
    assert f'data-failures-rendered="{min(n, 300)}"' in html
    assert html.count('class="frow"') == min(n, 300)
    for section in ("findings", "metrics", "errors", "coverage", "agreement", "failures"):
        assert f'<section id="{section}">' in html
    assert result.findings[0].sentence.split(";")[0] in html
    # Injections stayed inert: the parsed DOM has no injected element, attribute or title.
    tree = _Elements()
    tree.feed(html)
    assert tree.title == "misstep: why majority voting failed"
    assert tree.count["script"] == 2
    assert not [a for tag, a in tree.elements if tag == "img" and a.get("src") == "x"]
    assert not [a for _, a in tree.elements if "data-pwned" in a or "onerror" in a]
    # No JavaScript error in the console log.
    console = [
        line
        for line in dom.stderr.splitlines()
        if "CONSOLE" in line or "Uncaught" in line or "SyntaxError" in line
    ]
    assert not [line for line in console if "rror" in line], console
    shot = tmp_path / "report.png"
    cap = _chromium(tmp_path, "--window-size=1280,2400", f"--screenshot={shot}", url)
    assert cap.returncode == 0 and shot.stat().st_size > 10_000, cap.stderr[-2000:]
    BENCH_OUT.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, BENCH_OUT / "report_screenshot.png")
    print(f"screenshot: {shot} (copied to {BENCH_OUT / 'report_screenshot.png'})")
