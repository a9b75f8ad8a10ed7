"""``misstep label``: stream traces, grade them, ask the judge, append labels, resume.

Memory stays flat in the number of traces: traces are read one at a time, at most
``4 * concurrency`` are in flight, and labels go to disk as they arrive. What resuming needs
is one small tuple per already-labelled trace (status, judge id, error type or reason).

Which traces get what:
- outcome ``wrong`` (and ``correct`` with ``include_correct``): sent to the judge;
- outcome ``truncated`` / ``no_answer``, and ``correct`` without ``include_correct``: a
  ``skipped`` record with ``error_type`` null and the outcome as ``reason``, no call;
- a trace whose current record is ``ok`` under the same judge id: left alone (resume);
- an invalid input row with ``skip_invalid``: a line of ``RUN_DIR/rejects.jsonl``.
So every input trace ends as a label record or a reject.

Judge self-consistency (``samples`` > 1, which needs a temperature above 0): a backend that can
(the server backend) draws the samples in one request (``n``, sharing the prefill), others are
asked ``samples`` times with seeds ``request_seed(seed, trace_id, i)``; the stored label is the
majority ``error_type`` among the ok samples. Ties go to the key that comes first in the
taxonomy's order; the evidence, step and explanation are those of the lowest-numbered sample
with that type. ``sample_agreement`` is the majority count over ``samples`` (failed samples
count as disagreeing).

Every run takes ``RUN_DIR/.lock`` (one writer at a time), refuses a run directory whose labels
another judge configuration made (unless ``add_judge``), and adds its manifest to the run
directory's history (nothing overwritten).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

import pandas as pd
from pydantic import BaseModel, Field

from misstep.errors import JudgeUnavailableError, LabelStoreError, OptionError
from misstep.judge import (
    Judge,
    JudgeRequest,
    JudgeResult,
    bounded_schema,
    create_judge,
    evidence_in_text,
    label_json_schema,
    request_seed,
)
from misstep.labels import (
    InputFile,
    LabelStatus,
    LabelStore,
    RunManifest,
    StoredLabel,
    add_to_history,
    iter_label_lines,
    read_manifest,
    run_dir_lock,
    write_manifest,
)
from misstep.metrics import order_checkpoints
from misstep.pipelines._budget import label_sample
from misstep.prompts import prompt_hash, render_judge_prompt
from misstep.rollouts import (
    Outcome,
    RejectSink,
    Trace,
    input_digest,
    load_graded,
    read_traces,
)

if TYPE_CHECKING:
    from misstep.judge import JudgeConfig
    from misstep.taxonomy import Taxonomy

__all__ = ["LabelProgress", "LabelRunSummary", "arun_labeling", "run_labeling"]

_T = TypeVar("_T")
REJECTS_FILE = "rejects.jsonl"
NOT_SAMPLED = "not sampled"
"""Reason of the skipped record of a trace left out of the label budget."""
STOP_AFTER_SERVER_DOWN = 3
"""Traces in a row whose requests all found the server unreachable (or refusing the key)
after which labelling stops with ``JudgeUnavailableError`` (exit status 3)."""


@dataclass
class LabelProgress:
    """Running counts handed to the progress callback after each trace."""

    read: int = 0
    """Input traces read so far (within --limit)."""
    done: int = 0
    """Traces finished this run: a record written, or left alone as already labelled."""
    resumed: int = 0
    """Traces whose current record was already ok under this judge."""
    calls: int = 0
    """Requests made to the judge."""
    rejected: int = 0
    """Invalid input rows written to rejects.jsonl."""
    status_counts: Counter[str] = field(default_factory=Counter)
    """Records written this run, per status."""
    notices: list[str] = field(default_factory=list)
    """Messages for the user that the progress callback should print (then clear)."""
    prompt_tokens: int = 0
    """Prompt tokens counted by the server this run."""
    completion_tokens: int = 0
    """Completion tokens counted by the server this run."""


class LabelRunSummary(BaseModel):
    """What a labelling run did, and the state of its input's labels at the end."""

    run_dir: str
    """The run directory."""
    judge: str
    """Judge id of this run's records."""
    traces: int
    """Input traces read (within --limit), rejects excluded."""
    written: int
    """Records appended this run."""
    resumed: int
    """Traces left alone because their current record was already ok under this judge."""
    rejected: int
    """Invalid input rows written to rejects.jsonl (with --skip-invalid)."""
    calls: int
    """Requests made to the judge (retries and re-asks included)."""
    seconds: float
    """Wall time of the run."""
    status_counts: dict[str, int] = Field(default_factory=dict)
    """Current status of every input trace, after the run."""
    written_counts: dict[str, int] = Field(default_factory=dict)
    """Records appended this run, per status."""
    prompt_tokens: int = 0
    """Prompt tokens the server counted for this run's requests."""
    completion_tokens: int = 0
    """Completion tokens the server counted for this run's requests."""
    error_types_by_checkpoint: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Per checkpoint (in ``metrics.order_checkpoints`` order), the error types of the input
    traces whose current label is ok."""


class _Current(NamedTuple):
    status: str
    judge: str
    detail: str | None  # error_type of an ok record, reason of a skipped one


def _load_index(path: Path) -> dict[str, _Current]:
    if not path.exists():
        return {}
    index: dict[str, _Current] = {}
    for _, rec in iter_label_lines(path):
        detail = rec.get("error_type") if rec.get("status") == "ok" else rec.get("reason")
        index[str(rec.get("trace_id"))] = _Current(
            str(rec.get("status")), str(rec.get("judge")), detail
        )
    return index


def _pkg_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _public_url(url: str | None) -> str | None:
    # A URL may carry user:password@; the manifest must never hold a credential.
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class _Identified(Protocol):
    """What a manifest reads from a judge (a live backend, or a batch of request files)."""

    @property
    def judge_id(self) -> str: ...


def _manifest(
    traces_path: Path,
    config: JudgeConfig,
    taxonomy: Taxonomy,
    judge: _Identified,
    options: dict[str, Any],
    input_sha256: str,
) -> RunManifest:
    judge_config = config.model_dump(mode="json")
    if "base_url" in judge_config:
        judge_config["base_url"] = _public_url(judge_config["base_url"])
    judge_config["extra_base_urls"] = [
        _public_url(url) for url in judge_config.get("extra_base_urls") or []
    ]
    inputs = [InputFile.of(traces_path)] if traces_path.exists() else []
    return RunManifest(
        inputs=inputs,
        input_sha256=input_sha256,
        judge_config=judge_config,
        judge=judge.judge_id,
        taxonomy_id=str(taxonomy.id),
        taxonomy_version=str(taxonomy.version),
        taxonomy_hash=taxonomy.hash,
        taxonomy_path=taxonomy.source,
        prompt_hash=prompt_hash(),
        seed=config.seed,
        server_model=getattr(judge, "server_model", None),
        versions={name: _pkg_version(name) for name in ("misstep", "openai", "vllm", "ray")},
        options=options,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        server=dict(getattr(judge, "server_info", None) or {}),
    )


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


def _check_same_input(run_dir: Path, traces_path: Path, digest: str) -> None:
    """A run directory belongs to one input: labelling another one into it would mix them."""
    existing = read_manifest(run_dir) if run_dir.is_dir() else None
    if existing is None or existing.input_sha256 in (None, digest):
        return
    made_from = existing.inputs[0].path if existing.inputs else "another input"
    raise LabelStoreError(
        path=run_dir,
        reason=f"this run directory holds labels of {made_from} (sha256 "
        f"{existing.input_sha256[:12]}), not of {traces_path} (sha256 {digest[:12]})",
        hint="label these traces into a new run directory (--out NEW_RUN_DIR)",
    )


def _majority(results: list[JudgeResult], order: dict[str, int]) -> tuple[JudgeResult, int]:
    """The result to store and how many samples agree with it (see the module docstring)."""
    ok = [r for r in results if r.status is LabelStatus.OK and r.label is not None]
    if not ok:
        return results[0], 0
    counts = Counter(str(getattr(r.label, "error_type", "")) for r in ok)
    best = min(counts, key=lambda key: (-counts[key], order.get(key, len(order)), key))
    chosen = next(r for r in ok if str(getattr(r.label, "error_type", "")) == best)
    return chosen, counts[best]


def _tokens(results: list[JudgeResult]) -> tuple[int | None, int | None]:
    """Prompt and completion tokens of a trace's requests, from the servers' usage counts."""
    totals: list[int | None] = [None, None]
    for result in results:
        usage = result.extra.get("usage")
        if not isinstance(usage, dict):
            continue
        for i, key in enumerate(("prompt_tokens", "completion_tokens")):
            value = usage.get(key)
            if isinstance(value, int):
                totals[i] = (totals[i] or 0) + value
    return totals[0], totals[1]


def skipped_record(trace: Trace, judge: str, reason: str, samples: int) -> StoredLabel:
    """The ``skipped`` record of a trace that is not judged (its outcome, or ``not sampled``),
    made the same way by the live path, the batch export and Ray."""
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


def record_of(
    trace: Trace,
    results: list[JudgeResult],
    steps: list[str],
    *,
    judge: str,
    samples: int,
    order: dict[str, int],
    attempts: int,
    latency_ms: float = 0.0,
    trace_cut: bool = False,
    inclusion_prob: float | None = None,
) -> StoredLabel:
    """The stored record of one trace from its judge results (one per sample, steps already
    checked): the majority, the fields of an ok label with its evidence verified against the
    trace, reasoning, tokens and agreement. The one place a record is made, whichever way the
    results came (live, batch files, Ray)."""
    chosen, agree = _majority(results, order)
    fields: dict[str, Any] = {}
    if chosen.status is LabelStatus.OK and chosen.label is not None:
        data = chosen.label.model_dump(mode="json")
        fields = {
            k: data.get(k)
            for k in ("error_type", "first_error_step", "evidence", "explanation", "confidence")
        }
        fields["evidence_verified"] = evidence_in_text(
            data.get("evidence"), trace.response, "\n".join(steps)
        )
    reasoning = chosen.extra.get("reasoning")
    tokens = _tokens(results)
    tries = results[0].extra.get("tries")
    return StoredLabel(
        trace_id=trace.trace_id,
        judge=judge,
        status=chosen.status,
        attempts=attempts,
        latency_ms=round(latency_ms, 3),
        reason=chosen.reason,
        raw_reply=chosen.raw_reply if chosen.status is not LabelStatus.OK else None,
        trace_cut=trace_cut,
        samples=samples,
        sample_agreement=(agree / len(results)) if len(results) > 1 else None,
        checkpoint=trace.checkpoint,
        dataset=trace.dataset,
        problem_id=trace.problem_id,
        reasoning=reasoning if isinstance(reasoning, str) else None,
        inclusion_prob=inclusion_prob,
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
        tries=list(tries) if isinstance(tries, list) and tries else None,
        **fields,
    )


class _Run:
    def __init__(
        self,
        *,
        judge: Judge,
        config: JudgeConfig,
        taxonomy: Taxonomy,
        store: LabelStore | None,
        progress: LabelProgress,
        on_progress: Callable[[LabelProgress], None] | None,
        call_limit: int,
    ) -> None:
        self.judge = judge
        self.config = config
        self.taxonomy = taxonomy
        self.store = store
        self.progress = progress
        self.on_progress = on_progress
        self.order = {key: i for i, key in enumerate(taxonomy.keys)}
        self.schema = label_json_schema(taxonomy)
        self.calls = asyncio.Semaphore(max(1, call_limit))
        self.inclusion: dict[str, float] | None = None
        """Inclusion probability of each judged trace under a label budget."""
        self.down_streak = 0
        """Traces in a row whose every request said the server is unusable."""
        self.stop: JudgeUnavailableError | None = None
        """Set once the streak reaches ``STOP_AFTER_SERVER_DOWN``: schedule nothing more."""

    def write(self, label: StoredLabel) -> None:
        notices = getattr(self.judge, "notices", None)
        if notices:
            self.progress.notices.extend(notices)
            notices.clear()
        if self.store is None:
            raise RuntimeError("this run has no store to write to")
        self.store.append(label)
        self.progress.prompt_tokens += label.prompt_tokens or 0
        self.progress.completion_tokens += label.completion_tokens or 0
        self.progress.status_counts[label.status.value] += 1
        self.progress.done += 1
        if self.on_progress is not None:
            self.on_progress(self.progress)

    def skip(self, trace: Trace, reason: str) -> StoredLabel:
        label = skipped_record(trace, self.judge.judge_id, reason, self.config.samples)
        self.write(label)
        return label

    async def _one(self, request: JudgeRequest) -> JudgeResult:
        async with self.calls:
            result = await self.judge.judge(request)
        self.progress.calls += max(1, result.attempts)
        return result

    def _watch_server(self, results: list[JudgeResult]) -> None:
        kinds = {r.server_down for r in results}
        if None in kinds:
            self.down_streak = 0
            return
        self.down_streak += 1
        if self.down_streak < STOP_AFTER_SERVER_DOWN or self.stop is not None:
            return
        url = str(getattr(self.judge, "base_url", None) or self.config.base_url or "the server")
        if "wrong-model" in kinds:
            reason = (
                f"it answered {self.down_streak} requests in a row as another model than the "
                f"one asked ({self.config.model}): a server swapped under the run"
            )
        elif "auth" in kinds:
            reason = (
                f"it refused {self.down_streak} requests in a row with HTTP 401/403: the API "
                "key (OPENAI_API_KEY) is missing or wrong"
            )
        else:
            reason = (
                f"{self.down_streak} requests in a row could not reach it (connection "
                f"refused, or no complete answer within {self.config.deadline_s:g} s, after "
                f"{self.config.max_retries} retries each)"
            )
        self.stop = JudgeUnavailableError(
            url=url,
            reason=reason + "; labelling stopped, the labels written so far are kept",
            hint="fix the server (or the key) and run the same command again: it resumes "
            "where it stopped",
        )

    async def label(self, trace: Trace, answer: str | None) -> StoredLabel:
        label = await self.build(trace, answer)
        self.write(label)
        return label

    async def build(self, trace: Trace, answer: str | None) -> StoredLabel:
        """The record of one trace, judged (not written: a Ray actor builds it too)."""
        # A judge's size limit applies before any per-character work (splitting, rendering).
        too_long = getattr(self.judge, "too_long", None)
        early: JudgeResult | None = too_long(trace) if too_long is not None else None
        if early is not None:
            return record_of(
                trace, [early], [], judge=self.judge.judge_id, samples=self.config.samples,
                order=self.order, attempts=early.attempts,
            )  # fmt: skip
        # Splitting and rendering are CPU work: a long trace is done in a worker thread so that
        # the event loop keeps the other requests flowing.
        rendered = await _off_loop(
            _chars(trace),
            render_judge_prompt,
            self.taxonomy,
            trace,
            answer,
            max_trace_tokens=self.config.max_trace_tokens,
        )
        steps = list(rendered.steps)
        schema = bounded_schema(self.schema, len(steps), max_tokens=self.config.max_tokens)
        samples = max(1, self.config.samples)
        one_request = samples > 1 and bool(getattr(self.judge, "supports_n", False))
        requests = [
            JudgeRequest(
                trace=trace,
                final_answer=answer,
                steps=steps,
                messages=rendered.messages,
                seed=request_seed(self.config.seed, trace.trace_id, i),
                trace_cut=rendered.trace_cut,
                n=samples if one_request else 1,
                schema=schema,
            )
            for i in range(1 if one_request else samples)
        ]
        start = time.perf_counter()
        results = list(await asyncio.gather(*(self._one(r) for r in requests)))
        attempts = sum(r.attempts for r in results)  # requests made, not samples
        if one_request:
            results = [results[0], *results[0].choices]
        wall_ms = (time.perf_counter() - start) * 1000.0
        self._watch_server(results)
        return await _off_loop(  # the evidence check reads the whole trace
            _chars(trace),
            record_of,
            trace,
            results,
            steps,
            judge=self.judge.judge_id,
            samples=self.config.samples,
            order=self.order,
            attempts=attempts,
            latency_ms=wall_ms,
            trace_cut=rendered.trace_cut,
            inclusion_prob=None if self.inclusion is None else self.inclusion.get(trace.trace_id),
        )


OFF_LOOP_CHARS = 20_000
"""A trace with more characters than this is split, rendered and checked in a worker thread."""


def _chars(trace: Trace) -> int:
    return len(trace.response) + sum(len(s) for s in trace.steps or ())


async def _off_loop(chars: int, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)``, in a worker thread when the trace it reads is long."""
    if chars > OFF_LOOP_CHARS:
        return await asyncio.to_thread(fn, *args, **kwargs)
    return fn(*args, **kwargs)


