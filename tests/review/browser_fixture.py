"""Headless Chromium (Debian's, driven by Debian's chromium-driver through selenium) for the
review pages, and the checks the browser tests share."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
SHOTS = Path(__file__).resolve().parents[2] / "benchmarks" / "out"


@contextmanager
def chrome(profile: Path) -> Iterator[Any]:
    """A headless Chromium with its own profile, its console log kept."""
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--window-size=1400,1000",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(
        service=webdriver.ChromeService(executable_path=DRIVER), options=options
    )
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def ready(driver: Any) -> None:
    """Wait for the page's script to finish; it must have finished without an error."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(
        lambda d: d.execute_script("return document.body.dataset.ready || ''") != ""
    )
    assert driver.execute_script("return document.body.dataset.ready") == "1", driver.find_element(
        By.ID, "error"
    ).text


def inert(driver: Any) -> None:
    """Nothing hostile ran: no global set, no dialog open, no element with a handler."""
    from selenium.common.exceptions import NoAlertPresentException

    assert driver.execute_script("return window.__pwned === undefined")
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 - raises unless an alert() is open
    # KaTeX draws some symbols (a square root, a long arrow) as SVG of its own.
    found = driver.execute_script(
        "return document.querySelectorAll('[onerror],[onload],[onclick],script:not([src]),"
        'svg:not(.katex svg),img,iframe,a[href^="javascript:"]\').length'
    )
    assert found == 0
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


def uncovered(driver: Any, element_id: str) -> None:
    """The element is in view and on top at its centre (no banner over it)."""
    on_top = driver.execute_script(
        "const e = document.getElementById(arguments[0]); const r = e.getBoundingClientRect();"
        "return r.bottom > 0 && r.top < innerHeight && "
        "document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) === e;",
        element_id,
    )
    assert on_top, f"#{element_id} is covered or out of view"
