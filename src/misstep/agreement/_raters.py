"""Raters from stored inputs: people's labels by annotator, a judge run's ``ok`` labels by
judge id."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from misstep.agreement._agreement import Rating
from misstep.labels import HumanLabel, LabelStatus, StoredLabel, current_labels

__all__ = ["human_raters", "judge_raters"]


def human_raters(labels: Sequence[HumanLabel]) -> dict[str, dict[str, Rating]]:
    """{annotator: {trace_id: Rating}}; a later label of the same trace by the same person
    replaces an earlier one (``misstep.labels.current_labels``, the rule of the human
    consensus). Adjudications (role ``adjudicator``) are no one's own reading and are left
    out: agreement is reported as it was before adjudication."""
    raters: dict[str, dict[str, Rating]] = {}
    own, _ = current_labels(labels)
    for label in own:
        raters.setdefault(label.annotator, {})[label.trace_id] = Rating(
            error_type=label.error_type,
            first_error_step=label.first_error_step,
            has_error=label.has_error,
        )
    return raters


def judge_raters(
    labels: Mapping[str, StoredLabel],
) -> tuple[dict[str, dict[str, Rating]], Counter[str]]:
    """({judge id: {trace_id: Rating}}, count per status). Only ``ok`` labels rate; the
    others are counted. For step agreement a label without a first error step, or with
    confidence 0 (the rules judge's "undetermined": it found nothing it can check), counts as
    "no error found", as ProcessBench scores a detector that reports none."""
    raters: dict[str, dict[str, Rating]] = {}
    status: Counter[str] = Counter()
    for trace_id, label in labels.items():
        status[str(label.status)] += 1
        if label.status != LabelStatus.OK:
            continue
        raters.setdefault(label.judge, {})[trace_id] = Rating(
            error_type=label.error_type,
            first_error_step=label.first_error_step,
            has_error=label.first_error_step is not None and label.confidence != 0,
        )
    return raters, status
