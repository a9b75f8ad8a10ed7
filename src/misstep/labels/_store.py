"""The run directory: append-only ``labels.jsonl`` and an atomically written ``manifest.json``.

A run killed at any moment (kill -9 included) leaves at worst a partly written last line. On
reading, a bad *last* line is skipped and counted; a bad line anywhere else is corruption and
raises. On opening for append the tail is repaired first, so the next record never glues onto
a partial one: a complete record that lost only its newline gets it; a fragment is removed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson
from pydantic import ValidationError

from misstep.errors import LabelStoreError
from misstep.labels._record import StoredLabel
from misstep.labels._rundir import RunDir, labels_path
from misstep.labels._tail import repair_tail
from misstep.verdict import LabelStatus

__all__ = [
    "LabelRow",
    "LabelStore",
    "iter_label_lines",
    "read_label_rows",
    "read_labels",
    "read_status_index",
]

# fsync at most this often: every label is flushed to the OS at once (survives kill -9);
# fsync only guards against a machine crash, and per-line fsync would cap throughput.
_FSYNC_EVERY_S = 1.0


class LabelStore:
    """Appends label records to ``RUN_DIR/labels.jsonl``; one JSON object per line."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LabelStoreError(path=self.run_dir, reason=f"cannot create it: {exc}") from None
        self.path = RunDir(self.run_dir).labels
        self.written = 0
        self.dropped_bytes = 0
        """Bytes of a partly written last line removed on opening (left by a killed run)."""
        try:
            self._fh = open(self.path, "ab")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise LabelStoreError(path=self.path, reason=f"cannot open for append: {exc}") from None
        self._repair_tail()
        self._last_sync = time.monotonic()

    def _repair_tail(self) -> None:
        """Make the file end with a complete line before anything is appended (``repair_tail``)."""
        self._fh.flush()
        self.dropped_bytes = repair_tail(self.path)

    def append(self, label: StoredLabel) -> None:
        """Write one record and flush it to the OS (fsync about once a second)."""
        self._fh.write(orjson.dumps(label.model_dump(mode="json")) + b"\n")
        self._fh.flush()
        self.written += 1
        now = time.monotonic()
        if now - self._last_sync >= _FSYNC_EVERY_S:
            os.fsync(self._fh.fileno())
            self._last_sync = now

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()

    def __enter__(self) -> LabelStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_label_lines(
    path: str | Path, *, skipped: list[int] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each record of a labels.jsonl, streaming.

    A line that does not parse is tolerated only when it is the last line (a run killed while
    writing it); its number is appended to ``skipped``. Elsewhere it raises LabelStoreError."""
    path = labels_path(path)
    if not path.exists():
        raise LabelStoreError(path=path, reason="no such file", hint="run `misstep label` first")
    bad: tuple[int, str] | None = None
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            if bad is not None:
                # The bad line was not the last one: the file is corrupt, not merely cut.
                raise LabelStoreError(
                    path=path,
                    line=bad[0],
                    reason=f"not a JSON label record ({bad[1]})",
                    hint="remove or fix that line; only a partly written last line is tolerated",
                )
            try:
                record = orjson.loads(line)
                if not isinstance(record, dict):
                    raise orjson.JSONDecodeError("not an object", "", 0)
            except orjson.JSONDecodeError as exc:
                bad = (number, str(exc).splitlines()[0][:80])
                continue
            yield number, record
        if bad is not None and skipped is not None:
            skipped.append(bad[0])


def _one_judge(path: Path, judges: set[str], chosen: str | None) -> None:
    """Labels of several judge configurations never mix silently: one must be chosen."""
    if chosen is None and len(judges) > 1:
        raise LabelStoreError(
            path=path,
            reason=f"it holds labels of {len(judges)} judge configurations "
            f"({', '.join(sorted(judges))}), which one analysis must not mix",
            hint="choose one with --judge-id ID",
        )
    if chosen is not None and chosen not in judges:
        raise LabelStoreError(
            path=path,
            reason=f"it holds no label of judge {chosen!r}",
            hint="the judges there: " + (", ".join(sorted(judges)) or "none"),
        )


def read_labels(
    run_dir_or_file: str | Path,
    *,
    skipped: list[int] | None = None,
    judge: str | None = None,
) -> dict[str, StoredLabel]:
    """The current record per trace (the last one in the file wins), of one judge
    configuration: ``judge`` when given, else the file must hold only one (LabelStoreError
    otherwise).

    Accepts a run directory (the manifest is optional) or a labels.jsonl path."""
    path = labels_path(run_dir_or_file)
    current: dict[str, StoredLabel] = {}
    judges: set[str] = set()
    for number, record in iter_label_lines(path, skipped=skipped):
        judges.add(str(record.get("judge")))
        if judge is not None and record.get("judge") != judge:
            continue
        try:
            label = StoredLabel.model_validate(record)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err.get("loc", ()))
            raise LabelStoreError(
                path=path, line=number, reason=f"field {field!r}: {err.get('msg', '')}"
            ) from None
        current[label.trace_id] = label
    _one_judge(path, judges, judge)
    return current


class LabelRow(NamedTuple):
    """The fields of a label that distributions need: what ``read_label_rows`` keeps."""

    status: str
    """A ``LabelStatus`` value."""
    error_type: str | None
    """The error type of an ``ok`` label."""
    inclusion_prob: float | None = None
    """The label budget's inclusion probability of the trace (None: every trace judged)."""


def read_label_rows(
    run_dir_or_file: str | Path, *, judge: str | None = None
) -> dict[str, LabelRow]:
    """``trace_id -> LabelRow(status, error_type, inclusion_prob)`` of each current record
    (the last one wins) of one judge configuration (as in ``read_labels``): the labels without
    their text (evidence, explanation, raw replies), so memory grows with the number of labels,
    never with what the judge wrote."""
    path = labels_path(run_dir_or_file)
    statuses = {s.value: s.value for s in LabelStatus}
    types: dict[str, str] = {}
    rows: dict[str, LabelRow] = {}
    judges: set[str] = set()
    for number, record in iter_label_lines(path):
        judges.add(str(record.get("judge")))
        if judge is not None and record.get("judge") != judge:
            continue
        trace_id, status = record.get("trace_id"), record.get("status")
        error_type = record.get("error_type")
        if not isinstance(trace_id, str) or status not in statuses:
            raise LabelStoreError(
                path=path, line=number, reason="record without a trace_id or a valid status"
            )
        if error_type is not None:
            error_type = types.setdefault(str(error_type), str(error_type))  # one copy each
        prob = record.get("inclusion_prob")
        rows[trace_id] = LabelRow(
            statuses[status], error_type, float(prob) if isinstance(prob, int | float) else None
        )
    _one_judge(path, judges, judge)
    return rows


def read_status_index(
    run_dir_or_file: str | Path, *, skipped: list[int] | None = None
) -> dict[str, tuple[str, str]]:
    """``trace_id -> (status, judge id)`` of each current record: what resuming needs, without
    keeping the labels themselves. An absent file gives an empty index."""
    path = labels_path(run_dir_or_file)
    if not path.exists():
        return {}
    index: dict[str, tuple[str, str]] = {}
    for number, record in iter_label_lines(path, skipped=skipped):
        trace_id, status, judge = record.get("trace_id"), record.get("status"), record.get("judge")
        if not isinstance(trace_id, str) or status not in set(LabelStatus):
            raise LabelStoreError(
                path=path, line=number, reason="record without a trace_id or a valid status"
            )
        index[trace_id] = (str(status), str(judge))
    return index
