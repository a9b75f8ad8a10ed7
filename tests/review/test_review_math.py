"""Math on the trace page, in real headless Chromium (issue 34, item 9): dollar amounts stay
text and fractions render on real GSM8K and MATH traces, a judge's quote inside math renders
marked, answers and gold render, and a degenerate output (a thousand nested \\frac) falls back
to its text with the label form working. Where ``shared/data`` is present, the rule is checked
on every GSM8K, MATH, OlympiadBench, Omni-MATH, Mr-Ben and MR-GSM8K trace there, against the
rule KaTeX's auto-render applied before."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from misstep.labels import LabelStatus, RunManifest, StoredLabel, write_manifest
from misstep.rollouts import input_digest
from misstep.taxonomy import load_taxonomy
from tests.review.browser_fixture import CHROMIUM, DRIVER, SHOTS, chrome, inert, ready
from tests.review.review_fixture import HOSTILE, Fixture, make_run, review_data, serving

pytestmark = [pytest.mark.browser, pytest.mark.slow]

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if CHROMIUM is None or DRIVER is None:
    pytest.skip("no chromium and chromium-driver on PATH", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

EXCERPT = Path(__file__).parent / "data" / "math_traces.jsonl"
NESTED = "\\frac{1}{" * 1000 + "2" + "}" * 1000
DEGENERATE = "degenerate-nested-frac"
# The judge's quotes: inside $...$ in MATH (the highlight used to split its delimiters), over
# dollar amounts in GSM8K.
QUOTES = {
    "processbench-math-48": "\\frac{258}{4} = 64.5",
    "processbench-gsm8k-2": "$3.5 * 800 = $2,800",
    DEGENERATE: "So the answer is",
}


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    with chrome(tmp_path / "profile") as driver:
        yield driver


def _math_run(tmp: Path) -> Fixture:
    """The six real traces of the excerpt (one checkpoint) and a degenerate one, each with an
    ok judge label quoting it where QUOTES says."""
    rows = []
    for line in EXCERPT.read_bytes().splitlines():
        r = orjson.loads(line)
        rows.append(
            {
                "trace_id": r["trace_id"],
                "problem_id": r["problem_id"],
                "checkpoint": "ck1",
                "dataset": r["subset"],
                "sample_idx": 0,
                "problem": r["problem"],
                "response": r["response"],
                "gold_answer": r["gold_answer"],
                "correct": r["correct"],
            }
        )
    rows.append(
        {
            "trace_id": DEGENERATE,
            "problem_id": "nested",
            "checkpoint": "ck1",
            "dataset": "synthetic",
            "sample_idx": 0,
            "problem": "Compute $\\frac{1}{2}$ of $1$.",
            "response": f"We write ${NESTED}$.\n\nSo the answer is \\boxed{{\\frac{{1}}{{2}}}}.",
            "gold_answer": "\\frac{1}{2}",
            "correct": True,
        }
    )
    tmp.mkdir(parents=True)
    traces = tmp / "traces.jsonl"
    traces.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    run_dir = tmp / "run"
    run_dir.mkdir()
    labels = []
    for r in rows:
        quote_ = QUOTES.get(str(r["trace_id"]), "")
        steps = str(r["response"]).split("\n\n")
        step = next((i for i, s in enumerate(steps) if quote_ and quote_ in s), 0)
        labels.append(
            StoredLabel(
                trace_id=str(r["trace_id"]),
                judge="rules",
                status=LabelStatus.OK,
                error_type="arithmetic",
                first_error_step=step,
                evidence=quote_ or None,
                explanation="The ratio $\\frac{258}{4}$ is not what the trace says.",
                confidence=0.5,
            )
        )
    (run_dir / "labels.jsonl").write_bytes(
        b"".join(orjson.dumps(lab.model_dump(mode="json")) + b"\n" for lab in labels)
    )
    tax = load_taxonomy(None)
    write_manifest(
        run_dir,
        RunManifest(
            input_sha256=input_digest(traces),
            judge="rules",
            taxonomy_id=tax.id,
            taxonomy_version=str(tax.version),
            taxonomy_hash=tax.hash,
        ),
    )
    ids = [str(r["trace_id"]) for r in rows]
    return Fixture(traces=traces, run_dir=run_dir, trace_ids=ids, wrong_ids=ids)


def _open(browser: Any, origin: str, trace_id: str) -> None:
    browser.get(f"{origin}/traces/{quote(trace_id, safe='')}")
    ready(browser)


def _step(browser: Any, holding: str) -> Any:
    """The step whose text (as the page shows it) holds ``holding``."""
    for li in browser.find_elements(By.CSS_SELECTOR, "li.step"):
        if holding in li.text:
            return li
    raise AssertionError(f"no step shows {holding!r}")


def _katex(node: Any) -> int:
    return len(node.find_elements(By.CSS_SELECTOR, ".katex"))


def test_money_stays_text_and_fractions_render_on_real_traces(browser: Any, tmp_path: Path) -> None:
    fx = _math_run(tmp_path / "data")
    with serving(review_data(fx, queue_n=2)) as server:
        browser.get(server.url)
        ready(browser)

        # GSM8K (ProcessBench): every dollar amount as written, nothing in math italics.
        _open(browser, server.origin, "processbench-gsm8k-2")
        step = _step(browser, "Total cost = Cost per gallon * Total gallons purchased")
        assert "= $3.5 * 4000 = $14,000." in step.text
        assert _katex(step) == 0
        last = _step(browser, "got a refund of $2,800 for the unsellable milk")
        assert _katex(last) == 1  # "$\boxed{2800}$" is math, the "$2,800" before it is not
        assert "\\boxed" not in last.text
        # The judge's quote over two amounts: marked as written.
        marked = browser.find_element(By.CSS_SELECTOR, "li.step.blamed mark").text
        assert marked == "$3.5 * 800 = $2,800"
        browser.save_screenshot(str(SHOTS / "review_math_gsm8k.png"))

        _open(browser, server.origin, "processbench-gsm8k-4")
        step = _step(browser, "The customer spent $80 on their last shopping trip.")
        assert "For every $20 spent, they get $1 off their next purchase." in step.text
        assert "$80 / $20 = 4 rewards" in step.text and _katex(step) == 0

        # MR-GSM8K: "$10 x 5 = $<<10*5=50>>50" and "$50 + $8" are prices.
        _open(browser, server.origin, "mr_gsm8k-ad3eaf6f-9abf-46f3-bf7f-18c4d5cece22")
        steps = browser.find_element(By.ID, "steps")
        assert "Lloyd earns $10 x 5 = $<<10*5=50>>50 for the first week." in steps.text
        assert "he earned $50 + $8 = $<<50+8=58>>58" in steps.text
        assert _katex(steps) == 0
        assert "$10 an hour" in browser.find_element(By.ID, "problem").text

        # MATH (ProcessBench): fractions rendered; the judge's quote inside $...$ renders
        # inside the mark, no raw LaTeX left in the blamed step.
        _open(browser, server.origin, "processbench-math-48")
        blamed = browser.find_element(By.CSS_SELECTOR, "li.step.blamed")
        assert "We will have a total of" in blamed.text
        assert "\\frac" not in blamed.text and "$" not in blamed.text
        fracs = blamed.find_elements(By.CSS_SELECTOR, ".katex .mfrac")
        assert len(fracs) == 2
        mark = blamed.find_element(By.TAG_NAME, "mark")
        assert mark.find_elements(By.CSS_SELECTOR, ".katex .mfrac")
        assert "64.5" in mark.text
        steps = browser.find_element(By.ID, "steps")
        assert "\\frac" not in steps.text and "\\cdot" not in steps.text
        assert not browser.find_elements(By.CSS_SELECTOR, ".tex-raw")
        # The judge's explanation renders its math too.
        judge = browser.find_element(By.ID, "judge")
        assert len(judge.find_elements(By.CSS_SELECTOR, ".katex .mfrac")) == 2  # and the quote
        assert "\\frac" not in judge.text
        inert(browser)
        browser.save_screenshot(str(SHOTS / "review_math_quote.png"))

        # MATH's escaped dollars inside math: "$\$10,\!000$" reads "$10,000".
        _open(browser, server.origin, "processbench-math-947")
        problem = browser.find_element(By.ID, "problem")
        assert _katex(problem) == 3 and "\\$" not in problem.text
        assert "$10,000" in problem.text.replace("\n", "")

        # Omni-MATH's "$ k$", \plus{} and \equal{}: all rendered.
        _open(browser, server.origin, "processbench-omnimath-766")
        problem = browser.find_element(By.ID, "problem")
        assert _katex(problem) == 4
        assert "\\equal" not in problem.text and "\\plus" not in problem.text
        assert "$" not in problem.text
        inert(browser)


def test_a_degenerate_trace_falls_back_to_text_with_the_form_working(
    browser: Any, tmp_path: Path
) -> None:
    fx = _math_run(tmp_path / "data")
    with serving(review_data(fx, queue_n=2)) as server:
        browser.get(server.url)
        ready(browser)
        browser.execute_script("localStorage.setItem('misstep.annotator', 'alice')")
        # Opened from the list (its last trace is this one: pos 6 of 7).
        browser.get(f"{server.origin}/traces/{quote(DEGENERATE, safe='')}?pos=6")
        ready(browser)
        # The nested fraction shows as written (1000 levels: past the depth bound), with a
        # note saying why; the rest of the page renders.
        raw = browser.find_element(By.CSS_SELECTOR, "li.step .tex-raw")
        assert raw.text.startswith("$\\frac{1}{\\frac{1}{")
        note = browser.find_element(By.ID, "math-note").text
        assert note.startswith("1 piece(s) of math shown as written") and "nested deeper" in note
        boxed = _step(browser, "So the answer is")
        assert _katex(boxed) == 1 and "\\boxed" not in boxed.text
        # Gold and the trace's answer render (bare LaTeX, no delimiters), in the facts and in
        # the table of answers.
        facts = browser.find_element(By.ID, "facts")
        assert len(facts.find_elements(By.CSS_SELECTOR, "dd .katex .mfrac")) == 2
        assert "\\frac" not in facts.text
        answers = browser.find_element(By.ID, "answers")
        assert answers.find_elements(By.CSS_SELECTOR, ".katex .mfrac")
        browser.save_screenshot(str(SHOTS / "review_math_degenerate.png"))
        # The form works: label, save, and the page moves on.
        browser.find_element(By.TAG_NAME, "body").send_keys("c")
        browser.find_element(By.ID, "save").click()
        WebDriverWait(browser, 30).until(
            lambda d: "last trace of the list" in d.find_element(By.ID, "saved").text
        )
        inert(browser)
        # The renderer's own bounds, called as the page calls it: a spent time budget leaves
        # every piece as written; an error inside KaTeX (here a stack overflow) too.
        result = browser.execute_script(
            "const d = document.createElement('div');"
            "const spent = misstepMath.renderInto(d, 'so $x^2$ and $\\\\frac{1}{2}$', "
            "{budget: misstepMath.budget(-1)});"
            "const e = document.createElement('div'); const keep = {...misstepMath.LIMITS};"
            "Object.assign(misstepMath.LIMITS, {depth: 1e9, texLength: 1e9});"
            "const t = '$' + '\\\\frac{1}{'.repeat(3000) + '2' + '}'.repeat(3000) + '$';"
            "const spent2 = misstepMath.renderInto(e, t); Object.assign(misstepMath.LIMITS, keep);"
            "return [d.textContent, spent.fallbacks, spent.rendered, e.textContent === t,"
            " spent2.reasons];"
        )
        assert result[:4] == ["so $x^2$ and $\\frac{1}{2}$", 2, 0, True]
        assert result[4][0].startswith("KaTeX failed")
    lines = (fx.run_dir / "human" / "alice.jsonl").read_bytes().splitlines()
    assert orjson.loads(lines[-1])["trace_id"] == DEGENERATE


def test_hostile_text_around_math_stays_text(browser: Any, tmp_path: Path) -> None:
    """The hostile fixture: the problem's $\\frac{10}{2}$ renders, the hostile text around it
    stays text, and the judge's quote (hostile markup) is marked as written."""
    fx = make_run(tmp_path / "data")
    with serving(review_data(fx)) as server:
        browser.get(server.url)
        ready(browser)
        _open(browser, server.origin, fx.wrong_ids[0])
        problem = browser.find_element(By.ID, "problem")
        assert _katex(problem) == 1
        assert "\\frac" not in problem.text and HOSTILE[0] in problem.text
        mark = browser.find_element(By.CSS_SELECTOR, "li.step.blamed mark").text
        assert mark.startswith("2 + 3 = 6 ")
        inert(browser)


