"""People and roles in real headless Chromium (issue 34): a person's URL labels as that person
without asking a name, two people's URLs in one browser never mix silently, and a blind
annotator who wants the judge's label before answering finds no way to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from tests.review.browser_fixture import CHROMIUM, DRIVER, SHOTS, chrome
from tests.review.browser_fixture import inert as _inert
from tests.review.browser_fixture import ready as _ready
from tests.review.review_fixture import Fixture, make_typed_run, review_data, serving

pytestmark = [pytest.mark.browser, pytest.mark.slow]

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if CHROMIUM is None or DRIVER is None:
    pytest.skip("no chromium and chromium-driver on PATH", allow_module_level=True)

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    with chrome(tmp_path / "profile") as driver:
        yield driver


@pytest.fixture
def typed(tmp_path: Path) -> tuple[Fixture, dict[str, str]]:
    return make_typed_run(tmp_path / "typed", n_problems=10)


def _wait_ready(browser: Any, state: str) -> None:
    WebDriverWait(browser, 30).until(
        lambda d: d.execute_script("return document.body.dataset.ready || ''") == state
    )


def test_a_persons_url_labels_as_them_and_two_never_mix(
    browser: Any, typed: tuple[Fixture, dict[str, str]]
) -> None:
    fx, _ = typed
    with serving(review_data(fx, blind=True, queue_n=6), annotators=["alice", "bob"]) as server:
        alice, bob = (server.url_of(g) for g in server.grants)
        browser.get(alice)
        _ready(browser)
        # Who you are is in the header; no name is asked for.
        assert browser.find_element(By.ID, "who").text == "you: alice (annotator)"
        assert not browser.find_element(By.ID, "annotator").is_displayed()
        browser.save_screenshot(str(SHOTS / "review_person.png"))
        # The queue, the first trace, "can't tell", save: stored as alice, no name typed.
        browser.get(f"{server.origin}/queue")
        _ready(browser)
        assert "alice: 0 / 6 done" in browser.find_element(By.ID, "progress").text
        browser.find_element(By.TAG_NAME, "body").send_keys("\ue007")
        WebDriverWait(browser, 30).until(lambda d: "queue=1" in d.current_url)
        _ready(browser)
        first = browser.find_element(By.ID, "trace-id").text
        browser.find_element(By.TAG_NAME, "body").send_keys("c")
        browser.find_element(By.ID, "save").click()
        WebDriverWait(browser, 30).until(lambda d: "pos=1" in d.current_url)
        _ready(browser)
        _inert(browser)
        stored = orjson.loads((fx.run_dir / "human" / "alice.jsonl").read_bytes())
        assert (stored["trace_id"], stored["annotator"], stored["blind"]) == (first, "alice", True)
        # bob's URL in a second tab of the same browser: that tab is bob's ...
        browser.switch_to.new_window("tab")
        browser.get(bob)
        _ready(browser)
        assert browser.find_element(By.ID, "who").text == "you: bob (annotator)"
        # ... alice's tab stays hers ...
        browser.switch_to.window(browser.window_handles[0])
        browser.get(f"{server.origin}/")
        _ready(browser)
        assert browser.find_element(By.ID, "who").text == "you: alice (annotator)"
        # ... and a tab opened from the app (ctrl-click: no sessionStorage) does not pick one
        # of the two: it asks whose it is.
        link = browser.find_elements(By.CSS_SELECTOR, "#list td a")[0]
        wanted = link.text
        ActionChains(browser).key_down(Keys.CONTROL).click(link).key_up(Keys.CONTROL).perform()
        WebDriverWait(browser, 30).until(lambda d: len(d.window_handles) == 3)
        browser.switch_to.window(browser.window_handles[-1])
        _wait_ready(browser, "choose")
        buttons = browser.find_elements(By.CSS_SELECTOR, "#choose-token button")
        assert sorted(b.text for b in buttons) == ["alice (annotator)", "bob (annotator)"]
        browser.save_screenshot(str(SHOTS / "review_choose.png"))
        next(b for b in buttons if b.text == "bob (annotator)").click()
        _ready(browser)
        assert browser.find_element(By.ID, "who").text == "you: bob (annotator)"
        assert browser.find_element(By.ID, "trace-id").text == wanted
        _inert(browser)
    assert not (fx.run_dir / "human" / "bob.jsonl").exists()


def test_a_blind_annotator_finds_no_way_to_the_judge_before_answering(
    browser: Any, typed: tuple[Fixture, dict[str, str]]
) -> None:
    """The one who wants the judge's label first: no reveal before an answer, no adjudication
    link or page, no judge column, filter, sort or distribution; with --adjudicate
    --with-judge too."""
    fx, truth = typed
    data = review_data(fx, blind=True, queue_n=6, adjudicate=True, with_judge=True)
    t = data.queue_ids()[0]
    with serving(data, annotators=["mallory"], adjudicators=["carol"]) as server:
        browser.get(server.url_of(server.grants[0]))
        _ready(browser)
        assert not browser.find_element(By.ID, "adjudicate-link").is_displayed()
        assert browser.find_element(By.ID, "dist-section").get_attribute("hidden") is not None
        for name in ("error_type", "status", "min_confidence"):
            assert not browser.find_element(By.NAME, name).is_displayed()
        listed = browser.find_element(By.ID, "list").text
        assert "judge type" not in listed and "conf." not in listed
        # The trace: the judge section says hidden, and offers nothing before an answer.
        browser.get(f"{server.origin}/traces/{quote(t, safe='')}")
        _ready(browser)
        judge = browser.find_element(By.ID, "judge").text
        assert "Hidden until" in judge and truth[t] not in judge
        assert not browser.find_elements(By.ID, "reveal")
        assert not browser.find_elements(By.CSS_SELECTOR, "li.step.blamed, mark")
        # The adjudication page typed in: refused.
        browser.get(f"{server.origin}/adjudicate")
        _wait_ready(browser, "error")
        assert "adjudicator's URL" in browser.find_element(By.ID, "banner").text
        assert not browser.find_elements(By.CSS_SELECTOR, "section.case")
        browser.save_screenshot(str(SHOTS / "review_blind_refused.png"))
        browser.get_log("browser")  # the refusal's 403, expected
        # After an answer: the reveal, recorded, then the judge.
        browser.get(f"{server.origin}/traces/{quote(t, safe='')}")
        _ready(browser)
        browser.find_element(By.TAG_NAME, "body").send_keys("c")
        browser.find_element(By.ID, "save").click()
        WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "reveal"))
        browser.find_element(By.ID, "reveal").click()
        WebDriverWait(browser, 30).until(lambda d: truth[t] in d.find_element(By.ID, "judge").text)
        _inert(browser)
    reveals = (fx.run_dir / "human" / "reveals" / "mallory.jsonl").read_bytes().splitlines()
    assert [orjson.loads(r)["trace_id"] for r in reveals] == [t]


def test_a_shared_adjudicator_url_names_its_reader_before_the_judge_shows(
    browser: Any, typed: tuple[Fixture, dict[str, str]]
) -> None:
    """Blind, --adjudicate --with-judge, no --adjudicators: the adjudicator's page waits for a
    name, then lists the judge's answers, recorded as revealed to that name."""
    fx, truth = typed
    data = review_data(fx, blind=True, adjudicate=True, with_judge=True)
    a = fx.wrong_ids[0]
    data.add_label({"trace_id": a, "error_type": "misread", "first_error_step": 0}, "ann1")
    with serving(data) as server:
        browser.get(server.url_of(server.grants[1]))
        _ready(browser)
        assert browser.find_element(By.ID, "who").text == "adjudicator URL"
        browser.get(f"{server.origin}/adjudicate")
        _ready(browser)
        assert "Give your name first" in browser.find_element(By.ID, "name-first").text
        assert not (fx.run_dir / "human" / "reveals").exists()
        browser.find_element(By.ID, "annotator").send_keys("carol\ue004")
        WebDriverWait(browser, 30).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "section.case tr.judge")
        )
        judge = browser.find_element(By.CSS_SELECTOR, "section.case tr.judge").text
        assert truth[a] in judge
        _inert(browser)
        browser.save_screenshot(str(SHOTS / "review_adjudicate_blind.png"))
    reveals = (fx.run_dir / "human" / "reveals" / "carol.jsonl").read_bytes().splitlines()
    assert [orjson.loads(r)["trace_id"] for r in reveals] == [a]


def test_a_token_of_a_server_gone_is_forgotten(
    browser: Any, typed: tuple[Fixture, dict[str, str]]
) -> None:
    """A server started again on the same port (a fixed --port): the browser holds the old
    server's token too; a new tab takes the one the server knows instead of asking."""
    import socket

    fx, _ = typed
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with serving(review_data(fx), port=port) as old:
        browser.get(old.url)
        _ready(browser)
    with serving(review_data(fx), port=port) as new:
        browser.get(new.url)
        _ready(browser)
        known = browser.execute_script(
            "return Object.keys(JSON.parse(localStorage.getItem('misstep.tokens')))"
        )
        assert sorted(known) == sorted([old.token, new.token])
        browser.switch_to.new_window("tab")
        browser.get(f"{new.origin}/queue")
        _ready(browser)  # not "choose": the old token was refused and forgotten
        known = browser.execute_script(
            "return Object.keys(JSON.parse(localStorage.getItem('misstep.tokens')))"
        )
        assert known == [new.token]
        browser.get_log("browser")  # the old token's 403, expected
