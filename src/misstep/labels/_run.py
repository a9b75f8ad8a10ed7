"""A label run: the one owner of a run directory while labels are made into it.

Every way of labelling (``misstep label`` live, ``export-requests`` / ``ingest-replies``
through files, Ray) opens its run directory the same way, through :meth:`LabelRun.open`:

1. the input's SHA-256, and a run directory that holds labels of another input refused
   (:meth:`LabelRun.check_input`, before the judge is built: building one may probe a server);
2. the input's graded table (``load_graded``, cached), invalid rows to
   ``RUN_DIR/rejects.jsonl`` with ``skip_invalid``;
3. ``RUN_DIR/.lock`` (one writer at a time), and a directory whose labels another judge
   configuration made refused unless ``add_judge``;
4. the label budget (``per_checkpoint`` / ``pilot``: :func:`label_sample`);
5. one pass over ``labels.jsonl``: the current record per trace (status, judge, detail), and the
   cut or broken replies of this judge that a later round may retry;
6. the append-only store.

:meth:`LabelRun.todo` then says, per input trace, what the run does with it (judge it, write
its ``skipped`` record, or keep its current one), the same rule for every way; the ways turn
the traces to judge into records (:func:`record_of`, the one place a record is made) and hand
them to :meth:`LabelRun.append`.

Which traces get what:
- outcome ``wrong`` (and ``correct`` with ``include_correct``): judged;
- outcome ``truncated`` / ``no_answer``, and ``correct`` without ``include_correct``: a
  ``skipped`` record with ``error_type`` null and the outcome as ``reason``;
- left out of the label budget: a ``skipped`` record with reason ``not sampled`` (an ``ok``
  label of an earlier, larger run is kept);
- a trace whose current record is ``ok`` (or the same ``skipped`` one) under the same judge
  id: kept (resume).
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

import orjson
import pandas as pd
from pydantic import BaseModel

from misstep.errors import LabelStoreError, OptionError
from misstep.labels._budget import label_sample
from misstep.labels._lock import run_dir_lock
from misstep.labels._manifest import RunManifest, add_to_history, read_manifest, write_manifest
from misstep.labels._record import StoredLabel
from misstep.labels._rundir import RunDir
from misstep.labels._store import LabelStore, iter_label_lines
from misstep.labels._tail import repair_tail
from misstep.rollouts import (
    GradedRun,
    Outcome,
    RejectSink,
    Trace,
    input_digest,
    load_graded,
    read_traces,
)
from misstep.verdict import LABEL_FIELDS, LabelStatus, Verdict, evidence_in_text

__all__ = [
    "NOT_SAMPLED",
    "Action",
    "Current",
    "LabelRun",
    "RecordFile",
    "RunFields",
    "RunOptions",
    "Todo",
    "record_of",
    "skipped_record",
]

NOT_SAMPLED = "not sampled"
"""Reason of the skipped record of a trace left out of the label budget."""
RETRYABLE = ("truncated", "unparseable")
"""Statuses of a stored reply that a later round of the same judge may send again."""


class Current(NamedTuple):
    """The current record of a trace, as much of it as deciding what to do needs."""

    status: str
    judge: str
    detail: str | None
    """The error type of an ok record, the reason of another."""


class Action(StrEnum):
    """What a run does with one input trace."""

    JUDGE = "judge"
    """Ask the judge."""
    SKIP = "skip"
    """Not judged: write its ``skipped`` record (``Todo.write``) or keep the same one."""
    KEEP = "keep"
    """Its current record is ok under this judge: resume past it."""


class Todo(NamedTuple):
    """One input trace and what the run does with it."""

    trace: Trace
    answer: str | None
    """The trace's extracted final answer (from the graded table)."""
    action: Action
    reason: str | None = None
    """Of a skip: the outcome, or ``not sampled``."""
    write: bool = False
    """Of a skip: the current record differs, so a ``skipped`` one is written."""
    inclusion_prob: float | None = None
    """Of a trace to judge under a label budget: its inclusion probability."""


def skipped_record(trace: Trace, judge: str, reason: str, samples: int) -> StoredLabel:
    """The ``skipped`` record of a trace that is not judged (its outcome, or ``not sampled``)."""
    return StoredLabel(
        trace_id=trace.trace_id,
        judge=judge,
        status=LabelStatus.SKIPPED,
        reason=reason,
        samples=samples,
        checkpoint=trace.checkpoint,
        dataset=trace.dataset,
        problem_id=trace.problem_id,
    )