async def arun_labeling(
    traces_path: str | Path,
    run_dir: str | Path,
    config: JudgeConfig,
    *,
    taxonomy: Taxonomy,
    include_correct: bool = False,
    limit: int | None = None,
    input_format: str | None = None,
    regrade: bool = False,
    skip_invalid: bool = False,
    progress: Callable[[LabelProgress], None] | None = None,
    judge: Judge | None = None,
    add_judge: bool = False,
    per_checkpoint: int | None = None,
    pilot: int | None = None,
    cache: bool = True,
) -> LabelRunSummary:
    """The async form of :func:`run_labeling`."""
    traces_path = Path(traces_path)
    run_dir = Path(run_dir)
    if config.samples > 1 and config.temperature <= 0:
        raise OptionError(
            option="--samples",
            value=config.samples,
            allowed="1 at temperature 0: greedy samples are copies of one another, so their "
            "agreement would always be 1",
            hint="pass --temperature above 0 (e.g. 0.7) with --samples",
        )
    return await _arun(
        traces_path,
        run_dir,
        config,
        taxonomy=taxonomy,
        include_correct=include_correct,
        limit=limit,
        input_format=input_format,
        regrade=regrade,
        skip_invalid=skip_invalid,
        progress=progress,
        judge=judge,
        add_judge=add_judge,
        per_checkpoint=per_checkpoint,
        pilot=pilot,
        cache=cache,
    )


