"""The review queue: the traces people are asked to label, each with the sampling weight of
the sample it was drawn in, fixed once at start (never by the order of requests).

Either the stratified sample ``misstep sample`` draws with the same n, strata and seed
(``stratified_queue``), or the rows of a ``misstep sample`` task file (``task_queue``: the
weights of its sidecar as written, so a planned sample is labelled with its own weights)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from misstep.agreement import stratified_sample
from misstep.errors import InvalidRecordError
from misstep.labels import (
    LabelRow,
    LabelStatus,
    StoredLabel,
    check_annotator,
    read_task_design,
    sampling_weight,
    task_rows,
    task_sidecar,
)
from misstep.rollouts import Trace

__all__ = ["QueueItem", "secret_order", "stratified_queue", "task_queue"]


@dataclass(frozen=True)
class QueueItem:
    """One trace of the queue."""

    trace_id: str
    stratum: str
    """Its stratum (may name the judge's type: never served in blind mode)."""
    weight: float
    """Inverse inclusion probability in the sample it was drawn in."""
    annotators: tuple[str, ...] = ()
    """Who the task assigns it to (``misstep sample --annotators``); empty: anyone."""

    def for_(self, annotator: str | None) -> bool:
        """Whether ``annotator``'s queue holds it (a nameless request sees every item)."""
        return not self.annotators or annotator is None or annotator in self.annotators


def stratified_queue(
    labels: Mapping[str, LabelRow | StoredLabel],
    where: Mapping[str, tuple[str, str, str]],
    *,
    n: int,
    stratify: Sequence[str],
    seed: int,
    inclusion: Mapping[str, float],
) -> list[QueueItem]:
    """The stratified sample of the ``ok`` labels of traces in ``where`` (trace_id ->
    (problem_id, checkpoint, dataset)), as ``misstep sample --n`` draws it."""
    stored = {
        t: StoredLabel(trace_id=t, judge="", status=r.status, error_type=r.error_type)
        for t, r in labels.items()
        if r.status == LabelStatus.OK and t in where
    }
    if not stored:
        return []
    # Only trace_id, checkpoint and dataset choose the sample; the text is not needed.
    traces = [
        Trace(
            trace_id=t,
            problem_id=where[t][0],
            response=" ",
            checkpoint=where[t][1],
            dataset=where[t][2],
        )
        for t in stored
    ]
    rows = stratified_sample(
        traces, stored, n=n, stratify=list(stratify), seed=seed, inclusion=dict(inclusion) or None
    )
    return [QueueItem(r.trace_id, r.stratum, float(r.weight)) for r in rows]


def task_queue(path: Path, known: Mapping[str, object]) -> list[QueueItem]:
    """The rows of a ``misstep sample`` task file (JSONL, CSV or Label Studio JSON), in its
    order (a trace assigned to several people, one row each, is one item for them), with the
    weights and strata of its sidecar (``<task file name>.judge.jsonl``
    beside it; a task written before the sidecar held them gives its own ``weight`` column;
    neither: weight 1). Every trace must be one of ``known`` (and of the sidecar when there
    is one), every weight finite and above 0; errors name the file, line and field."""
    side = task_sidecar(path)
    design = read_task_design(side) if side.is_file() else {}
    out: dict[str, QueueItem] = {}
    for line, row in task_rows(path):
        trace_id = row.get("trace_id")
        if not isinstance(trace_id, str) or trace_id not in known:
            raise InvalidRecordError(
                path=path,
                line=line,
                field="trace_id",
                value=trace_id,
                reason="not a trace of this input",
                hint="pass the task file `misstep sample` wrote for this run",
            )
        found = design.get(trace_id)
        if design and found is None:
            raise InvalidRecordError(
                path=path,
                line=line,
                field="trace_id",
                value=trace_id,
                reason=f"not a trace of the task's sidecar {side}",
                hint="keep the task and the sidecar `misstep sample` wrote beside it together",
            )
        weight = (
            found.weight
            if found is not None and found.weight is not None
            else sampling_weight(row.get("weight"), path=path, line=line)
        )
        stratum = found.stratum if found is not None and found.stratum else row.get("stratum")
        who = row.get("annotator")
        people: tuple[str, ...] = (
            (check_annotator(str(who), f"{path}, line {line}: annotator"),) if who else ()
        )
        # A trace given to several people is one item of the queue, at its first row; a row
        # without a name opens it to everyone.
        before = out.get(trace_id)
        if before is not None:
            people = (
                tuple(dict.fromkeys(before.annotators + people))
                if before.annotators and people
                else ()
            )
        out[trace_id] = QueueItem(trace_id, str(stratum or "task"), weight, people)
    return list(out.values())


def secret_order(items: Sequence[QueueItem], key: bytes) -> list[QueueItem]:
    """The items ordered by a keyed hash of their trace id (BLAKE2b with ``key``, the
    server's secret): a random order nobody can reproduce without the key (blind mode).

    Not ``Random(seed).shuffle``: the seed is a public argument (default 0), and un-shuffling
    with it gives back the sample's order, which runs through the judge's strata (issue 34,
    item 1). The hash depends on the trace id alone, never on the position, stratum or
    weight, so the order carries nothing of the judge."""
    return sorted(
        items,
        key=lambda q: hashlib.blake2b(q.trace_id.encode(), key=key, digest_size=16).digest(),
    )
