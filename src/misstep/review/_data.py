"""What the review app serves: the graded table, the judge's labels and people's labels held as
column arrays (filters are numpy masks over 10^6 rows), a trace's text read on demand, and
people's new labels validated and stored.

Memory grows with the number of traces (a few small columns and the trace id index) and with
the number of labels (status, type, confidence and the byte offset of each label's line),
never with the text of responses or judge explanations: those are read when a trace opens.
"""

from __future__ import annotations

import math
import mmap
import secrets
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson
import pandas as pd

from misstep.agreement import LabelledRun
from misstep.errors import LabelStoreError, OptionError
from misstep.labels import (
    ADJUDICATOR,
    CANT_TELL,
    NO_ERROR_CHOICE,
    HumanLabel,
    HumanLabelWriter,
    LabelStatus,
    Reveal,
    RevealIndex,
    StoredLabel,
    check_annotator,
    gather_human_files,
    labels_path,
    read_human_labels,
    utc_now,
)
from misstep.metrics import order_checkpoints, problem_stats
from misstep.prompts import split_steps
from misstep.review._people import HumanState
from misstep.review._queue import QueueItem, secret_order, stratified_queue, task_queue
from misstep.review._texts import TraceTexts
from misstep.rollouts import Trace

__all__ = ["MAX_LIMIT", "BadRequest", "ReviewData", "TraceFilter"]