async def _arun(
    traces_path: Path,
    run_dir: Path,
    config: JudgeConfig,
    *,
    taxonomy: Taxonomy,
    include_correct: bool,
    limit: int | None,
    input_format: str | None,
    regrade: bool,
    skip_invalid: bool,
    progress: Callable[[LabelProgress], None] | None,
    judge: Judge | None,
    add_judge: bool,
    per_checkpoint: int | None,
    pilot: int | None,
    cache: bool,
) -> LabelRunSummary:
    start = time.perf_counter()
    digest = input_digest(traces_path)
    _check_same_input(run_dir, traces_path, digest)
    if judge is None:
        judge = create_judge(config, taxonomy)  # probes the server before anything is written
    rejects = RejectSink(run_dir / REJECTS_FILE, source=traces_path) if skip_invalid else None
    # Outcomes come from the input's one graded table (cached), the same every command uses.
    try:
        graded = load_graded(
            traces_path,
            input_format=input_format,
            regrade=regrade,
            rejects=rejects,
            digest=digest,
            cache=cache,
        )
    except BaseException:
        await judge.aclose()
        if rejects is not None:
            rejects.close()
        raise
    lock = contextlib.ExitStack()
    try:
        # One writer per run directory, and one judge configuration unless asked.
        lock.enter_context(run_dir_lock(run_dir))
        _check_one_judge(run_dir, judge.judge_id, add_judge)
    except BaseException:
        lock.close()
        await judge.aclose()
        if rejects is not None:
            rejects.close()
        raise
    sample = label_sample(
        graded.table,
        per_stratum=per_checkpoint,
        total=pilot,
        include_correct=include_correct,
        seed=config.seed,
    )
    store = LabelStore(run_dir)
    state = LabelProgress()
    # A batching backend (vllm) asks for more requests in flight so that its batches fill up.
    call_limit = max(1, config.concurrency, int(getattr(judge, "preferred_concurrency", 0)))
    run = _Run(
        call_limit=call_limit,
        judge=judge,
        config=config,
        taxonomy=taxonomy,
        store=store,
        progress=state,
        on_progress=progress,
    )
    run.inclusion = sample
    judge_id = judge.judge_id
    status_counts: Counter[str] = Counter()
    by_checkpoint: dict[str, Counter[str]] = {}
    pending: set[asyncio.Task[None]] = set()
    try:
        index = _load_index(store.path)
        options = {
            "include_correct": include_correct,
            "limit": limit,
            "input_format": input_format,
            "regrade": regrade,
            "skip_invalid": skip_invalid,
            "per_checkpoint": per_checkpoint,
            "pilot": pilot,
        }
        manifest = _manifest(traces_path, config, taxonomy, judge, options, digest)
        write_manifest(run_dir, add_to_history(read_manifest(run_dir), manifest))

        def tally(trace: Trace, status: str, error_type: str | None) -> None:
            status_counts[status] += 1
            if status == LabelStatus.OK.value:
                key = error_type if error_type is not None else "null"
                by_checkpoint.setdefault(trace.checkpoint, Counter())[key] += 1

        async def work(trace: Trace, answer: str | None) -> None:
            label = await run.label(trace, answer)
            tally(trace, label.status.value, label.error_type)

        # Bounded in-flight work keeps memory flat; the semaphore bounds concurrent calls.
        max_in_flight = 4 * call_limit
        for trace, outcome, answer in _limited(
            _with_outcomes(traces_path, input_format, graded.table, skip_invalid), limit
        ):
            if run.stop is not None:
                break
            state.read += 1
            if rejects is not None:
                state.rejected = rejects.count
            current = index.get(trace.trace_id)
            send = outcome is Outcome.WRONG or (include_correct and outcome is Outcome.CORRECT)
            already_ok = current is not None and current[:2] == ("ok", judge_id)
            if send and sample is not None and trace.trace_id not in sample and not already_ok:
                # left out of the budget (an ok label from an earlier, larger run is kept)
                send, reason = False, NOT_SAMPLED
            else:
                reason = outcome.value
            if not send:
                if current is None or current[:3] != ("skipped", judge_id, reason):
                    run.skip(trace, reason)
                else:
                    state.done += 1
                tally(trace, LabelStatus.SKIPPED.value, None)
                continue
            if current is not None and current.status == "ok" and current.judge == judge_id:
                state.resumed += 1
                state.done += 1
                tally(trace, "ok", current.detail)
                continue
            pending.add(asyncio.create_task(work(trace, answer)))
            if len(pending) >= max_in_flight:
                finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in finished:
                    task.result()  # re-raise a bug, never swallow it
            await asyncio.sleep(0)  # let replies be processed between reads
        if pending and run.stop is None:
            for outcome_or_error in await asyncio.gather(*pending, return_exceptions=True):
                if isinstance(outcome_or_error, BaseException):
                    raise outcome_or_error
        if rejects is not None:
            state.rejected = rejects.count
    finally:
        for task in pending:
            task.cancel()
        store.close()
        lock.close()
        if rejects is not None:
            rejects.close()
        await judge.aclose()
    if run.stop is not None:
        raise run.stop
    if progress is not None:
        progress(state)
    return LabelRunSummary(
        run_dir=str(run_dir),
        judge=judge_id,
        traces=state.read,
        written=store.written,
        resumed=state.resumed,
        rejected=state.rejected,
        calls=state.calls,
        seconds=round(time.perf_counter() - start, 3),
        status_counts=dict(status_counts),
        written_counts=dict(state.status_counts),
        error_types_by_checkpoint={
            ck: dict(by_checkpoint[ck])
            for ck in order_checkpoints(graded.table)
            if ck in by_checkpoint
        },
        prompt_tokens=state.prompt_tokens,
        completion_tokens=state.completion_tokens,
    )