def _majority(results: Sequence[Verdict], order: Mapping[str, int]) -> tuple[Verdict, int]:
    """The result to store and how many samples agree with it: the majority ``error_type``
    among the ok samples, ties to the key first in the taxonomy's order, the lowest-numbered
    sample of that type."""
    ok = [r for r in results if r.status is LabelStatus.OK and r.label is not None]
    if not ok:
        return results[0], 0
    counts = Counter(str(getattr(r.label, "error_type", "")) for r in ok)
    best = min(counts, key=lambda key: (-counts[key], order.get(key, len(order)), key))
    chosen = next(r for r in ok if str(getattr(r.label, "error_type", "")) == best)
    return chosen, counts[best]


def _tokens(results: Sequence[Verdict]) -> tuple[int | None, int | None]:
    """Prompt and completion tokens of a trace's requests, from the servers' usage counts."""
    totals: list[int | None] = [None, None]
    for result in results:
        usage = result.usage
        if usage is None:
            continue
        for i, key in enumerate(("prompt_tokens", "completion_tokens")):
            value = usage.get(key)
            if isinstance(value, int):
                totals[i] = (totals[i] or 0) + value
    return totals[0], totals[1]


def record_of(
    trace: Trace,
    results: Sequence[Verdict],
    steps: list[str],
    *,
    judge: str,
    samples: int,
    order: Mapping[str, int],
    attempts: int,
    latency_ms: float = 0.0,
    trace_cut: bool = False,
    inclusion_prob: float | None = None,
) -> StoredLabel:
    """The stored record of one trace from its judge results (``Verdict``: one per sample,
    steps already checked): the majority, the fields of an ok label with its evidence verified
    against the trace, reasoning, tokens and agreement. The one place a record is made,
    whichever way the results came (live, batch files, Ray)."""
    chosen, agree = _majority(results, order)
    fields: dict[str, Any] = {}
    if chosen.status is LabelStatus.OK and chosen.label is not None:
        data = chosen.label.model_dump(mode="json")
        fields = {k: data.get(k) for k in LABEL_FIELDS}
        fields["evidence_verified"] = evidence_in_text(
            data.get("evidence"), trace.response, "\n".join(steps)
        )
    tokens = _tokens(results)
    tries = results[0].tries
    return StoredLabel(
        trace_id=trace.trace_id,
        judge=judge,
        status=chosen.status,
        attempts=attempts,
        latency_ms=round(latency_ms, 3),
        reason=chosen.reason,
        raw_reply=chosen.raw_reply if chosen.status is not LabelStatus.OK else None,
        problem=chosen.problem if chosen.status is LabelStatus.UNPARSEABLE else None,
        trace_cut=trace_cut,
        samples=samples,
        sample_agreement=(agree / len(results)) if len(results) > 1 else None,
        checkpoint=trace.checkpoint,
        dataset=trace.dataset,
        problem_id=trace.problem_id,
        reasoning=chosen.reasoning,
        inclusion_prob=inclusion_prob,
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
        tries=[t.as_dict() for t in tries] if tries else None,
        **fields,
    )


@dataclass(frozen=True)
class RunOptions:
    """How a label run reads its input and which traces it judges: built once (the CLI builds
    it from its options) and passed whole to every layer."""

    include_correct: bool = False
    """Correct traces are judged too (and count in the budget's strata)."""
    limit: int | None = None
    """Read only the first N input traces."""
    per_checkpoint: int | None = None
    """Label budget: judge N traces drawn at random per (checkpoint, dataset)."""
    pilot: int | None = None
    """Label budget: judge N traces in all, spread over the (checkpoint, dataset) strata."""
    input_format: str | None = None
    """How to read the input (None: inferred from the path)."""
    regrade: bool = False
    """Grade against the gold answer even where rows carry ``correct``."""
    skip_invalid: bool = False
    """Invalid input rows go to ``RUN_DIR/rejects.jsonl`` instead of stopping the run."""
    cache: bool = True
    """Read (and keep) the cached graded table."""
    add_judge: bool = False
    """Write into a run directory that holds another judge configuration's labels."""

    def __post_init__(self) -> None:
        if self.per_checkpoint is not None and self.pilot is not None:
            raise OptionError(
                option="pilot",
                value=self.pilot,
                allowed="a label budget per checkpoint or a pilot, not both (per_checkpoint is "
                f"{self.per_checkpoint})",
            )

    def recorded(self, *names: str) -> dict[str, Any]:
        """The named options, for a run manifest."""
        return {name: getattr(self, name) for name in names}


class RunFields(TypedDict, total=False):
    """:class:`RunOptions`' fields as keyword arguments (the entry points take them one by
    one or the whole ``RunOptions``)."""

    include_correct: bool
    limit: int | None
    per_checkpoint: int | None
    pilot: int | None
    input_format: str | None
    regrade: bool
    skip_invalid: bool
    cache: bool
    add_judge: bool


class _CountOnly(RejectSink):
    """The second pass over the input skips the rows the first pass already wrote out."""

    def write(self, *args: Any, **kwargs: Any) -> None:
        self.count += 1


