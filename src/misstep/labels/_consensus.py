"""The human consensus: one rule, used by every command and the report.

Per trace, over the people whose current label of it (a person's later label of a trace
supersedes their earlier ones; "later" by ``created_at``, the rule of ``labels/_latest.py``)
gives an error type (a label with ``error_type`` null says
"no error" or "untyped" and does not vote on the type): the consensus type is the type most
of them chose. When the most frequent types tie, the trace has **no consensus**: it is listed
as tied and left out of everything built on the consensus (confusion matrices, corrections,
per-category scores), and the commands say how many were left out. A trace typed by one person
has that person's type. Its weight is the mean sampling weight of its labels.

**Adjudication** overrides this: a trace with a label of role ``adjudicator`` (``misstep review
--adjudicate``; the later one of two adjudications of a trace wins, by ``created_at``
whoever made them, not by file name) has the adjudicated type as its consensus, with
that label's weight, tie or not; adjudicated "no error" leaves it without a type; an
adjudicated "can't tell" decides nothing. So summary, link, report and the corrected
distributions, which all read this consensus, use the adjudicated label where one exists;
agreement figures (``agree``) leave adjudications out and report agreement before it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from misstep.labels._human import ADJUDICATOR, HumanLabel
from misstep.labels._latest import supersedes

__all__ = ["HumanConsensus", "current_labels", "human_consensus", "majority_labels"]


def majority_labels(
    ratings: Mapping[str, Mapping[str, str]],
) -> tuple[dict[str, str], list[str]]:
    """Majority label per item over the raters ({rater: {item: label}}).

    Returns (consensus, tied): an item whose most frequent labels tie has no consensus and is
    listed in ``tied`` instead (sorted)."""
    per_item: dict[str, Counter[str]] = {}
    for by_item in ratings.values():
        for item, label in by_item.items():
            per_item.setdefault(item, Counter())[label] += 1
    agreed: dict[str, str] = {}
    tied: list[str] = []
    for item in sorted(per_item):
        top = per_item[item].most_common()
        if len(top) > 1 and top[0][1] == top[1][1]:
            tied.append(item)
        else:
            agreed[item] = top[0][0]
    return agreed, tied


@dataclass(frozen=True)
class HumanConsensus:
    """The consensus error type of each trace people typed."""

    types: dict[str, str]
    """trace_id -> consensus type."""
    weights: dict[str, float]
    """trace_id -> mean sampling weight of its labels."""
    tied: list[str] = field(default_factory=list)
    """Traces whose most frequent types tie: no consensus."""

    def items(self) -> Iterable[tuple[str, tuple[str, float]]]:
        """(trace_id, (type, weight)) for every trace with a consensus."""
        return ((t, (k, self.weights[t])) for t, k in self.types.items())


def current_labels(labels: Iterable[HumanLabel]) -> tuple[list[HumanLabel], list[HumanLabel]]:
    """(each person's current label per trace, each trace's current adjudication): of two
    labels of a trace by one person (of role annotator), or of two adjudications of a trace
    (by anyone), the later one by ``supersedes``; "can't tell" included. Both lists in the
    order first read."""
    own: dict[tuple[str, str], HumanLabel] = {}
    decided: dict[str, HumanLabel] = {}
    for label in labels:
        slot: dict[Any, HumanLabel]
        key: Any
        if label.role == ADJUDICATOR:
            slot, key = decided, label.trace_id
        else:
            slot, key = own, (label.annotator, label.trace_id)
        old = slot.get(key)
        if old is None or supersedes(label, old):
            slot[key] = label
    return list(own.values()), list(decided.values())


def human_consensus(labels: Iterable[HumanLabel]) -> HumanConsensus:
    """The consensus of ``labels`` by the rule in the module docstring."""
    own, adjudications = current_labels(labels)
    typed: dict[str, dict[str, str]] = {}
    weight_of: dict[str, dict[str, float]] = {}
    for label in own:
        # An untyped current label ("no error", "can't tell") gives no type.
        if label.error_type is not None:
            typed.setdefault(label.annotator, {})[label.trace_id] = label.error_type
            weight_of.setdefault(label.annotator, {})[label.trace_id] = label.weight
    # "Can't tell" decides nothing: the trace keeps the people's consensus.
    decided = {
        a.trace_id: a for a in adjudications if a.error_type is not None or a.has_error is False
    }
    weights: dict[str, list[float]] = {}
    for by_trace in weight_of.values():
        for trace_id, weight in by_trace.items():
            weights.setdefault(trace_id, []).append(weight)
    agreed, tied = majority_labels(typed)
    mean = {t: sum(weights[t]) / len(weights[t]) for t in agreed}
    for trace_id, label in decided.items():
        agreed.pop(trace_id, None)
        mean.pop(trace_id, None)
        if label.error_type is not None:
            agreed[trace_id] = label.error_type
            mean[trace_id] = label.weight
    return HumanConsensus(
        types=dict(sorted(agreed.items())),
        weights=mean,
        tied=[t for t in tied if t not in decided],
    )