class _CountOnly(RejectSink):
    """The second pass over the input skips the rows the first pass already wrote out."""

    def write(self, *args: Any, **kwargs: Any) -> None:
        self.count += 1


def _with_outcomes(
    traces_path: Path, input_format: str | None, table: pd.DataFrame, skip_invalid: bool
) -> Iterator[tuple[Trace, Outcome, str | None]]:
    """Stream the traces again beside their graded rows: the reader yields the valid rows in
    the same order both times, so row i of the table is the i-th trace."""
    ids = table["trace_id"].to_numpy(dtype=object)
    outcomes = table["outcome"].to_numpy(dtype=object)
    answers = table["answer"].astype(object).to_numpy()
    sink = _CountOnly(os.devnull) if skip_invalid else None
    for i, trace in enumerate(read_traces(traces_path, input_format=input_format, rejects=sink)):
        if i >= len(ids) or ids[i] != trace.trace_id:
            raise LabelStoreError(
                path=traces_path, reason="the input changed while it was being labelled"
            )
        answer = answers[i]
        yield trace, Outcome(outcomes[i]), None if answer is None or answer is pd.NA else answer


def _limited(
    items: Iterator[tuple[Trace, Outcome, str | None]], limit: int | None
) -> Iterator[tuple[Trace, Outcome, str | None]]:
    for n, item in enumerate(items):
        if limit is not None and n >= limit:
            return
        yield item


