"""The HTML report: self-contained, every section, hostile trace text escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path

from misstep.report import render_report, write_report
from misstep.report._report import json_for_script
from tests.report.report_fixture import INJECTIONS, injected_run


def test_json_for_script_escapes() -> None:
    text = str(json_for_script({"a": "</script>&\u2028<b>"}))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script>&\u2028<b>"}


def test_report_escapes_and_has_sections(tmp_path: Path) -> None:
    result, traces, labels = injected_run()
    html = render_report(result, traces=traces, labels=labels)
    for raw in [*INJECTIONS, "<img src=x", 'onerror="document']:
        assert raw not in html, raw
    # Exactly the page's two script elements, and the closing tags are theirs.
    assert len(re.findall(r"<script\b", html)) == 2
    assert len(re.findall(r"</script>", html)) == 2
    data = re.search(
        r'<script type="application/json" id="failures-data">(.*?)</script>', html, re.S
    )
    assert data is not None
    failures = json.loads(data.group(1))
    assert failures, "the planted run has majority-vote failures"
    steps = [s for f in failures for t in f["traces"] for s in (t["steps"] or [])]
    assert any(INJECTIONS[0] in s for s in steps)  # the text survives, as data
    for section in ("findings", "metrics", "errors", "coverage", "agreement", "failures"):
        assert f'<section id="{section}">' in html
    # Self-contained: no external resource.
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "data:image/png;base64," in html
    out = write_report(tmp_path / "r.html", result, traces=traces, labels=labels)
    assert out.read_text(encoding="utf-8") == html
    # Findings are text on load.
    assert result.findings[0].sentence.split(";")[0] in html


def test_report_agreement_section_with_human_labels() -> None:
    from misstep.agreement import AnalysisConfig, labelled_run_of
    from misstep.labels import HumanLabel
    from misstep.link import link_analysis
    from tests.link.link_synth import synth_run

    graded, labels = synth_run(plant_at=3, n_checkpoints=5, n_problems=30, n_samples=8, seed=2)
    human = [
        HumanLabel(trace_id=t, annotator="a", error_type=e)
        for t, e in zip(labels["trace_id"][:20], labels["error_type"][:20], strict=True)
    ]
    html = render_report(
        link_analysis(
            labelled_run_of(graded, labels, human=human, config=AnalysisConfig(n_boot=50))
        )
    )
    section = html.split('<section id="agreement">')[1].split("</section>")[0]
    # all 20 agree: raw agreement 100%
    assert "20 traces labelled by both" in section and "100.0%" in section
    assert "data:image/png;base64," in section
