"""What the review app serves: the graded table, the judge's labels and people's labels held as
column arrays (filters are numpy masks over 10^6 rows), a trace's text read on demand, and
people's new labels validated and stored.

Memory grows with the number of traces (a few small columns and the trace id index) and with
the number of labels (status, type, confidence and the byte offset of each label's line),
never with the text of responses or judge explanations: those are read when a trace opens.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson
import pandas as pd

from misstep.agreement import ErrorDistribution, error_distributions, stratified_sample
from misstep.errors import LabelStoreError, OptionError
from misstep.labels import (
    HUMAN_DIR,
    NO_ERROR_CHOICE,
    HumanLabel,
    LabelRow,
    LabelStatus,
    StoredLabel,
    check_labels_input,
    read_human_labels,
    read_manifest,
)
from misstep.labels._store import labels_path
from misstep.metrics import order_checkpoints, problem_stats
from misstep.prompts import split_steps
from misstep.review._texts import TraceTexts
from misstep.review._writer import (
    CANT_TELL,
    HumanLabelWriter,
    ReviewLabel,
    check_annotator,
)
from misstep.rollouts import GradedRun, Trace
from misstep.taxonomy import Taxonomy

__all__ = ["MAX_LIMIT", "BadRequest", "ReviewData", "TraceFilter"]

MAX_LIMIT = 500
"""Most items one page of ``/api/traces`` may hold."""
_UNLABELLED = "unlabelled"
_MAX_NOTE = 4000
_MAX_SIBLINGS = 200


class BadRequest(Exception):
    """A request the app refuses (HTTP 400) with a message for the person."""


@dataclass(frozen=True)
class TraceFilter:
    """The filters of the trace list (None: any)."""

    checkpoint: str | None = None
    dataset: str | None = None
    problem_id: str | None = None
    outcome: str | None = None
    error_type: str | None = None
    """A taxonomy key, or ``none`` for a label without a type."""
    status: str | None = None
    """A judge label status, or ``unlabelled``."""
    min_confidence: float | None = None
    max_confidence: float | None = None
    majority_failure: bool | None = None
    """The trace's problem is a majority-vote failure at its checkpoint."""

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> TraceFilter:
        """Parse query parameters; a malformed value is a BadRequest."""

        def number(name: str) -> float | None:
            text = query.get(name)
            if text in (None, ""):
                return None
            try:
                value = float(text)
            except ValueError:
                raise BadRequest(f"{name} must be a number between 0 and 1") from None
            if not 0.0 <= value <= 1.0:
                raise BadRequest(f"{name} must be a number between 0 and 1")
            return value

        failure = query.get("majority_failure")
        if failure not in (None, "", "true", "false"):
            raise BadRequest("majority_failure must be true or false")
        return cls(
            checkpoint=query.get("checkpoint") or None,
            dataset=query.get("dataset") or None,
            problem_id=query.get("problem_id") or None,
            outcome=query.get("outcome") or None,
            error_type=query.get("error_type") or None,
            status=query.get("status") or None,
            min_confidence=number("min_confidence"),
            max_confidence=number("max_confidence"),
            majority_failure=None if failure in (None, "") else failure == "true",
        )

    @property
    def uses_judge(self) -> bool:
        """Whether the filter reveals the judge's labels (refused with ``--blind``)."""
        return any(
            v is not None
            for v in (self.error_type, self.status, self.min_confidence, self.max_confidence)
        )