class RecordFile:
    """An append-only record file of a run directory, open for appending under the
    directory's lock (``LabelRun.selections``)."""

    def __init__(self, fh: Any, path: Path) -> None:
        self._fh = fh
        self.path = path
        """The file."""
        self.written = 0
        """Records appended through this object."""

    def append(self, record: BaseModel) -> None:
        """One record as one JSON line, flushed at once (a kill loses no acknowledged one)."""
        self._fh.write(orjson.dumps(record.model_dump(mode="json")) + b"\n")
        self._fh.flush()
        self.written += 1


@dataclass(eq=False)
class LabelRun:
    """An open run directory (see the module docstring); made by :meth:`open` only."""

    traces_path: Path
    run_dir: Path
    judge_id: str
    digest: str
    """SHA-256 of the input."""
    graded: GradedRun
    options: RunOptions
    sample: dict[str, float] | None
    """Inclusion probability of each trace to judge under a label budget; None: all."""
    _rejects: RejectSink | None = field(repr=False)
    _store: LabelStore = field(repr=False)

    def __post_init__(self) -> None:
        self._index, self._retry = _read_state(RunDir(self.run_dir).labels, self.judge_id)

    @staticmethod
    def check_input(traces_path: Path, run_dir: Path) -> str:
        """The input's SHA-256; LabelStoreError when ``run_dir`` holds labels of another input
        (labelling this one into it would mix them)."""
        digest = input_digest(traces_path)
        existing = read_manifest(run_dir) if run_dir.is_dir() else None
        if existing is None or existing.input_sha256 in (None, digest):
            return digest
        made_from = existing.inputs[0].path if existing.inputs else "another input"
        raise LabelStoreError(
            path=run_dir,
            reason=f"this run directory holds labels of {made_from} (sha256 "
            f"{existing.input_sha256[:12]}), not of {traces_path} (sha256 {digest[:12]})",
            hint="label these traces into a new run directory (--out NEW_RUN_DIR)",
        )

    @staticmethod
    @contextlib.contextmanager
    def selections(run_dir: Path, manifest: RunManifest) -> Iterator[RecordFile]:
        """``RUN_DIR/selections.jsonl`` open for appending, as :meth:`open` opens
        ``labels.jsonl``: under ``RUN_DIR/.lock`` (one writer at a time), a last line cut by a
        kill repaired first, ``manifest`` recorded with the directory's earlier ones kept in its
        history, each record flushed as it is appended and the file synced when the block
        ends. Read what is there inside the block (the lock is held)."""
        with run_dir_lock(run_dir):
            path = RunDir(run_dir).selections
            repair_tail(path)
            write_manifest(run_dir, add_to_history(read_manifest(run_dir), manifest))
            with open(path, "ab") as fh:
                yield RecordFile(fh, path)
                os.fsync(fh.fileno())

    @classmethod
    @contextlib.contextmanager
    def open(
        cls,
        traces_path: Path,
        run_dir: Path,
        *,
        judge_id: str,
        digest: str,
        options: RunOptions,
        seed: int = 0,
    ) -> Iterator[LabelRun]:
        """The run directory, open for this judge until the block ends (steps 2-6 of the module
        docstring; ``digest`` from :meth:`check_input`; ``seed``: the label budget's draw, the
        judge's seed)."""
        with contextlib.ExitStack() as stack:
            rejects = None
            if options.skip_invalid:
                rejects = stack.enter_context(
                    contextlib.closing(RejectSink(RunDir(run_dir).rejects, source=traces_path))
                )
            graded = load_graded(
                traces_path,
                input_format=options.input_format,
                regrade=options.regrade,
                rejects=rejects,
                digest=digest,
                cache=options.cache,
            )
            stack.enter_context(run_dir_lock(run_dir))
            _check_one_judge(run_dir, judge_id, options.add_judge)
            sample = label_sample(
                graded.table,
                per_stratum=options.per_checkpoint,
                total=options.pilot,
                include_correct=options.include_correct,
                seed=seed,
            )
            store = stack.enter_context(LabelStore(run_dir))
            yield cls(
                traces_path=traces_path,
                run_dir=run_dir,
                judge_id=judge_id,
                digest=digest,
                graded=graded,
                options=options,
                sample=sample,
                _rejects=rejects,
                _store=store,
            )

    @property
    def rejected(self) -> int:
        """Invalid input rows written to ``rejects.jsonl`` (with ``skip_invalid``)."""
        return self._rejects.count if self._rejects is not None else 0

    @property
    def written(self) -> int:
        """Records appended by this run."""
        return self._store.written

    def current(self, trace_id: str) -> Current | None:
        """The current record of a trace (the last one appended wins)."""
        return self._index.get(trace_id)

    def is_ok(self, trace_id: str) -> bool:
        """The trace's current record is ok under this run's judge."""
        current = self._index.get(trace_id)
        return current is not None and current[:2] == ("ok", self.judge_id)

    def retry_of(self, trace_id: str) -> dict[str, Any] | None:
        """The current record of a trace when it is a cut or broken reply of this judge
        (``truncated`` / ``unparseable``) that a later round may send again."""
        return self._retry.get(trace_id)

    def append(self, record: StoredLabel) -> None:
        """Store a record (flushed at once; it becomes the trace's current one)."""
        self._store.append(record)
        _note(self._index, self._retry, self.judge_id, record.model_dump(mode="json"))

    def record_manifest(self, manifest: RunManifest) -> None:
        """Write this run's manifest, the directory's earlier ones kept in its history."""
        write_manifest(self.run_dir, add_to_history(read_manifest(self.run_dir), manifest))

    def traces(self) -> Iterator[tuple[Trace, Outcome, str | None]]:
        """The input's traces again, each beside its graded outcome and answer: the reader
        yields the valid rows in the same order both times, so row i of the table is the i-th
        trace."""
        table = self.graded.table
        ids = table["trace_id"].to_numpy(dtype=object)
        outcomes = table["outcome"].to_numpy(dtype=object)
        answers = table["answer"].astype(object).to_numpy()
        sink = _CountOnly(os.devnull) if self.options.skip_invalid else None
        reader = read_traces(self.traces_path, input_format=self.options.input_format, rejects=sink)
        for i, trace in enumerate(reader):
            if i >= len(ids) or ids[i] != trace.trace_id:
                raise LabelStoreError(
                    path=self.traces_path, reason="the input changed while it was being labelled"
                )
            answer = answers[i]
            yield trace, Outcome(outcomes[i]), None if answer is None or answer is pd.NA else answer

    def todo(self) -> Iterator[Todo]:
        """What to do with each input trace, the first ``options.limit`` ones (the module
        docstring)."""
        limit = self.options.limit
        for n, (trace, outcome, answer) in enumerate(self.traces()):
            if limit is not None and n >= limit:
                return
            yield self._decide(trace, outcome, answer)

    def _decide(self, trace: Trace, outcome: Outcome, answer: str | None) -> Todo:
        current = self._index.get(trace.trace_id)
        send = outcome is Outcome.WRONG or (
            self.options.include_correct and outcome is Outcome.CORRECT
        )
        already_ok = self.is_ok(trace.trace_id)
        reason = outcome.value
        sampled = self.sample is None or trace.trace_id in self.sample
        if send and not sampled and not already_ok:
            send, reason = False, NOT_SAMPLED
        if not send:
            write = current is None or current[:3] != ("skipped", self.judge_id, reason)
            return Todo(trace, answer, Action.SKIP, reason=reason, write=write)
        if already_ok:
            return Todo(trace, answer, Action.KEEP)
        prob = None if self.sample is None else self.sample.get(trace.trace_id)
        return Todo(trace, answer, Action.JUDGE, inclusion_prob=prob)