MAX_LIMIT = 500
"""Most items one page of ``/api/traces`` may hold."""
_UNLABELLED = "unlabelled"
_MAX_NOTE = 4000
_MAX_SIBLINGS = 200
_METHOD = "misstep review"
"""The ``mapping_method`` of the labels given here."""


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
    todo: bool = False
    """Only traces the annotator asking has not labelled yet."""
    q: str | None = None
    """Text the trace's input record must hold (case-sensitive)."""
    sort: str | None = None
    """A key of ``_SORT_KEYS``, ``-`` before it for descending; None: checkpoint order."""

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
        sort = query.get("sort") or None
        if sort is not None and sort.removeprefix("-") not in _SORT_KEYS:
            raise BadRequest(
                "sort must be one of " + ", ".join(_SORT_KEYS) + " (- first: descending)"
            )
        q = query.get("q") or None
        if q is not None and (len(q) > 200 or "\n" in q):
            raise BadRequest("q must be one line of at most 200 characters")
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
            todo=query.get("todo") == "1",
            q=q,
            sort=sort,
        )

    @property
    def uses_judge(self) -> bool:
        """Whether the filter reveals the judge's labels (refused with ``--blind``)."""
        return (
            any(
                v is not None
                for v in (self.error_type, self.status, self.min_confidence, self.max_confidence)
            )
            or (self.sort or "").removeprefix("-") == "confidence"
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


class ReviewData:
    """Everything the review server reads and writes, behind thread-safe methods."""

    def __init__(
        self,
        labelled: LabelledRun,
        texts: TraceTexts,
        *,
        judge_id: str | None = None,
        blind: bool = False,
        queue_n: int = 200,
        queue_stratify: Sequence[str] = ("checkpoint", "error_type"),
        task: Path | None = None,
        adjudicate: bool = False,
        with_judge: bool = False,
        hide_names: bool = False,
        seed: int = 0,
        order_key: bytes | None = None,
        on_stage: Callable[[str], None] | None = None,
    ) -> None:
        """``seed`` draws the queue's sample (its membership is reproducible, as ``misstep
        sample`` draws it); ``order_key``, the secret that orders it in blind mode (None: a
        fresh random key, so two servers never serve one order)."""
        stage = on_stage or (lambda _name: None)
        run = labelled.run
        if run is None:
            raise LabelStoreError(path=labelled.labels_path, reason="loaded without its traces")
        self.labelled = labelled
        self.run = run
        self.taxonomy = labelled.taxonomy
        self.blind = blind
        self.adjudicate_mode = adjudicate
        self.with_judge = with_judge
        self.hide_names = hide_names
        self.texts = texts
        self.labels_file = labels_path(labelled.labels_path)
        self.run_dir = self.labels_file.parent
        self.writer = HumanLabelWriter(self.run_dir)
        self.reveals = RevealIndex(self.run_dir)
        """Who was shown which judge label, read from the run directory whenever it counts
        (several servers on one run agree)."""
        self.seed = seed
        table = run.table
        self.n = len(table)
        stage("indexing the table")
        self._index_table(table)
        stage("per-problem vote statistics")
        self._index_groups(table)
        stage("reading the judge's labels")
        self.label_rows = labelled.labels
        self._index_labels(judge_id)
        stage("reading people's labels")
        self.writer.repair()
        self.human = HumanState.load(self.run_dir)
        self._lock = threading.Lock()
        self._summary: dict[str, Any] | None = None
        self._sorts: dict[str, npt.NDArray[np.int64]] = {}
        self._searches: dict[str, npt.NDArray[np.bool_]] = {}
        # The queue and its weights are fixed here, once: a label's weight never depends on
        # who asked for what first.
        where = {
            t: (
                str(self.problem.name(r)),
                str(self.checkpoint.name(r)),
                str(self.dataset.name(r)),
            )
            for t, r in ((t, self.row_of[t]) for t in self.label_rows if t in self.row_of)
        }
        items = (
            task_queue(task, self.row_of)
            if task is not None
            else stratified_queue(
                self.label_rows,
                where,
                n=queue_n,
                stratify=queue_stratify,
                seed=seed,
                inclusion=labelled.inclusion,
            )
        )
        self.queue_source = f"task file {task.name}" if task is not None else "stratified draw"
        # Blind: ordered by a keyed hash with a secret of this server, never by the public
        # seed (un-shuffling would give back the sample's order, by the judge's strata).
        key = order_key if order_key is not None else secrets.token_bytes(32)
        self.queue: list[QueueItem] = secret_order(items, key) if blind else items
        self.weights = {q.trace_id: q.weight for q in self.queue}

    # --- loading ------------------------------------------------------------------------

    def _index_table(self, table: pd.DataFrame) -> None:
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
        self.ck_rank = np.array([rank[c] for c in self.checkpoint.names], dtype=np.int32)
        self.order = np.argsort(self.ck_rank[self.checkpoint.codes], kind="stable").astype(np.int64)

    def _index_groups(self, table: pd.DataFrame) -> None:
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

    def _index_labels(self, judge_id: str | None) -> None:
        """Per table row the judge label's status and type (from the ``LabelledRun``), and
        the confidence and byte offset of its current record in labels.jsonl (one pass; the
        record's text is read when a trace opens, so memory never grows with it)."""
        statuses = [s.value for s in LabelStatus]
        self.status = _Codes(np.full(self.n, len(statuses), dtype=np.int32), [*statuses])
        self.status.names.append(_UNLABELLED)
        self.etype = _Codes(np.full(self.n, -1, dtype=np.int32), list(self.taxonomy.keys))
        for trace_id, label in self.label_rows.items():
            row = self.row_of.get(trace_id)
            if row is None:
                continue
            self.status.codes[row] = statuses.index(str(label.status))
            if label.error_type is not None:
                self.etype.codes[row] = self.etype.code(str(label.error_type))
        self.confidence = np.full(self.n, np.nan, dtype=np.float32)
        self.label_offset = np.full(self.n, -1, dtype=np.int64)
        judges: set[str] = set()
        offset = 0
        with open(self.labels_file, "rb") as fh:
            for raw in fh:
                here, offset = offset, offset + len(raw)
                try:
                    record = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue  # blank or a cut last line: the label reader has judged the file
                judge = str(record.get("judge"))
                if judge_id is not None and judge != judge_id:
                    continue
                judges.add(judge)
                row = self.row_of.get(str(record.get("trace_id")))
                if row is None:
                    continue
                conf = record.get("confidence")
                self.confidence[row] = float(conf) if isinstance(conf, int | float) else np.nan
                self.label_offset[row] = here
        self.judge_id = judge_id or (next(iter(judges)) if len(judges) == 1 else None)

    # --- the list -------------------------------------------------------------------------

    def _mask(self, f: TraceFilter, annotator: str | None) -> npt.NDArray[np.bool_]:
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
        if f.todo:
            if annotator is None:
                raise BadRequest("todo needs an annotator: whose labels?")
            with self._lock:  # the person's writes add to the set from other threads
                mine = list(self.human.done.get(annotator, ()))
            done = [self.row_of[t] for t in mine if t in self.row_of]
            mask[np.array(done, dtype=np.int64)] = False
        if f.q:
            mask &= self._search(f.q)
        return mask

    def _search(self, text: str) -> npt.NDArray[np.bool_]:
        """Rows whose input record holds ``text`` as written (case-sensitive, in the JSON
        text of the record: problem, response, answers, ids), by one scan of the text file
        (about a second per GB; the last few searches are kept)."""
        with self._lock:
            found = self._searches.get(text)
        if found is not None:
            return found
        needle = orjson.dumps(text)[1:-1]
        offsets = self.texts.offsets
        order = np.argsort(offsets, kind="stable")
        starts = offsets[order]
        hits = np.zeros(self.n, dtype=bool)
        with (
            open(self.texts.path, "rb") as fh,
            mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm,
        ):
            pos = mm.find(needle)
            while pos >= 0:
                i = int(np.searchsorted(starts, pos, side="right")) - 1
                if i >= 0 and starts[i] >= 0:
                    hits[order[i]] = True
                line_end = mm.find(b"\n", pos)
                if line_end < 0:
                    break
                pos = mm.find(needle, line_end)
        with self._lock:
            if len(self._searches) >= 8:
                self._searches.pop(next(iter(self._searches)))
            self._searches[text] = hits
        return hits

    def _sorted(self, key: str) -> npt.NDArray[np.int64]:
        """Every row in the order of ``key`` (then the default order); computed once."""
        with self._lock:
            found = self._sorts.get(key)
        if found is not None:
            return found
        name = key.removeprefix("-")
        column: npt.NDArray[Any]
        if name == "sample_idx":
            column = self.sample_idx
        elif name == "confidence":
            column = np.nan_to_num(self.confidence.astype(np.float64), nan=np.inf)
        else:
            codes = getattr(self, _SORTS[name])
            names = np.array([*codes.names, ""], dtype=object)
            rank = np.argsort(np.argsort(names, kind="stable"), kind="stable")
            column = rank[codes.codes]  # missing (-1) takes the last name's rank: ""
        column = column[self.order]
        order = self.order[np.argsort(-column if key.startswith("-") else column, kind="stable")]
        with self._lock:
            self._sorts[key] = order
        return order

    def is_quick(self, f: TraceFilter) -> bool:
        """Whether listing with ``f`` takes only masks over the columns (no text search, no
        sort computed for the first time)."""
        with self._lock:
            return f.q in (None, *self._searches) and f.sort in (None, *self._sorts)

    def list_traces(
        self, f: TraceFilter, *, offset: int, limit: int, annotator: str | None = None
    ) -> dict[str, Any]:
        """``{"total": N, "offset", "limit", "items": [...]}`` of the filtered list."""
        if self.blind and f.uses_judge:
            raise BadRequest("judge filters and sorting are hidden in --blind mode")
        if offset < 0 or not 1 <= limit <= MAX_LIMIT:
            raise BadRequest(f"offset must be >= 0 and limit between 1 and {MAX_LIMIT}")
        order = self._sorted(f.sort) if f.sort else self.order
        mask = self._mask(f, annotator)[order]
        hits = order[mask]
        page = hits[offset : offset + limit]
        return {
            "total": int(hits.size),
            "offset": offset,
            "limit": limit,
            "items": [self._item(int(r), annotator, self._revealed(annotator)) for r in page],
        }

    def _revealed(self, annotator: str | None) -> frozenset[str]:
        """The traces whose judge label ``annotator`` was shown (blind mode; read once per
        request from the run directory, so several servers on one run agree)."""
        return self.reveals.of(annotator) if self.blind else frozenset()

    def _shows_judge(
        self, annotator: str | None, trace_id: str, revealed: frozenset[str] | None = None
    ) -> bool:
        """Whether the judge's label of the trace may be served to ``annotator``: always
        without --blind, else only after a reveal recorded in the run directory (by any
        server on it; ``revealed``: the annotator's, read once for a page of items); never to
        a request without a name."""
        if not self.blind:
            return True
        return trace_id in (self._revealed(annotator) if revealed is None else revealed)

    def _item(
        self, row: int, annotator: str | None, revealed: frozenset[str] | None = None
    ) -> dict[str, Any]:
        sample = self.sample_idx[row]
        trace_id = self.trace_ids[row]
        item: dict[str, Any] = {
            "trace_id": trace_id,
            "checkpoint": self.checkpoint.name(row),
            "dataset": self.dataset.name(row),
            "problem_id": self.problem.name(row),
            "sample_idx": None if math.isnan(sample) else int(sample),
            "answer": _text(self.answer.iat[row]),
            "outcome": self.outcome.name(row),
            "correct": bool(self.correct[row]),
            "majority_failure": bool(self.majority_failure[row]),
        }
        if self._shows_judge(annotator, trace_id, revealed):
            item["judge"] = self._judge_column(row)
        if annotator is not None:
            item["human"] = self.human.current.get((annotator, trace_id))
        return item

    def _judge_column(self, row: int) -> dict[str, Any]:
        conf = float(self.confidence[row])
        return {
            "status": self.status.name(row),
            "error_type": self.etype.name(row),
            "confidence": None if math.isnan(conf) else round(conf, 4),
        }

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

    def _group_view(self, row: int) -> dict[str, Any]:
        """The trace's problem at its checkpoint: answers, majority, the other checkpoints'
        majority answers, the sibling samples."""
        g = int(self.group[row])
        rows = self._group_rows[self._group_starts[g] : self._group_starts[g + 1]]
        stat = self.stats.iloc[g]
        counts: Counter[object] = Counter()
        correct_of: dict[object, bool] = {}
        for r in rows:
            cls = self._class(int(r))
            if cls is None:
                continue
            counts[cls] += 1
            correct_of[cls] = bool(self.correct[int(r)])
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
        return {
            "majority_answer": self._answer_text(rows, stat["majority_class"]),
            "majority_correct": bool(stat["majority_correct"]),
            "majority_tied": bool(stat["majority_tied"]),
            "answer_distribution": [
                {"answer": self._answer_text(rows, cls), "count": n, "correct": correct_of[cls]}
                for cls, n in counts.most_common()
            ],
            "other_checkpoints": others,
            "siblings": [
                {
                    "trace_id": self.trace_ids[int(r)],
                    "sample_idx": None
                    if math.isnan(self.sample_idx[int(r)])
                    else int(self.sample_idx[int(r)]),
                    "outcome": self.outcome.name(int(r)),
                }
                for r in rows[:_MAX_SIBLINGS]
            ],
        }

    def detail(self, trace_id: str, annotator: str | None = None) -> dict[str, Any]:
        """The trace with its steps, the judge's label (in blind mode only after a recorded
        reveal to this annotator), and its problem's answers at this checkpoint and the other
        checkpoints' majority answers."""
        row = self.row(trace_id)
        trace = self.trace(row)
        steps = split_steps(trace)
        mine = self.human.current.get((annotator, trace_id)) if annotator else None
        hidden = not self._shows_judge(annotator, trace_id)
        label = None if hidden else self.judge_label(row)
        out: dict[str, Any] = {
            "item": self._item(row, annotator),
            "problem": trace.problem,
            "gold_answer": trace.gold_answer,
            "steps": steps,
            "finish_reason": trace.finish_reason,
            **self._group_view(row),
            "judge_hidden": hidden,
            "can_reveal": hidden and mine is not None,
            "judge_label": None,
            "human": mine,
            "blind": self.blind,
            "in_queue": trace_id in self.weights,
        }
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

    def _checked(self, body: Any, annotator: str | None) -> dict[str, Any]:
        """A label request's fields, validated (BadRequest, nothing written, when wrong).
        ``annotator`` is whose label it is, as the server decided (from the token, or the
        name a shared token's request gives); a body's own ``annotator`` must agree."""
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        allowed = {"trace_id", "error_type", "first_error_step", "annotator", "note"}
        unknown = sorted(set(body) - allowed)
        if unknown:
            raise BadRequest(f"unknown field(s): {', '.join(unknown)}")
        trace_id = body.get("trace_id")
        if not isinstance(trace_id, str) or trace_id not in self.row_of:
            raise BadRequest("unknown trace_id")
        if body.get("annotator") not in (None, "", annotator):
            raise BadRequest("the body's annotator is not the one this request labels as")
        if annotator is None:
            raise BadRequest("no annotator: give your name first (or start with --annotator)")
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
        if step is not None:
            if choice in (NO_ERROR_CHOICE, CANT_TELL):
                raise BadRequest(f"first_error_step must be null with {choice!r}")
            n_steps = len(split_steps(self.trace(self.row_of[trace_id])))
            if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < n_steps:
                raise BadRequest(
                    f"first_error_step must be a step index from 0 to {n_steps - 1}, or null"
                )
        verdict = "error" if choice in keys else choice
        return {
            "trace_id": trace_id,
            "annotator": annotator,
            "error_type": choice if verdict == "error" else None,
            "first_error_step": step,
            "has_error": {"error": True, NO_ERROR_CHOICE: False}.get(verdict),
            "verdict": verdict,
            "note": note or None,
            "judge": self.judge_id,
        }

    def _store(self, fields: dict[str, Any], **more: Any) -> dict[str, Any]:
        """Store a person's label (``fields`` from ``_checked``) and answer it as stored."""
        label = HumanLabel(**fields, **more, mapping_method=_METHOD, created_at=utc_now())
        self.writer.append(label)
        with self._lock:
            self.human.add(label)
            self._summary = None  # the corrected distributions change
        return label.model_dump(mode="json", exclude_none=True)

    def add_label(self, body: Any, annotator: str | None) -> dict[str, Any]:
        """Validate and store one label of ``annotator``; its weight is the trace's in the
        queue's sample (1 outside it), ``blind`` whether the judge's label of the trace had
        not been revealed to this annotator (read from the run directory as the label is
        written, so a reveal through another server on the run counts).

        Answers the stored label, without its weight in blind mode: the weight is the inverse
        inclusion probability of the trace's stratum, which names the judge's type (posting
        "can't tell" everywhere and reading the weights told every type, issue 34, item 2)."""
        fields = self._checked(body, annotator)
        stored = self._store(
            fields,
            blind=self.blind and not self.reveals.has(fields["annotator"], fields["trace_id"]),
            weight=self.weights.get(fields["trace_id"], 1.0),
        )
        if self.blind:
            stored.pop("weight", None)
        return stored

    def reveal(self, body: Any, annotator: str | None) -> dict[str, Any]:
        """Show the judge's label of a trace to ``annotator`` once they have labelled it
        (blind mode), recording the reveal in the run directory first; answers the trace's
        detail."""
        if not isinstance(body, dict) or not isinstance(body.get("trace_id"), str):
            raise BadRequest("the body must be {trace_id, annotator}")
        trace_id = body["trace_id"]
        if body.get("annotator") not in (None, "", annotator):
            raise BadRequest("the body's annotator is not the one this request asks as")
        if trace_id not in self.row_of:
            raise BadRequest("unknown trace_id")
        if annotator is None or not self._has_labelled(annotator, trace_id):
            raise BadRequest("label the trace first: the judge is shown only after your answer")
        if self.blind and not self.reveals.has(annotator, trace_id):
            self.writer.append(Reveal(trace_id=trace_id, annotator=annotator, judge=self.judge_id))
        return self.detail(trace_id, annotator)

    def _has_labelled(self, annotator: str, trace_id: str) -> bool:
        """Whether ``annotator`` has a label of the trace: through this server, or in their
        file of the run directory (written by another server on the run)."""
        if (annotator, trace_id) in self.human.current:
            return True
        path = self.writer.path(annotator)
        if not path.is_file():
            return False
        return any(h.trace_id == trace_id for h in read_human_labels(path))

    def adjudicate(self, body: Any, annotator: str | None) -> dict[str, Any]:
        """Store ``annotator``'s decision, as adjudicator, on a trace people disagree on (role
        ``adjudicator``, with the weight of the trace's sample, or the mean of its labels').
        The server lets only an adjudicator's token call this."""
        if not self.adjudicate_mode:
            raise BadRequest("start the server with --adjudicate to adjudicate")
        fields = self._checked(body, annotator)
        labels = self.human.by_trace.get(fields["trace_id"], {})
        if len(labels) < 1:
            raise BadRequest("nobody has labelled this trace: nothing to adjudicate")
        weight = self.weights.get(fields["trace_id"])
        if weight is None:
            own = [self._label_weight(a, fields["trace_id"]) for a in labels]
            weight = sum(own) / len(own)
        return self._store(fields, role=ADJUDICATOR, blind=False, weight=weight)

    def _label_weight(self, annotator: str, trace_id: str) -> float:
        for label in self.human_labels():
            if label.annotator == annotator and label.trace_id == trace_id:
                return label.weight
        return 1.0

    def disagreements(self, adjudicator: str | None = None) -> dict[str, Any]:
        """The traces people disagree on (and with ``--with-judge`` those where a person and
        the judge disagree): each person's answer, step and note side by side (names as
        "person 1", ... with ``--hide-names``), the judge's when asked, the decision so far.
        The server lets only an adjudicator's token call this.

        Blind with ``--with-judge``, the list shows ``adjudicator`` the judge's answer of
        every trace people have labelled (a trace left out is one where the judge agrees with
        everyone): each is recorded as revealed to them first, so their own later labels of
        those traces are stored ``blind: false``. That needs their name."""
        if not self.adjudicate_mode:
            raise BadRequest("start the server with --adjudicate to list disagreements")
        judge = {
            t: (r.error_type or NO_ERROR_CHOICE)
            for t, r in self.label_rows.items()
            if r.status == LabelStatus.OK
        }
        with self._lock:  # people's writes add to the state from other threads
            pairs = self.human.disagreements(judge, with_judge=self.with_judge)
            labelled = list(self.human.by_trace)
        if self.blind and self.with_judge:
            self._reveal_all(adjudicator, labelled)
        items = []
        for trace_id, labels in pairs:
            row = self.row_of.get(trace_id)
            if row is None:
                continue
            people = [
                {
                    "annotator": f"person {i}" if self.hide_names else r["annotator"],
                    **{k: r.get(k) for k in ("verdict", "error_type", "first_error_step", "note")},
                }
                for i, r in enumerate(labels, start=1)
            ]
            item = {
                **self._item(row, None),
                "labels": people,
                "adjudicated": self.human.adjudicated.get(trace_id),
            }
            item.pop("judge", None)
            if self.with_judge:  # asked for by the adjudicator, blind or not (recorded above)
                item["judge"] = self._judge_column(row)
            items.append(item)
        done = sum(1 for i in items if i["adjudicated"] is not None)
        return {"total": len(items), "done": done, "items": items}

    def _reveal_all(self, adjudicator: str | None, trace_ids: Sequence[str]) -> None:
        """Record the judge's labels of ``trace_ids`` as shown to ``adjudicator`` (those not
        recorded yet), in one write, before they are served."""
        if adjudicator is None:
            raise BadRequest(
                "give your name first: in --blind mode the judge's answers shown here are "
                "recorded as revealed to you"
            )
        seen = self.reveals.of(adjudicator)
        new = [
            Reveal(trace_id=t, annotator=adjudicator, judge=self.judge_id)
            for t in trace_ids
            if t not in seen and t in self.row_of
        ]
        if new:
            self.writer.append_reveals(new)

    def human_labels(self) -> list[HumanLabel]:
        """People's labels of this run (``RUN_DIR/human``) and of ``--human`` files, in the
        order written (a later label of the same trace by the same person wins)."""
        files = gather_human_files(self.labelled.human_files, [self.run_dir])
        return [h for p in files for h in read_human_labels(p, keys=self.taxonomy.keys)]

    # --- the summary and the queue ----------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """What every page needs: counts, filter choices, the taxonomy (cheap)."""
        return {
            "n_traces": self.n,
            "n_labels": len(self.label_rows),
            # Traces people labelled (a trace two people labelled counts once), their labels
            # (one per person and trace) and the people.
            "n_human": len(self.human.by_trace),
            "n_human_labels": len(self.human.current),
            "n_annotators": len(self.human.done),
            "blind": self.blind,
            "adjudicate": self.adjudicate_mode,
            "with_judge": self.with_judge,
            "hide_names": self.hide_names,
            "judge": self.judge_id,
            "queue_source": self.queue_source,
            "queue_total": len(self.queue),
            "checkpoints": self.checkpoints,
            "datasets": sorted(self.dataset.names),
            "outcomes": sorted(self.outcome.names),
            "statuses": self.status.names,
            "sorts": [k for k in _SORT_KEYS if not (self.blind and k == "confidence")],
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
        # The one computation of error distributions, with the run's estimator (summary's
        # default, ppi, unless the run was loaded with another): the shares this page shows are
        # the ones summary, link and the report show for the same labels.
        dists = self.labelled.with_human(human).distributions(pool_datasets=True)
        rank = {c: i for i, c in enumerate(self.checkpoints)}
        out = {
            "distributions": [
                {**d.model_dump(mode="json"), "made_by": d.made_by}
                for d in sorted(dists, key=lambda d: rank.get(d.checkpoint, 0))
            ],
            "n_human": len(human),
        }
        with self._lock:
            self._summary = out
        return out

    def queue_page(self, annotator: str | None, *, todo: bool = False) -> dict[str, Any]:
        """The queue as list items with the annotator's progress: ``total``, ``done`` (of
        them labelled by ``annotator``) and the items (with ``todo`` only those not yet
        labelled by them; with a task that assigns traces, only ``annotator``'s). Strata and
        weights are left out in blind mode: a stratum names the judge's type, and its weight
        tells its size."""
        done_by = self.human.done.get(annotator or "", set())
        revealed = self._revealed(annotator)
        mine = [q for q in self.queue if q.for_(annotator)]  # a task's assignments
        items = []
        for q in mine:
            if todo and q.trace_id in done_by:
                continue
            item = self._item(self.row_of[q.trace_id], annotator, revealed)
            if not self.blind:
                item.update(stratum=q.stratum, weight=q.weight)
            items.append(item)
        done = sum(1 for q in mine if q.trace_id in done_by)
        return {"total": len(mine), "done": done, "items": items}

    def queue_ids(self) -> list[str]:
        """The queue's trace ids, in its order."""
        return [q.trace_id for q in self.queue]


_SORTS = {
    "checkpoint": "checkpoint",
    "dataset": "dataset",
    "problem_id": "problem",
    "outcome": "outcome",
}
_SORT_KEYS = ("checkpoint", "dataset", "problem_id", "outcome", "sample_idx", "confidence")


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