@dataclass
class _Codes:
    """A string column as integer codes and the names they stand for."""

    codes: npt.NDArray[np.int32]
    names: list[str]

    @classmethod
    def of(cls, values: Sequence[object] | pd.Series) -> _Codes:
        codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
        return cls(codes.astype(np.int32), [str(u) for u in uniques])

    def code(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            return -2  # matches nothing (-1 is missing)

    def name(self, row: int) -> str | None:
        c = int(self.codes[row])
        return None if c < 0 else self.names[c]


@dataclass
class _HumanState:
    """Each person's current label per trace (the last one wins), for the pages."""

    current: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def add(self, record: Mapping[str, Any]) -> None:
        key = (str(record.get("annotator")), str(record.get("trace_id")))
        self.current[key] = {
            k: record.get(k)
            for k in ("verdict", "error_type", "first_error_step", "note", "blind", "created_at")
        }


def _read_human_files(directory: Path) -> list[dict[str, Any]]:
    """Every record of ``RUN_DIR/human/*.jsonl``; a cut last line (never acknowledged) is
    skipped, as the label store does."""
    records: list[dict[str, Any]] = []
    if not directory.is_dir():
        return records
    for path in sorted(directory.glob("*.jsonl")):
        lines = path.read_bytes().split(b"\n")
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError:
                if number == len(lines):
                    continue
                raise LabelStoreError(path=path, line=number, reason="not a JSON record") from None
            if isinstance(record, dict):
                records.append(record)
    return records


class ReviewData:
    """Everything the review server reads and writes, behind thread-safe methods."""

    def __init__(
        self,
        run: GradedRun,
        labels: Path,
        texts: TraceTexts,
        taxonomy: Taxonomy,
        *,
        human: Sequence[HumanLabel] = (),
        judge_id: str | None = None,
        blind: bool = False,
        labels_from_other_input: bool = False,
        queue_n: int = 200,
        queue_stratify: Sequence[str] = ("checkpoint", "error_type"),
        seed: int = 0,
        on_stage: Callable[[str], None] | None = None,
    ) -> None:
        stage = on_stage or (lambda _name: None)
        self.run = run
        self.taxonomy = taxonomy
        self.blind = blind
        self.texts = texts
        self.labels_file = labels_path(labels)
        self.run_dir = self.labels_file.parent
        self.writer = HumanLabelWriter(self.run_dir)
        self.extra_human = list(human)
        self.queue_n = queue_n
        self.queue_stratify = list(queue_stratify)
        self.seed = seed
        table = run.table
        self.n = len(table)
        stage("indexing the table")
        ids = table["trace_id"].astype(str).tolist()
        self.row_of: dict[str, int] = {t: i for i, t in enumerate(ids)}
        self.trace_ids = ids
        self.checkpoints = order_checkpoints(table)
        rank = {c: i for i, c in enumerate(self.checkpoints)}
        self.checkpoint = _Codes.of(table["checkpoint"].astype(str))
        self.dataset = _Codes.of(table["dataset"].astype(str))
        self.problem = _Codes.of(table["problem_id"].astype(str))
        self.outcome = _Codes.of(table["outcome"].astype(str))
        self.sample_idx = pd.to_numeric(table["sample_idx"], errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
        self.answer = table["answer"]
        self.answer_class = table["answer_class"]
        self.correct = table["correct"].to_numpy(dtype=bool)
        # Rows in the list's order: checkpoints in training order, then the table's order.
        ck_rank = np.array([rank[c] for c in self.checkpoint.names], dtype=np.int32)
        self.order = np.argsort(ck_rank[self.checkpoint.codes], kind="stable").astype(np.int64)
        stage("per-problem vote statistics")
        self.stats = problem_stats(table).reset_index(drop=True)
        key = ["checkpoint", "dataset", "problem_id"]
        group = (
            table[key]
            .astype(str)
            .merge(self.stats[key].astype(str).reset_index(), on=key, how="left")["index"]
        )
        self.group = group.to_numpy(dtype=np.int64)
        self.majority_failure = self.stats["majority_failure"].to_numpy(dtype=bool)[self.group]
        by_group = np.argsort(self.group, kind="stable")
        starts = np.searchsorted(self.group[by_group], np.arange(len(self.stats) + 1))
        self._group_rows, self._group_starts = by_group, starts
        # (dataset, problem) -> its rows of the stats table, one per checkpoint.
        self._problem_groups: dict[tuple[str, str], list[int]] = {}
        for i, (d, p) in enumerate(
            zip(
                self.stats["dataset"].astype(str), self.stats["problem_id"].astype(str), strict=True
            )
        ):
            self._problem_groups.setdefault((d, p), []).append(i)
        stage("reading the judge's labels")
        self._read_labels(judge_id, labels, labels_from_other_input)
        stage("reading people's labels")
        self.writer.repair()
        self.human = _HumanState()
        for record in _read_human_files(self.run_dir / HUMAN_DIR):
            self.human.add(record)
        self._lock = threading.Lock()
        self._summary: dict[str, Any] | None = None
        self._queue: list[dict[str, Any]] | None = None

    # --- loading ------------------------------------------------------------------------

    def _read_labels(self, judge_id: str | None, labels: Path, other_input: bool) -> None:
        """One pass over labels.jsonl: per table row the current record's status, type,
        confidence and byte offset (the last record of a trace wins)."""
        path = self.labels_file
        if not path.exists():
            raise LabelStoreError(path=path, reason="no such file", hint="run `misstep label`")
        statuses = [s.value for s in LabelStatus]
        self.status = _Codes(np.full(self.n, -1, dtype=np.int32), [*statuses, _UNLABELLED])
        types = list(self.taxonomy.keys)
        self.etype = _Codes(np.full(self.n, -1, dtype=np.int32), types)
        self.confidence = np.full(self.n, np.nan, dtype=np.float32)
        self.label_offset = np.full(self.n, -1, dtype=np.int64)
        self.label_rows: dict[str, LabelRow] = {}
        judges: set[str] = set()
        offset = 0
        with open(path, "rb") as fh:
            lines = iter(fh)
            number = 0
            for raw in lines:
                number += 1
                here, offset = offset, offset + len(raw)
                if not raw.strip():
                    continue
                try:
                    record = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    if not raw.endswith(b"\n"):
                        continue  # a cut last line (a killed `misstep label`)
                    raise LabelStoreError(
                        path=path, line=number, reason="not a JSON label record"
                    ) from None
                judge = str(record.get("judge"))
                judges.add(judge)
                if judge_id is not None and judge != judge_id:
                    continue
                trace_id, status = record.get("trace_id"), record.get("status")
                if not isinstance(trace_id, str) or status not in statuses:
                    raise LabelStoreError(
                        path=path, line=number, reason="record without a trace_id or valid status"
                    )
                error_type = record.get("error_type")
                self.label_rows[trace_id] = LabelRow(
                    status, None if error_type is None else str(error_type)
                )
                row = self.row_of.get(trace_id)
                if row is None:
                    continue
                self.status.codes[row] = statuses.index(status)
                if error_type is not None:
                    if str(error_type) not in self.etype.names:
                        self.etype.names.append(str(error_type))
                    self.etype.codes[row] = self.etype.names.index(str(error_type))
                else:
                    self.etype.codes[row] = -1
                conf = record.get("confidence")
                self.confidence[row] = float(conf) if isinstance(conf, int | float) else np.nan
                self.label_offset[row] = here
        if judge_id is None and len(judges) > 1:
            raise LabelStoreError(
                path=path,
                reason=f"it holds labels of {len(judges)} judge configurations "
                f"({', '.join(sorted(judges))})",
                hint="choose one with --judge-id ID",
            )
        if judge_id is not None and judge_id not in judges:
            raise LabelStoreError(path=path, reason=f"it holds no label of judge {judge_id!r}")
        self.judge_id = judge_id or (next(iter(judges)) if judges else None)
        self.status.codes[self.status.codes < 0] = len(statuses)  # unlabelled
        check_labels_input(
            labels,
            self.label_rows,
            input_path=self.run.input_path,
            input_sha256=self.run.input_sha256,
            trace_ids=set(self.row_of),
            allow_other_input=other_input,
        )
        manifest = read_manifest(self.run_dir)
        if (
            manifest is not None
            and manifest.taxonomy_hash
            and manifest.taxonomy_hash != self.taxonomy.hash
        ):
            raise OptionError(
                option="--taxonomy",
                value=self.taxonomy.id,
                allowed=f"the taxonomy the run was labelled with ({manifest.taxonomy_id} "
                f"{manifest.taxonomy_version}, hash {manifest.taxonomy_hash[:12]})",
                hint="pass that taxonomy's file with --taxonomy",
            )

    # --- the list -------------------------------------------------------------------------

    def _mask(self, f: TraceFilter) -> npt.NDArray[np.bool_]:
        mask = np.ones(self.n, dtype=bool)
        for codes, value in (
            (self.checkpoint, f.checkpoint),
            (self.dataset, f.dataset),
            (self.problem, f.problem_id),
            (self.outcome, f.outcome),
            (self.status, f.status),
        ):
            if value is not None:
                mask &= codes.codes == codes.code(value)
        if f.error_type is not None:
            if f.error_type == "none":
                mask &= self.etype.codes < 0
            else:
                mask &= self.etype.codes == self.etype.code(f.error_type)
        if f.min_confidence is not None:
            mask &= self.confidence >= f.min_confidence
        if f.max_confidence is not None:
            mask &= self.confidence <= f.max_confidence
        if f.majority_failure is not None:
            mask &= self.majority_failure == f.majority_failure
        return mask

    def list_traces(
        self, f: TraceFilter, *, offset: int, limit: int, annotator: str | None = None
    ) -> dict[str, Any]:
        """``{"total": N, "offset", "limit", "items": [...]}`` of the filtered list."""
        if self.blind and f.uses_judge:
            raise BadRequest("judge filters are hidden in --blind mode")
        if offset < 0 or not 1 <= limit <= MAX_LIMIT:
            raise BadRequest(f"offset must be >= 0 and limit between 1 and {MAX_LIMIT}")
        mask = self._mask(f)[self.order]
        hits = self.order[mask]
        page = hits[offset : offset + limit]
        return {
            "total": int(hits.size),
            "offset": offset,
            "limit": limit,
            "items": [self._item(int(r), annotator) for r in page],
        }

    def _item(self, row: int, annotator: str | None) -> dict[str, Any]:
        sample = self.sample_idx[row]
        item: dict[str, Any] = {
            "trace_id": self.trace_ids[row],
            "checkpoint": self.checkpoint.name(row),
            "dataset": self.dataset.name(row),
            "problem_id": self.problem.name(row),
            "sample_idx": None if math.isnan(sample) else int(sample),
            "answer": _text(self.answer.iat[row]),
            "outcome": self.outcome.name(row),
            "correct": bool(self.correct[row]),
            "majority_failure": bool(self.majority_failure[row]),
        }
        if not self.blind:
            conf = float(self.confidence[row])
            item["judge"] = {
                "status": self.status.name(row),
                "error_type": self.etype.name(row),
                "confidence": None if math.isnan(conf) else round(conf, 4),
            }
        if annotator is not None:
            item["human"] = self.human.current.get((annotator, self.trace_ids[row]))
        return item

    # --- one trace ------------------------------------------------------------------------

    def row(self, trace_id: str) -> int:
        row = self.row_of.get(trace_id)
        if row is None:
            raise KeyError(trace_id)
        return row

    def trace(self, row: int) -> Trace:
        trace = self.texts.trace(row, self.trace_ids[row])
        if trace is None or trace.trace_id != self.trace_ids[row]:
            raise LabelStoreError(
                path=self.texts.path,
                reason=f"the text index does not hold trace {self.trace_ids[row]!r}",
                hint="clear the cache (misstep cache clear) and start again",
            )
        return trace

    def judge_label(self, row: int) -> StoredLabel | None:
        offset = int(self.label_offset[row])
        if offset < 0:
            return None
        with open(self.labels_file, "rb") as fh:
            fh.seek(offset)
            return StoredLabel.model_validate(orjson.loads(fh.readline()))

    def _answer_text(self, rows: npt.NDArray[np.int64], cls: object) -> str | None:
        """The answer as written by the first row of ``rows`` in class ``cls``."""
        if _missing(cls):
            return None
        for r in rows:
            if self._class(int(r)) == cls:
                return _text(self.answer.iat[int(r)])
        return None

    def _class(self, row: int) -> str | None:
        return _text(self.answer_class.iat[row])

    def detail(self, trace_id: str, annotator: str | None = None) -> dict[str, Any]:
        """The trace with its steps, the judge's label (unless hidden), and its problem's
        answers at this checkpoint and the other checkpoints' majority answers."""
        row = self.row(trace_id)
        trace = self.trace(row)
        steps = split_steps(trace)
        g = int(self.group[row])
        rows = self._group_rows[self._group_starts[g] : self._group_starts[g + 1]]
        mine = self.human.current.get((annotator, trace_id)) if annotator else None
        hidden = self.blind and mine is None
        label = None if hidden else self.judge_label(row)
        stat = self.stats.iloc[g]
        counts: Counter[object] = Counter()
        correct_of: dict[object, bool] = {}
        for r in rows:
            cls = self._class(int(r))
            if cls is None:
                continue
            counts[cls] += 1
            correct_of[cls] = bool(self.correct[int(r)])
        distribution = [
            {"answer": self._answer_text(rows, cls), "count": n, "correct": correct_of[cls]}
            for cls, n in counts.most_common()
        ]
        others: list[dict[str, Any]] = []
        for o in self._problem_groups[(str(stat["dataset"]), str(stat["problem_id"]))]:
            other = self.stats.iloc[o]
            orows = self._group_rows[self._group_starts[o] : self._group_starts[o + 1]]
            others.append(
                {
                    "checkpoint": str(other["checkpoint"]),
                    "n": int(other["n"]),
                    "pass@1": float(other["pass@1"]),
                    "majority_answer": self._answer_text(orows, other["majority_class"]),
                    "majority_correct": bool(other["majority_correct"]),
                    "majority_failure": bool(other["majority_failure"]),
                }
            )
        rank = {c: i for i, c in enumerate(self.checkpoints)}
        others.sort(key=lambda o: rank.get(o["checkpoint"], 0))
        siblings = [
            {
                "trace_id": self.trace_ids[int(r)],
                "sample_idx": None
                if math.isnan(self.sample_idx[int(r)])
                else int(self.sample_idx[int(r)]),
                "outcome": self.outcome.name(int(r)),
            }
            for r in rows[:_MAX_SIBLINGS]
        ]
        out: dict[str, Any] = {
            "item": self._item(row, annotator),
            "problem": trace.problem,
            "gold_answer": trace.gold_answer,
            "steps": steps,
            "finish_reason": trace.finish_reason,
            "majority_answer": self._answer_text(rows, stat["majority_class"]),
            "majority_correct": bool(stat["majority_correct"]),
            "majority_tied": bool(stat["majority_tied"]),
            "answer_distribution": distribution,
            "other_checkpoints": others,
            "siblings": siblings,
            "judge_hidden": hidden,
            "judge_label": None,
            "human": mine,
            "blind": self.blind,
        }
        if hidden:
            out["item"].pop("judge", None)
        if label is not None:
            out["judge_label"] = {
                "judge": label.judge,
                "status": str(label.status),
                "error_type": label.error_type,
                "first_error_step": label.first_error_step,
                "evidence": label.evidence,
                "evidence_verified": label.evidence_verified,
                "explanation": label.explanation,
                "confidence": label.confidence,
                "evidence_span": _find(steps, label.first_error_step, label.evidence),
            }
        return out

    # --- people's labels ------------------------------------------------------------------

    def add_label(self, body: Any, default_annotator: str | None) -> dict[str, Any]:
        """Validate and store one label (BadRequest, nothing written, when it is wrong)."""
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        allowed = {"trace_id", "error_type", "first_error_step", "annotator", "note"}
        unknown = sorted(set(body) - allowed)
        if unknown:
            raise BadRequest(f"unknown field(s): {', '.join(unknown)}")
        trace_id = body.get("trace_id")
        if not isinstance(trace_id, str) or trace_id not in self.row_of:
            raise BadRequest("unknown trace_id")
        annotator = body.get("annotator") or default_annotator
        if annotator is None:
            raise BadRequest("no annotator: give one (or start the server with --annotator)")
        try:
            check_annotator(annotator)
        except OptionError as exc:
            raise BadRequest(str(exc)) from None
        choice = body.get("error_type")
        keys = list(self.taxonomy.keys)
        if not isinstance(choice, str) or choice not in [*keys, NO_ERROR_CHOICE, CANT_TELL]:
            raise BadRequest(
                "error_type must be one of the taxonomy's keys, "
                f"{NO_ERROR_CHOICE!r} or {CANT_TELL!r}: {', '.join(keys)}"
            )
        step = body.get("first_error_step")
        note = body.get("note")
        if note is not None and (not isinstance(note, str) or len(note) > _MAX_NOTE):
            raise BadRequest(f"note must be text of at most {_MAX_NOTE} characters")
        row = self.row_of[trace_id]
        if step is not None:
            if choice in (NO_ERROR_CHOICE, CANT_TELL):
                raise BadRequest(f"first_error_step must be null with {choice!r}")
            n_steps = len(split_steps(self.trace(row)))
            if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < n_steps:
                raise BadRequest(
                    f"first_error_step must be a step index from 0 to {n_steps - 1}, or null"
                )
        verdict = "error" if choice in keys else choice
        queue = {q["trace_id"]: q for q in (self._queue or [])}
        label = ReviewLabel(
            trace_id=trace_id,
            annotator=annotator,
            error_type=choice if verdict == "error" else None,
            first_error_step=step,
            has_error={"error": True, NO_ERROR_CHOICE: False}.get(verdict),
            verdict=verdict,
            note=note or None,
            blind=self.blind,
            judge=self.judge_id,
            weight=float(queue[trace_id]["weight"]) if trace_id in queue else 1.0,
        )
        self.writer.append(label)
        record = label.model_dump(mode="json")
        with self._lock:
            self.human.add(record)
            self._summary = None  # the corrected distributions change
        return record

    def human_labels(self) -> list[HumanLabel]:
        """People's labels of this run (``RUN_DIR/human``) and of ``--human`` files, in the
        order written (a later label of the same trace by the same person wins)."""
        labels = list(self.extra_human)
        directory = self.run_dir / HUMAN_DIR
        if directory.is_dir():
            for path in sorted(directory.glob("*.jsonl")):
                labels.extend(read_human_labels(path, keys=self.taxonomy.keys))
        return labels

    # --- the summary and the queue ----------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """What every page needs: counts, filter choices, the taxonomy (cheap)."""
        return {
            "n_traces": self.n,
            "n_labels": len(self.label_rows),
            "n_human": len(self.human.current),
            "blind": self.blind,
            "judge": self.judge_id,
            "checkpoints": self.checkpoints,
            "datasets": sorted(self.dataset.names),
            "outcomes": sorted(self.outcome.names),
            "statuses": self.status.names,
            "taxonomy": [
                {"key": c.key, "name": c.name or c.key, "definition": c.definition}
                for c in self.taxonomy.categories
            ],
        }

    def distributions(self) -> dict[str, Any]:
        """The per-checkpoint error distributions with their intervals (raw, and corrected
        with people's labels), computed when asked for after a change (a bootstrap: seconds
        on 10^6 traces), never on a trace page."""
        if self.blind:
            return {"distributions": [], "n_human": 0}
        with self._lock:
            if self._summary is not None:
                return self._summary
        human = self.human_labels()
        dists: list[ErrorDistribution] = error_distributions(
            self.run.table,
            self.label_rows,
            list(self.taxonomy.keys),
            human=human or None,
            seed=self.seed,
            pool_datasets=True,
            # While people label, one confusion over all their labels corrects from the first
            # label on; ppi (summary's default) needs 10 per checkpoint. Each distribution
            # says which estimator made it (``estimator``).
            estimator="pooled",
        )
        rank = {c: i for i, c in enumerate(self.checkpoints)}
        dists.sort(key=lambda d: rank.get(d.checkpoint, 0))
        out = {
            "distributions": [d.model_dump(mode="json") for d in dists],
            "n_human": len(human),
        }
        with self._lock:
            self._summary = out
        return out

    def queue_items(self, annotator: str | None) -> list[dict[str, Any]]:
        """The queue's traces as list items, with their stratum and weight."""
        return [{**self._item(self.row_of[q["trace_id"]], annotator), **q} for q in self.queue()]

    def queue(self) -> list[dict[str, Any]]:
        """The stratified sample ``misstep sample`` draws with the same n, strata and seed."""
        with self._lock:
            if self._queue is not None:
                return self._queue
        stored = {
            t: StoredLabel(
                trace_id=t, judge=self.judge_id or "", status=r.status, error_type=r.error_type
            )
            for t, r in self.label_rows.items()
            if r.status == LabelStatus.OK and t in self.row_of
        }
        # Only trace_id, checkpoint and dataset choose the sample; the text is not needed.
        traces = [
            Trace(
                trace_id=t,
                problem_id=str(self.problem.name(self.row_of[t])),
                response=" ",
                checkpoint=str(self.checkpoint.name(self.row_of[t])),
                dataset=str(self.dataset.name(self.row_of[t])),
            )
            for t in stored
        ]
        rows = (
            stratified_sample(
                traces, stored, n=self.queue_n, stratify=self.queue_stratify, seed=self.seed
            )
            if stored
            else []
        )
        queue = [{"trace_id": r.trace_id, "stratum": r.stratum, "weight": r.weight} for r in rows]
        with self._lock:
            self._queue = queue
        return queue


def _missing(value: object) -> bool:
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))  # type: ignore[call-overload]


def _text(value: object) -> str | None:
    return None if _missing(value) else str(value)


def _find(steps: list[str], step: int | None, evidence: str | None) -> dict[str, int] | None:
    """Where the judge's quote sits: ``{"step", "start", "end"}`` in the blamed step, else in
    the first step holding it; None when it is not found verbatim."""
    if not evidence or not evidence.strip():
        return None
    quote = evidence.strip()
    order = ([step] if step is not None and 0 <= step < len(steps) else []) + list(
        range(len(steps))
    )
    for i in order:
        start = steps[i].find(quote)
        if start >= 0:
            return {"step": i, "start": start, "end": start + len(quote)}
    return None