# --- the rule on every real trace ----------------------------------------------------------

_PROSE = re.compile(r"[A-Za-z]{3,} [A-Za-z]{3,} [A-Za-z]{3,}")
"""Three plain words in a row: prose read as math (command names and \\text{} removed)."""
_RAW = re.compile(
    r"\\(frac|dfrac|sqrt|boxed|times|cdot|leq?|geq?|pi|div|left|right)(?![A-Za-z])|\^\{|_\{"
)
"""LaTeX left as text."""

# In the page: how the new rule (misstepMath.split) and KaTeX's auto-render (the rule before)
# cut each text; per text [prose math spans, pieces of text holding raw LaTeX, KaTeX errors].
_COUNT = """
const texts = arguments[0], rule = arguments[1], prose = new RegExp(arguments[2]),
  raw = new RegExp(arguments[3]);
const out = [];
for (const text of texts) {
  let p = 0, r = 0, f = 0;
  if (rule === "new") {
    for (const piece of misstepMath.split(text)) {
      if (!piece.math) { if (raw.test(text.slice(piece.start, piece.end))) r++; continue; }
      const tex = piece.tex.replace(/\\\\(text|mbox|textbf|mathrm)\\{[^}]*\\}/g, "");
      if (!piece.display && prose.test(tex)) p++;
      const options = misstepMath.texOptions(piece.display);
      try { katex.renderToString(misstepMath.prepare(piece.tex), options); } catch (e) { f++; }
    }
  } else {
    const d = document.createElement("div");
    d.textContent = text;
    renderMathInElement(d, { delimiters: [
      { left: "$$", right: "$$", display: true }, { left: "\\\\[", right: "\\\\]", display: true },
      { left: "\\\\(", right: "\\\\)", display: false }, { left: "$", right: "$", display: false }],
      throwOnError: false });
    for (const k of d.querySelectorAll(".katex")) {
      const a = k.querySelector("annotation");
      const tex = (a ? a.textContent : "").replace(/\\\\(text|mbox|textbf|mathrm)\\{[^}]*\\}/g, "");
      if (!k.closest(".katex-display") && prose.test(tex)) p++;
    }
    for (const e of d.querySelectorAll(".katex-error")) f++;
    const walker = document.createTreeWalker(d, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const n = walker.currentNode;
      if (!n.parentElement.closest(".katex") && raw.test(n.textContent)) r++;
    }
  }
  out.push([p, r, f]);
}
return out;
"""


