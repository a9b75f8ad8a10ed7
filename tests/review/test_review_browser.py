"""The review pages in real headless chromium (Debian's, driven by Debian's chromium-driver
through selenium): they load, keyboard navigation and labelling work, and hostile trace text
in every field runs nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from tests.review.browser_fixture import CHROMIUM, DRIVER, SHOTS, chrome, uncovered
from tests.review.browser_fixture import inert as _inert
from tests.review.browser_fixture import ready as _ready
from tests.review.review_fixture import HOSTILE, JUDGE, Fixture, make_run, review_data, serving

pytestmark = [pytest.mark.browser, pytest.mark.slow]

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if CHROMIUM is None or DRIVER is None:
    pytest.skip("no chromium and chromium-driver on PATH", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    with chrome(tmp_path / "profile") as driver:
        yield driver


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    return make_run(tmp_path / "data")


def test_pages_keyboard_labelling_and_hostile_text(browser: Any, fx: Fixture) -> None:
    data = review_data(fx)
    with serving(data, annotator="alice") as server:
        # A note is hostile too: store one first so that the page shows it back.
        data.add_label(
            {
                "trace_id": fx.wrong_ids[1],
                "error_type": "arithmetic",
                "first_error_step": 1,
                "note": HOSTILE[1] + HOSTILE[0],
            },
            "alice",
        )
        browser.get(server.url)
        # Any alert() would be recorded instead of blocking the test.
        _ready(browser)
        assert "token" not in browser.current_url  # the token moved into sessionStorage
        assert browser.get_cookies() == []  # and into no cookie
        rows = browser.find_elements(By.CSS_SELECTOR, "#list tr")
        assert len(rows) == 1 + 16  # header + 16 traces
        # The hostile ids are shown as text, verbatim.
        ids = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#list td a")]
        assert sorted(ids) == sorted(fx.trace_ids)
        dist = browser.find_element(By.ID, "dist").text
        assert "ck<b>1</b>\"'" in dist and "arithmetic" in dist and "100%" in dist
        _inert(browser)
        shot = SHOTS / "review_list.png"
        SHOTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(shot))
        # Keyboard: j moves the selection, Enter opens the selected trace.
        body = browser.find_element(By.TAG_NAME, "body")
        body.send_keys("j")
        body.send_keys("j")
        selected = browser.find_element(By.CSS_SELECTOR, "#list tr.selected a").text
        assert selected == ids[2]
        body.send_keys("\ue007")  # Enter
        WebDriverWait(browser, 30).until(lambda d: "/traces/" in d.current_url)
        _ready(browser)
        assert browser.find_element(By.ID, "trace-id").text == ids[2]
        _inert(browser)
        # Next trace with j: the fourth of the list.
        browser.find_element(By.TAG_NAME, "body").send_keys("j")
        WebDriverWait(browser, 30).until(lambda d: "pos=3" in d.current_url)
        _ready(browser)
        assert browser.find_element(By.ID, "trace-id").text == ids[3]

        # A wrong trace: the judge's step and quote are highlighted; the note is shown as text.
        browser.get(f"{server.origin}/traces/{quote(fx.wrong_ids[1], safe='')}")
        _ready(browser)
        problem = browser.find_element(By.ID, "problem").text
        assert HOSTILE[0] in problem and HOSTILE[1] in problem
        blamed = browser.find_element(By.CSS_SELECTOR, "li.step.blamed")
        assert blamed.get_attribute("data-step") == "1"
        mark = blamed.find_element(By.TAG_NAME, "mark").text
        assert mark.startswith("2 + 3 = 6 ")
        judge = browser.find_element(By.ID, "judge").text
        assert "arithmetic" in judge and HOSTILE[4] in judge and JUDGE in judge
        assert browser.find_element(By.ID, "note").get_attribute("value") == HOSTILE[1] + HOSTILE[0]
        _inert(browser)
        browser.save_screenshot(str(SHOTS / "review_trace.png"))

        # Label with the keyboard: "1" picks the first type, a click on step 0 sets the step,
        # Enter saves.
        browser.get(f"{server.origin}/traces/{quote(fx.wrong_ids[2], safe='')}")
        _ready(browser)
        body = browser.find_element(By.TAG_NAME, "body")
        body.send_keys("1")
        browser.find_element(By.CSS_SELECTOR, "li.step[data-step='0']").click()
        browser.find_element(By.ID, "note").send_keys(HOSTILE[3])
        browser.find_element(By.ID, "save").click()
        WebDriverWait(browser, 30).until(lambda d: "saved" in d.find_element(By.ID, "saved").text)
        _inert(browser)
    lines = (fx.run_dir / "human" / "alice.jsonl").read_bytes().splitlines()
    last = orjson.loads(lines[-1])
    assert last["trace_id"] == fx.wrong_ids[2]
    assert (last["error_type"], last["first_error_step"], last["note"]) == (
        "arithmetic",
        0,
        HOSTILE[3],
    )


def test_blind_page_reveals_only_on_request_and_progress_moves_on(
    browser: Any, fx: Fixture
) -> None:
    with serving(review_data(fx, blind=True, queue_n=4)) as server:
        browser.get(server.url)
        _ready(browser)
        assert browser.find_element(By.ID, "dist-section").get_attribute("hidden") is not None
        # The queue: 4 traces, no stratum column, progress asks for a name first.
        browser.get(f"{server.origin}/queue")
        _ready(browser)
        assert len(browser.find_elements(By.CSS_SELECTOR, "#list tr")) == 1 + 4
        assert "stratum" not in browser.find_element(By.ID, "list").text
        assert "arithmetic" not in browser.find_element(By.ID, "list").text
        assert "name" in browser.find_element(By.ID, "progress").text
        browser.find_element(By.TAG_NAME, "body").send_keys("\ue007")  # Enter: the first
        WebDriverWait(browser, 30).until(lambda d: "queue=1" in d.current_url)
        _ready(browser)
        first = browser.find_element(By.ID, "trace-id").text
        assert browser.find_element(By.ID, "position").text == "queue #1"
        # Saving without a name: the error shows beside the save button and in the banner,
        # which leaves the name box it asks for in view and clickable; nothing stored.
        body = browser.find_element(By.TAG_NAME, "body")
        body.send_keys("c")  # can't tell
        browser.find_element(By.ID, "note").send_keys("unsure")
        browser.find_element(By.ID, "save").click()
        WebDriverWait(browser, 30).until(
            lambda d: "name first" in d.find_element(By.ID, "save-error").text
        )
        assert "name first" in browser.find_element(By.ID, "banner").text
        uncovered(browser, "annotator")
        assert not (fx.run_dir / "human").exists()
        # Typing the name keeps the label being written (no reload).
        browser.execute_script("window.__before = 1")
        name = browser.find_element(By.ID, "annotator")
        name.click()
        name.send_keys("bob\ue004")  # Tab: change event
        WebDriverWait(browser, 30).until(
            lambda d: "labelling as bob" in d.find_element(By.ID, "saved").text
        )
        assert browser.execute_script("return window.__before") == 1  # the same page
        assert browser.execute_script("return localStorage.getItem('misstep.annotator')") == "bob"
        assert browser.find_element(By.ID, "choice-cant_tell").is_selected()
        assert browser.find_element(By.ID, "note").get_attribute("value") == "unsure"
        assert not browser.find_element(By.ID, "banner").is_displayed()
        assert "Hidden until" in browser.find_element(By.ID, "judge").text
        assert not browser.find_elements(By.ID, "reveal")  # not before an answer
        browser.find_element(By.ID, "save").click()
        # Save moves on to the next trace of the queue.
        try:
            WebDriverWait(browser, 30).until(lambda d: "pos=1" in d.current_url)
        except Exception:
            raise AssertionError(browser.find_element(By.ID, "error").text) from None
        _ready(browser)
        assert browser.find_element(By.ID, "trace-id").text != first
        _inert(browser)
        # Back to the first: "can't tell" was an answer; the judge shows only on request.
        browser.get(f"{server.origin}/traces/{quote(first, safe='')}")
        _ready(browser)
        assert "Hidden until" in browser.find_element(By.ID, "judge").text
        browser.find_element(By.ID, "reveal").click()
        WebDriverWait(browser, 30).until(
            lambda d: "arithmetic" in d.find_element(By.ID, "judge").text
        )
        _inert(browser)
        browser.save_screenshot(str(SHOTS / "review_blind.png"))
        # Progress: 1 of 4 done; "not yet labelled by me" leaves 3.
        browser.get(f"{server.origin}/queue?todo=1")
        _ready(browser)
        assert browser.find_element(By.ID, "progress").text == "bob: 1 / 4 done"
        assert len(browser.find_elements(By.CSS_SELECTOR, "#list tr")) == 1 + 3
    record = orjson.loads((fx.run_dir / "human" / "bob.jsonl").read_bytes().splitlines()[-1])
    assert record["verdict"] == "cant_tell" and record["blind"] is True
    assert record["note"] == "unsure"
    reveal = orjson.loads((fx.run_dir / "human" / "reveals" / "bob.jsonl").read_bytes())
    assert reveal["trace_id"] == first


def test_two_servers_in_one_browser_keep_their_own_tokens(browser: Any, fx: Fixture) -> None:
    with serving(review_data(fx)) as a, serving(review_data(fx)) as b:
        browser.get(a.url)
        _ready(browser)
        browser.get(b.url)
        _ready(browser)
        browser.get(f"{a.origin}/")  # a's tab again, no token in the URL: still in
        _ready(browser)
        assert len(browser.find_elements(By.CSS_SELECTOR, "#list tr")) == 1 + 16


def test_adjudication_end_to_end(browser: Any, fx: Fixture) -> None:
    from selenium.webdriver.support.ui import Select

    data = review_data(fx, adjudicate=True, hide_names=True)
    a = fx.wrong_ids[0]
    for who, kind, step, note in (
        ("ann1", "arithmetic", 1, HOSTILE[0]),
        ("ann2", "misread", 0, None),
    ):
        data.add_label(
            {"trace_id": a, "error_type": kind, "first_error_step": step, "note": note}, who
        )
    with serving(data) as server:
        # An annotator's URL shows no adjudication link, and the page refuses it.
        browser.get(server.url)
        _ready(browser)
        assert not browser.find_element(By.ID, "adjudicate-link").is_displayed()
        browser.get(f"{server.origin}/adjudicate")
        WebDriverWait(browser, 30).until(
            lambda d: d.execute_script("return document.body.dataset.ready || ''") == "error"
        )
        assert "adjudicator's URL" in browser.find_element(By.ID, "banner").text
        browser.get_log("browser")  # the refusal's 403, expected: drained
        # The adjudicator's URL: the link, and the page.
        browser.get(server.url_of(server.grants[1]))
        _ready(browser)
        assert browser.find_element(By.ID, "adjudicate-link").is_displayed()
        assert browser.find_element(By.ID, "who").text == "adjudicator URL"
        browser.get(f"{server.origin}/adjudicate")
        _ready(browser)
        assert browser.find_element(By.ID, "progress").text.startswith("0 / 1 decided")
        case = browser.find_element(By.CSS_SELECTOR, "section.case")
        side = case.find_element(By.CSS_SELECTOR, "table.side").text
        # Side by side, names hidden, the hostile note as text.
        assert "person 1" in side and "person 2" in side and "ann1" not in side
        assert "arithmetic" in side and "misread" in side and HOSTILE[0] in side
        _inert(browser)
        browser.find_element(By.ID, "annotator").send_keys("carol\ue004")
        WebDriverWait(browser, 30).until(
            lambda d: (
                d.execute_script("return localStorage.getItem('misstep.annotator')") == "carol"
            )
        )
        _ready(browser)
        case = browser.find_element(By.CSS_SELECTOR, "section.case")
        Select(case.find_element(By.NAME, "decision")).select_by_value("misread")
        case.find_element(By.NAME, "step").send_keys("0")
        case.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        WebDriverWait(browser, 30).until(
            lambda d: d.find_element(By.ID, "progress").text.startswith("1 / 1 decided")
        )
        status = browser.find_element(By.CSS_SELECTOR, "section.case .status").text
        assert status == "decided: misread by carol"
        _inert(browser)
        browser.save_screenshot(str(SHOTS / "review_adjudicate.png"))
    record = orjson.loads((fx.run_dir / "human" / "carol.jsonl").read_bytes())
    assert (record["role"], record["error_type"], record["first_error_step"]) == (
        "adjudicator",
        "misread",
        0,
    )


def test_save_moves_on_through_the_not_yet_labelled_list(browser: Any, fx: Fixture) -> None:
    """Issue 34, item 10: in the list filtered to "not yet labelled by me", each save opens
    the next trace left, in the list's order, none skipped; the header counts traces, not
    (person, trace) pairs."""
    data = review_data(fx)
    # Two people label one trace: one trace labelled by people, two labels.
    for who in ("bob", "carol"):
        data.add_label({"trace_id": fx.trace_ids[15], "error_type": "no_error"}, who)
    with serving(data) as server:
        browser.get(server.url)
        _ready(browser)
        counts = browser.find_element(By.ID, "counts").text
        assert "1 trace labelled by people (2 labels by 2 people)" in counts, counts
        browser.execute_script("localStorage.setItem('misstep.annotator', 'alice')")
        browser.get(f"{server.origin}/?todo=1")
        _ready(browser)
        order = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#list td a")]
        assert order == fx.trace_ids  # nothing labelled by alice yet: every trace
        browser.find_element(By.TAG_NAME, "body").send_keys("\ue007")  # Enter: the first
        seen = []
        for n in range(4):
            WebDriverWait(browser, 30).until(lambda d: "/traces/" in d.current_url)
            _ready(browser)
            here = browser.find_element(By.ID, "trace-id").text
            seen.append(here)
            assert browser.find_element(By.ID, "position").text == "#1"  # always the first left
            if n == 3:
                break
            browser.find_element(By.TAG_NAME, "body").send_keys("n")
            browser.find_element(By.ID, "save").click()
            WebDriverWait(browser, 30).until(
                lambda d, here=here: d.execute_script(
                    "return document.getElementById('trace-id').textContent !== arguments[0]"
                    " || document.getElementById('error').textContent",
                    here,
                )
            )
            assert not browser.find_element(By.ID, "error").text
        assert seen == fx.trace_ids[:4]
        _inert(browser)
    stored = [
        orjson.loads(line)["trace_id"]
        for line in (fx.run_dir / "human" / "alice.jsonl").read_bytes().splitlines()
    ]
    assert stored == fx.trace_ids[:3]


def test_a_new_tab_opened_from_the_app_has_the_token(browser: Any, fx: Fixture) -> None:
    """Issue 34, item 10: a trace opened in a new tab (ctrl-click: Chromium gives such a tab
    an empty sessionStorage) or typed into a fresh tab works; the token is in no cookie and
    no other origin (another review server's port) gets it."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    with serving(review_data(fx)) as a, serving(review_data(fx)) as b:
        browser.get(a.url)
        _ready(browser)
        first = browser.find_elements(By.CSS_SELECTOR, "#list td a")[0]
        wanted = first.text
        ActionChains(browser).key_down(Keys.CONTROL).click(first).key_up(Keys.CONTROL).perform()
        WebDriverWait(browser, 30).until(lambda d: len(d.window_handles) == 2)
        browser.switch_to.window(browser.window_handles[1])
        _ready(browser)
        assert browser.find_element(By.ID, "trace-id").text == wanted
        browser.switch_to.new_window("tab")  # a fresh tab, the address typed in
        browser.get(f"{a.origin}/traces/{quote(fx.trace_ids[3], safe='')}")
        _ready(browser)
        assert browser.find_element(By.ID, "trace-id").text == fx.trace_ids[3]
        assert browser.get_cookies() == []
        # Another origin (b's port) holds none of a's token: without its own URL it asks
        # for it.
        browser.get(f"{b.origin}/")
        WebDriverWait(browser, 30).until(
            lambda d: d.execute_script("return document.body.dataset.ready || ''") == "error"
        )
        assert "access token" in browser.find_element(By.ID, "error").text
        assert browser.execute_script("return localStorage.getItem('misstep.tokens')") is None
        browser.get(b.url)
        _ready(browser)
        assert browser.get_cookies() == []