def _read_state(path: Path, judge_id: str) -> tuple[dict[str, Current], dict[str, dict[str, Any]]]:
    """One pass over ``labels.jsonl``: the current record per trace, and the current records
    of this judge that are cut or broken replies (whole: their tries and raw reply)."""
    index: dict[str, Current] = {}
    retry: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return index, retry
    for _, rec in iter_label_lines(path):
        _note(index, retry, judge_id, rec)
    return index, retry


def _note(
    index: dict[str, Current],
    retry: dict[str, dict[str, Any]],
    judge_id: str,
    rec: Mapping[str, Any],
) -> None:
    """Take a record as its trace's current one."""
    trace_id, status = str(rec.get("trace_id")), str(rec.get("status"))
    detail = rec.get("error_type") if status == "ok" else rec.get("reason")
    index[trace_id] = Current(status, str(rec.get("judge")), detail)
    if rec.get("judge") == judge_id and status in RETRYABLE:
        retry[trace_id] = dict(rec)
    else:
        retry.pop(trace_id, None)


def _check_one_judge(run_dir: Path, judge_id: str, add_judge: bool) -> None:
    """A run directory holds one judge configuration unless the user asks for another."""
    existing = read_manifest(run_dir) if run_dir.is_dir() else None
    if existing is None or not existing.judge or existing.judge == judge_id or add_judge:
        return
    raise LabelStoreError(
        path=run_dir,
        reason=f"its labels were made by judge {existing.judge}; this configuration is "
        f"{judge_id} (another model, prompt, schema, sampling or trace budget)",
        hint="label into a new run directory, or pass --add-judge to put these labels beside "
        "the others (analyses then choose one with --judge-id)",
    )
