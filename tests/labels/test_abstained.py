"""The status ``abstained``: a run written the old way (rules judge version 1: "nothing
checkable" stored as ``ok``, ``other``, step 0, confidence 0) reads as abstained; the sample
majority; resuming keeps an abstention."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from misstep.agreement import error_distributions
from misstep.judge import JudgeConfig, JudgeResult, create_judge, label_model
from misstep.labels import LabelStatus, read_label_rows, read_labels, record_of
from misstep.pipelines import make_synthetic_run, run_labeling
from misstep.rollouts import Trace, load_graded
from misstep.taxonomy import load_taxonomy

LEGACY = (
    "rules judge: no checkable arithmetic error found; cannot detect misreads, theorem misuse "
    "or broken derivations"
)


def _old_record(trace_id: str, **fields: object) -> dict[str, object]:
    """A record as the rules judge of version 1 wrote it (record version 2)."""
    return {
        "version": 2,
        "trace_id": trace_id,
        "judge": "rules:txf84203:pr10f6",
        "status": "ok",
        "error_type": "other",
        "first_error_step": 0,
        "evidence": "",
        "explanation": LEGACY,
        "confidence": 0.0,
        **fields,
    }


def test_old_nothing_checkable_records_read_as_abstained(tmp_path: Path) -> None:
    lines = [
        _old_record("a"),  # nothing checkable: abstained
        _old_record("b", error_type="undetermined"),  # the other fallback key: the same
        # a real finding of the old rules judge stays what it was
        _old_record(
            "c", error_type="arithmetic", first_error_step=2, confidence=0.9, explanation="x"
        ),
        # an LLM's "other" with confidence 0 is a type it chose: never mapped
        _old_record("d", judge="llm:m:12345678", explanation="it is other"),
    ]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    labels = read_labels(path, judge="rules:txf84203:pr10f6")
    assert labels["a"].status is LabelStatus.ABSTAINED
    assert (labels["a"].error_type, labels["a"].first_error_step) == (None, None)
    assert labels["a"].reason == LEGACY
    assert labels["b"].status is LabelStatus.ABSTAINED
    assert (labels["c"].status, labels["c"].error_type) == (LabelStatus.OK, "arithmetic")
    rows = read_label_rows(path, judge="rules:txf84203:pr10f6")
    assert [rows[t].status for t in "abc"] == ["abstained", "abstained", "ok"]
    assert rows["a"].error_type is None
    llm = read_labels(path, judge="llm:m:12345678")["d"]
    assert (llm.status, llm.error_type) == (LabelStatus.OK, "other")


def test_a_demo_run_written_the_old_way_counts_no_other(tmp_path: Path) -> None:
    traces = make_synthetic_run(tmp_path / "traces.jsonl", seed=0)
    run = tmp_path / "run"
    run_labeling(traces, run, JudgeConfig(backend="rules"), taxonomy=load_taxonomy())
    # rewrite it as version 1 of the rules judge wrote it: labels and manifest
    new_id = next(iter(read_labels(run).values())).judge
    old_id = new_id.replace("rules:v2:", "rules:")
    out = []
    for line in (run / "labels.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        rec.update(version=2, judge=old_id)
        if rec["status"] == "abstained":
            rec.update(_old_record(rec["trace_id"]), judge=old_id)
            rec["reason"] = None
        out.append(json.dumps(rec))
    (run / "labels.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    manifest = (run / "manifest.json").read_text(encoding="utf-8")
    (run / "manifest.json").write_text(manifest.replace(new_id, old_id), encoding="utf-8")
    labels = read_labels(run)
    statuses = [lab.status for lab in labels.values()]
    # the demo's 3,446 wrong traces: 1,825 the rules judge cannot type, 1,621 arithmetic
    assert statuses.count(LabelStatus.ABSTAINED) == 1825
    assert statuses.count(LabelStatus.OK) == 1621
    graded = load_graded(traces).table
    dists = error_distributions(graded, labels, load_taxonomy().keys)
    assert sum(d.n_abstained for d in dists) == 1825
    assert sum(d.n_labelled for d in dists) == 1621
    for d in dists:
        assert d.error_dist is not None and d.error_dist["other"] == 0.0
        assert d.n_labelled + d.n_abstained == d.status_counts.get("ok", 0) + d.status_counts.get(
            "abstained", 0
        )


def _ok(error_type: str) -> JudgeResult:

    model = label_model(load_taxonomy())
    label = model(
        first_error_step=0, evidence="", explanation="e", error_type=error_type, confidence=0.5
    )
    return JudgeResult(status=LabelStatus.OK, label=label)


def _abstained() -> JudgeResult:
    return JudgeResult(status=LabelStatus.ABSTAINED, reason="the judge cannot tell: e")


@pytest.mark.parametrize(
    ("results", "status", "error_type", "agreement"),
    [
        # 2 of 3 samples abstain: the record abstains, agreement 2/3
        ([_abstained(), _ok("misread"), _abstained()], "abstained", None, 2 / 3),
        # 1 abstains, 1 types: a tie goes to the type (an answer), agreement 1/2
        ([_abstained(), _ok("misread")], "ok", "misread", 1 / 2),
        # 2 of 3 type arithmetic: arithmetic, agreement 2/3
        ([_ok("arithmetic"), _abstained(), _ok("arithmetic")], "ok", "arithmetic", 2 / 3),
    ],
)
def test_the_sample_majority_counts_abstentions_as_one_answer(
    results: list[JudgeResult], status: str, error_type: str | None, agreement: float
) -> None:
    trace = Trace(problem_id="p", response="r")
    order = {k: i for i, k in enumerate(load_taxonomy().keys)}
    record = record_of(
        trace, results, ["r"], judge="j", samples=len(results), order=order, attempts=1
    )
    assert (record.status, record.error_type) == (status, error_type)
    assert record.sample_agreement == pytest.approx(agreement)
    if status == "abstained":
        assert record.first_error_step is None and record.reason == "the judge cannot tell: e"


def test_a_rules_run_resumes_past_its_abstentions(tmp_path: Path) -> None:
    traces = make_synthetic_run(tmp_path / "traces.jsonl", seed=0)
    run = tmp_path / "run"
    run_labeling(traces, run, JudgeConfig(backend="rules"), taxonomy=load_taxonomy())
    before = (run / "labels.jsonl").read_text(encoding="utf-8").count("\n")
    again = run_labeling(traces, run, JudgeConfig(backend="rules"), taxonomy=load_taxonomy())
    # nothing is asked again: abstained and ok records of this judge are its answers
    assert again.status_counts.get("abstained") == 1825
    assert again.written_counts.get("abstained", 0) == 0
    assert (run / "labels.jsonl").read_text(encoding="utf-8").count("\n") == before
    assert create_judge(JudgeConfig(), load_taxonomy()).judge_id.startswith("rules:v2:")
