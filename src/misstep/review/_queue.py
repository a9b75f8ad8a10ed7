"""The review queue: the traces people are asked to label, each with the sampling weight of
the sample it was drawn in, fixed once at start (never by the order of requests).

Either the stratified sample ``misstep sample`` draws with the same n, strata and seed
(``stratified_queue``), or the rows of a ``misstep sample`` task file (``task_queue``: its
``weight`` column as written, so a planned sample is labelled with its own weights)."""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from misstep.agreement import stratified_sample
from misstep.errors import InputFormatError, InvalidRecordError
from misstep.labels import LabelRow, LabelStatus, StoredLabel
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
    order; every trace must be one of ``known``."""
    rows: list[dict[str, object]]
    try:
        if path.suffix == ".csv":
            with path.open(encoding="utf-8", newline="") as fh:
                rows = [dict(r) for r in csv.DictReader(fh)]
        elif path.suffix == ".json":
            tasks = orjson.loads(path.read_bytes())
            rows = [t.get("data", {}) for t in tasks if isinstance(t, dict)]
        else:
            rows = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise InputFormatError(
            path=path, reason=f"not a `misstep sample` task file: {exc}"
        ) from None
    out: list[QueueItem] = []
    for number, row in enumerate(rows, start=1):
        trace_id = row.get("trace_id") if isinstance(row, dict) else None
        if not isinstance(trace_id, str) or trace_id not in known:
            raise InvalidRecordError(
                path=path,
                line=number,
                field="trace_id",
                value=trace_id,
                reason="not a trace of this input",
                hint="pass the task file `misstep sample` wrote for this run",
            )
        try:
            weight = float(row.get("weight", 1.0) or 1.0)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InvalidRecordError(
                path=path,
                line=number,
                field="weight",
                value=row.get("weight"),
                reason="must be a number (the sample's inverse inclusion probability)",
            ) from None
        out.append(QueueItem(trace_id, str(row.get("stratum") or "task"), weight))
    return out


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