def run_labeling(
    traces_path: str | Path,
    run_dir: str | Path,
    config: JudgeConfig,
    *,
    taxonomy: Taxonomy,
    include_correct: bool = False,
    limit: int | None = None,
    input_format: str | None = None,
    regrade: bool = False,
    skip_invalid: bool = False,
    progress: Callable[[LabelProgress], None] | None = None,
    judge: Judge | None = None,
    add_judge: bool = False,
    per_checkpoint: int | None = None,
    pilot: int | None = None,
    cache: bool = True,
) -> LabelRunSummary:
    """Label the traces of ``traces_path`` into ``run_dir`` (resuming what is there).

    A label budget (``misstep.pipelines._budget``): ``per_checkpoint`` N judges N traces
    drawn at random per (checkpoint, dataset), ``pilot`` M spreads M traces over them; the
    others get a ``skipped`` record with reason ``not sampled``.

    ``judge`` overrides the backend built from ``config`` (tests, embedding). Raises
    JudgeUnavailableError before writing anything when the judge server cannot be reached."""
    return asyncio.run(
        arun_labeling(
            traces_path,
            run_dir,
            config,
            taxonomy=taxonomy,
            include_correct=include_correct,
            limit=limit,
            input_format=input_format,
            regrade=regrade,
            skip_invalid=skip_invalid,
            progress=progress,
            judge=judge,
            add_judge=add_judge,
            per_checkpoint=per_checkpoint,
            pilot=pilot,
            cache=cache,
        )
    )
