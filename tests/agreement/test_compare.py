"""``misstep agree``'s comparison without the CLI: raters gathered from loaded runs and people's
labels, the report with its human count and homogeneity tests; hand-worked values."""

from __future__ import annotations

from pathlib import Path

import pytest

from misstep.agreement import LabelledRun, compare_raters, gather_raters
from misstep.errors import AnalysisError
from misstep.labels import HumanLabel, LabelStatus, StoredLabel
from misstep.taxonomy import load_taxonomy

TAX = load_taxonomy(None)


def _run(path: str, judge: str, labels: dict[str, tuple[str, str | None, str]]) -> LabelledRun:
    """A judge run in memory: trace -> (status, error type, checkpoint)."""
    stored = {
        t: StoredLabel(
            trace_id=t,
            judge=judge,
            status=LabelStatus(status),
            error_type=etype,
            first_error_step=1 if etype else None,
            confidence=0.9,
            checkpoint=ck,
            dataset="d",
        )
        for t, (status, etype, ck) in labels.items()
    }
    return LabelledRun(run=None, labels_path=Path(path), labels=stored, taxonomy=TAX)


def _h(trace: str, who: str, etype: str | None, role: str = "annotator") -> HumanLabel:
    return HumanLabel.model_validate(
        {"trace_id": trace, "annotator": who, "error_type": etype, "has_error": True, "role": role}
    )


PEOPLE = [
    _h("t1", "a", "arithmetic"),
    _h("t2", "a", "misread"),
    _h("t1", "b", "arithmetic"),
    _h("t2", "b", "arithmetic"),
    _h("t2", "a", "arithmetic"),  # a's later label of t2 replaces the earlier one
    _h("t3", "c", "misread", role="adjudicator"),  # no one's own reading: rates nothing
]
RUN = {
    "t1": ("ok", "arithmetic", "ck1"),
    "t2": ("ok", "misread", "ck2"),
    "t3": ("failed", None, "ck2"),
}


def test_gather_raters() -> None:
    raters = gather_raters(PEOPLE, [_run("runA", "rules:x", RUN)], by="checkpoint")
    assert list(raters.ratings) == ["a", "b", "rules:x"]
    assert {t: r.error_type for t, r in raters.ratings["a"].items()} == {
        "t1": "arithmetic",
        "t2": "arithmetic",
    }
    assert set(raters.ratings["rules:x"]) == {"t1", "t2"}  # the failed label rates nothing
    assert raters.judges == ["rules:x"]
    assert raters.left_out == [("runA", {"failed": 1})]
    assert raters.groups == {"t1": "ck1", "t2": "ck2", "t3": "ck2"}
    # Without --by no group is gathered; a judge named like a person gets its run's name.
    named = gather_raters([_h("t1", "rules:x", "arithmetic")], [_run("runA", "rules:x", RUN)])
    assert named.judges == ["rules:x@runA"] and named.groups == {}


def test_compare_raters_hand_worked() -> None:
    raters = gather_raters(PEOPLE, [_run("runA", "rules:x", RUN)])
    report = compare_raters(raters, categories=TAX.keys, n_boot=20)
    pairs = {(p.a, p.b): (p.n, p.agreement) for p in report.pairs}
    # a and b agree on t1 and t2 (after a's relabel): 2/2; the judge says misread on t2: 1/2.
    assert pairs[("a", "b")] == (2, pytest.approx(1.0))
    assert pairs[("a", "rules:x")] == (2, pytest.approx(0.5))
    # People's consensus types: t1 and t2 (the adjudication of t3 is left out).
    assert report.n_human == 2
    # Both shared traces have a checkpoint (ck1, ck2): the judge run gets its test.
    assert list(report.confusion_homogeneity) == ["rules:x"]
    assert report.confusion_homogeneity["rules:x"].n == 2


def test_compare_raters_refuses_too_little() -> None:
    alone = gather_raters([_h("t1", "a", "arithmetic")], [])
    with pytest.raises(AnalysisError, match="at least two raters; found 1: a"):
        compare_raters(alone, categories=TAX.keys, n_boot=0)
    apart = gather_raters([_h("t1", "a", "arithmetic"), _h("t2", "b", "misread")], [])
    with pytest.raises(AnalysisError, match="no trace is labelled by two raters"):
        compare_raters(apart, categories=TAX.keys, n_boot=0)


def test_each_judge_is_tested_on_its_own_run() -> None:
    # The first run has no ok label, so no judge of its own: the second run's judge is still
    # tested on the second run's labels (once paired with the runs by position, it was
    # tested on the first run's, and left without a test).
    failed = _run("runA", "rules:a", {"t1": ("failed", None, "ck1")})
    raters = gather_raters(PEOPLE, [failed, _run("runB", "rules:b", RUN)])
    assert raters.judges == ["rules:b"] and raters.judge_runs["rules:b"].labels_path == Path("runB")
    report = compare_raters(raters, categories=TAX.keys, n_boot=20)
    assert list(report.confusion_homogeneity) == ["rules:b"]
    assert report.confusion_homogeneity["rules:b"].n == 2