def _shared_texts(shared: Path) -> dict[str, list[str]]:
    """Problem and steps of every trace in shared/data, by subset."""
    out: dict[str, list[str]] = {}
    for name, key in (("processbench", "subset"), ("mrben", "source")):
        path = shared / name / "traces.jsonl"
        for line in path.read_bytes().splitlines():
            r = orjson.loads(line)
            out.setdefault(str(r[key]), []).append(
                "\n\n".join([str(r["problem"] or ""), *map(str, r["steps"])])
            )
    return out


def test_the_rule_on_every_real_trace(browser: Any, tmp_path: Path, shared_data: Path) -> None:
    """Traces (problem and steps) with prose read as math, with LaTeX left as text, and with
    a piece KaTeX cannot read, by the rule the page uses and by auto-render's (the rule before
    issue 34), on every trace of shared/data. The bounds are this rule's counts (measured
    2025-11, also in docs/review.md) with a little room; auto-render's show what they guard."""
    fx = make_run(tmp_path / "data")
    texts = _shared_texts(shared_data)
    with serving(review_data(fx)) as server:
        browser.get(server.url)
        ready(browser)
        _open(browser, server.origin, fx.wrong_ids[0])
        browser.set_script_timeout(300)
        # auto-render is still bundled (not loaded by the pages): load it for the comparison.
        browser.execute_async_script(
            "const s = document.createElement('script');"
            "s.src = '/static/katex/auto-render.min.js';"
            "s.onload = arguments[0]; document.head.append(s);"
        )
        counts: dict[tuple[str, str], list[int]] = {}
        for subset, batch in texts.items():
            for rule in ("new", "auto-render"):
                got = browser.execute_script(_COUNT, batch, rule, _PROSE.pattern, _RAW.pattern)
                counts[(subset, rule)] = [sum(1 for g in got if g[k]) for k in range(3)]
    print({f"{s} {r}": c for (s, r), c in counts.items()})
    # Measured (traces: prose read as math, LaTeX left as text, a piece KaTeX cannot read),
    # this rule / auto-render: GSM8K 0/125, 1/208, 3/63 of 400; MR-GSM8K 0/142, 0/0, 0/1 of
    # 590; MATH 0/6, 2/88, 10/11 of 1000; OlympiadBench 0/1, 1/48, 5/7 of 1000; Omni-MATH
    # 2/6, 16/93, 10/15 of 1000; Mr-Ben 0/18, 161/164, 0/0 of 918 (Mr-Ben writes its LaTeX
    # without delimiters: left as text by both).
    for s in ("gsm8k", "mr_gsm8k_partial"):  # money read as math
        assert counts[(s, "auto-render")][0] > 50
        assert counts[(s, "new")][0] <= 2
    for s, n in ((s, len(batch)) for s, batch in texts.items()):
        new, old = counts[(s, "new")], counts[(s, "auto-render")]
        assert new[0] <= max(2, 0.005 * n) and new[0] <= old[0], (s, new, old)
        assert new[2] <= 0.02 * n, (s, new)
        if s in ("gsm8k", "math", "olympiadbench", "omnimath"):
            assert new[1] <= 0.02 * n and new[1] < old[1], (s, new, old)
