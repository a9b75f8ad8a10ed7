"""People's labels as the review app holds them: each annotator's current label per trace,
the adjudicators' decisions, and the traces where people disagree. Read from the run
directory through ``misstep.labels`` (the reveals of the judge in blind mode are read from
there whenever they count: ``misstep.labels.RevealIndex``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from misstep.labels import ADJUDICATOR, HumanLabel, RunDir, read_human_labels, supersedes

__all__ = ["HumanState"]

_SHOWN = ("verdict", "error_type", "first_error_step", "note", "blind", "created_at", "role")


def answer(record: Mapping[str, Any]) -> str:
    """A label's answer: its type, ``no_error`` or ``cant_tell``."""
    return str(record.get("error_type") or record.get("verdict"))


@dataclass
class HumanState:
    """Each person's current label per trace, each trace's adjudication (the later label
    wins, by ``misstep.labels.supersedes``: the rule ``human_consensus`` uses, so the page
    shows what every statistic uses, before and after a restart), for the pages."""

    current: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """(annotator, trace_id) -> the annotator's current label (role annotator)."""
    done: dict[str, set[str]] = field(default_factory=dict)
    """annotator -> the traces they have labelled."""
    by_trace: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """trace_id -> annotator -> current label."""
    adjudicated: dict[str, dict[str, Any]] = field(default_factory=dict)
    """trace_id -> its current adjudication (the later one)."""
    _labels: dict[tuple[str, str, str], HumanLabel] = field(default_factory=dict, repr=False)
    """(role, annotator, trace_id) -> the current label itself (annotator "" for an
    adjudication: any adjudicator's decision replaces an earlier one)."""

    @classmethod
    def load(cls, run_dir: Path) -> HumanState:
        """The state of ``RUN_DIR/human`` (labels and adjudications)."""
        state = cls()
        for path in RunDir(run_dir).human_files():
            for label in read_human_labels(path):
                state.add(label)
        return state

    def add(self, label: HumanLabel) -> None:
        """Take in one stored label (read or written after every label taken in before)."""
        annotator, trace_id = label.annotator, label.trace_id
        slot = (label.role, "" if label.role == ADJUDICATOR else annotator, trace_id)
        old = self._labels.get(slot)
        if old is not None and not supersedes(label, old):
            return
        self._labels[slot] = label
        kept: dict[str, Any] = {k: getattr(label, k) for k in _SHOWN}
        kept["annotator"] = annotator
        if label.role == ADJUDICATOR:
            self.adjudicated[trace_id] = kept
            return
        self.current[(annotator, trace_id)] = kept
        self.done.setdefault(annotator, set()).add(trace_id)
        self.by_trace.setdefault(trace_id, {})[annotator] = kept

    def disagreements(
        self, judge_answer: Mapping[str, str | None], *, with_judge: bool
    ) -> list[tuple[str, list[dict[str, Any]]]]:
        """(trace_id, the annotators' labels) of every trace where two people's answers differ,
        and with ``with_judge`` also where a person's answer differs from the judge's
        (``judge_answer``: trace_id -> the judge's answer, None when it has no ok label);
        sorted by trace_id."""
        out: list[tuple[str, list[dict[str, Any]]]] = []
        for trace_id in sorted(self.by_trace):
            labels = sorted(self.by_trace[trace_id].values(), key=lambda r: str(r["created_at"]))
            answers = {answer(r) for r in labels}
            judge = judge_answer.get(trace_id)
            if len(answers) > 1 or (with_judge and judge is not None and answers != {judge}):
                out.append((trace_id, labels))
        return out
