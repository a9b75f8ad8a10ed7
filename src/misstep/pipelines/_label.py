"""``misstep label``: stream traces, grade them, ask the judge, append labels, resume.

Memory stays flat in the number of traces: traces are read one at a time, at most
``4 * concurrency`` are in flight, and labels go to disk as they arrive. What resuming needs
is one small tuple per already-labelled trace (status, judge id, error type or reason).

The live strategy on a ``misstep.labels.LabelRun``: the run decides what happens to each trace
(judge it, write its ``skipped`` record, keep its current one; ``LabelRun.todo``), this module
judges the ones to judge with a live backend (``LiveLabeller``) and appends their records. So
every input trace ends as a label record or a reject (``skip_invalid``).

Judge self-consistency (``samples`` > 1, which needs a temperature above 0): a backend that can
(the server backend) draws the samples in one request (``n``, sharing the prefill), others are
asked ``samples`` times with seeds ``request_seed(seed, trace_id, i)``; the stored label is the
majority ``error_type`` among the ok samples. Ties go to the key that comes first in the
taxonomy's order; the evidence, step and explanation are those of the lowest-numbered sample
with that type. ``sample_agreement`` is the majority count over ``samples`` (failed samples
count as disagreeing).

Through the ``LabelRun`` every run takes ``RUN_DIR/.lock`` (one writer at a time), refuses a run
directory whose labels another judge configuration made (unless ``add_judge``), and adds its
manifest to the run directory's history (nothing overwritten).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, Unpack

from pydantic import BaseModel, Field

from misstep.errors import JudgeUnavailableError
from misstep.judge import (
    Judge,
    JudgeRequest,
    JudgeResult,
    JudgeSpec,
    bounded_schema,
    create_judge,
    declared,
    request_seed,
)
from misstep.labels import (
    Action,
    LabelRun,
    LabelStatus,
    RunFields,
    RunOptions,
    StoredLabel,
    Todo,
    record_of,
    skipped_record,
)
from misstep.metrics import order_checkpoints
from misstep.pipelines._records import record_manifest
from misstep.prompts import render_judge_prompt
from misstep.rollouts import Trace

if TYPE_CHECKING:
    from misstep.judge import JudgeConfig
    from misstep.taxonomy import Taxonomy

__all__ = ["LabelProgress", "LabelRunSummary", "arun_labeling", "run_labeling"]

_T = TypeVar("_T")
_P = ParamSpec("_P")
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


class RunSummary(BaseModel):
    """What every way of labelling reports first."""

    run_dir: str
    """The run directory."""
    judge: str
    """Judge id of this run's records."""


class LabelRunSummary(RunSummary):
    """What a labelling run did, and the state of its input's labels at the end."""

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


@dataclass(eq=False)
class LiveLabeller:
    """Turns a trace into its record with a live judge: render, ask (samples, retries in the
    backend), watch for a server that is down, make the record; the live path writes it, a Ray
    actor hands it back."""

    judge: Judge
    spec: JudgeSpec
    """The run's one specification (the judge's own, else made from the configuration)."""
    run: LabelRun | None
    """Where records go; None: built only (a Ray actor hands them back to the driver)."""
    progress: LabelProgress
    on_progress: Callable[[LabelProgress], None] | None
    down_streak: int = 0
    """Traces in a row whose every request said the server is unusable."""
    stop: JudgeUnavailableError | None = None
    """Set once the streak reaches ``STOP_AFTER_SERVER_DOWN``: schedule nothing more."""

    def __post_init__(self) -> None:
        self.config = self.spec.config
        """The run's configuration, the model resolved."""
        # A batching backend (vllm) asks for more requests in flight to fill its batches.
        self.call_limit = self.spec.in_flight(self.judge.preferred_concurrency)
        """Requests in flight at most (the semaphore ``calls``)."""
        self.calls = asyncio.Semaphore(self.call_limit)

    def write(self, label: StoredLabel) -> None:
        self.progress.notices.extend(self.judge.take_notices())
        if self.run is None:
            raise RuntimeError("this run has no store to write to")
        self.run.append(label)
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
        url = str(self.judge.base_url or self.config.base_url or "the server")
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

    async def label(
        self, trace: Trace, answer: str | None, inclusion_prob: float | None = None
    ) -> StoredLabel:
        label = await self.build(trace, answer, inclusion_prob)
        self.write(label)
        return label

    async def build(
        self, trace: Trace, answer: str | None, inclusion_prob: float | None = None
    ) -> StoredLabel:
        """The record of one trace, judged (not written: a Ray actor builds it too)."""
        # A judge's size limit applies before any per-character work (splitting, rendering).
        early = self.judge.too_long(trace)
        if early is not None:
            return record_of(
                trace, [early], [], judge=self.judge.judge_id, samples=self.config.samples,
                order=self.spec.order, attempts=early.attempts,
            )  # fmt: skip
        # Splitting and rendering are CPU work: a long trace is done in a worker thread so that
        # the event loop keeps the other requests flowing.
        config = self.config
        rendered = await _off_loop(
            _chars(trace),
            render_judge_prompt,
            self.spec.taxonomy,
            trace,
            answer,
            max_trace_tokens=config.max_trace_tokens,
        )
        steps = list(rendered.steps)
        schema = bounded_schema(self.spec.schema, len(steps), max_tokens=config.max_tokens)
        samples = max(1, config.samples)
        one_request = samples > 1 and self.judge.supports_n
        requests = [
            JudgeRequest(
                trace=trace,
                final_answer=answer,
                steps=steps,
                messages=rendered.messages,
                seed=request_seed(config.seed, trace.trace_id, i),
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
            samples=config.samples,
            order=self.spec.order,
            attempts=attempts,
            latency_ms=wall_ms,
            trace_cut=rendered.trace_cut,
            inclusion_prob=inclusion_prob,
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
    options: RunOptions | None = None,
    progress: Callable[[LabelProgress], None] | None = None,
    judge: Judge | None = None,
    **fields: Unpack[RunFields],
) -> LabelRunSummary:
    """Label the traces of ``traces_path`` into ``run_dir`` (resuming what is there).

    ``options`` (``misstep.labels.RunOptions``) gives all of the run's options at once, as the
    CLI builds them; without it they are built from the keyword arguments (its fields). A label
    budget: ``per_checkpoint`` N judges N traces drawn at random per (checkpoint, dataset),
    ``pilot`` M spreads M traces over them; the others get a ``skipped`` record with reason
    ``not sampled``.

    ``judge`` overrides the backend built from ``config`` (tests, embedding). Raises
    JudgeUnavailableError before writing anything when the judge server cannot be reached."""
    return await _arun(
        Path(traces_path),
        Path(run_dir),
        config,
        taxonomy,
        options or RunOptions(**fields),
        progress=progress,
        judge=judge,
    )


async def _arun(
    traces_path: Path,
    run_dir: Path,
    config: JudgeConfig,
    taxonomy: Taxonomy,
    options: RunOptions,
    *,
    progress: Callable[[LabelProgress], None] | None,
    judge: Judge | None,
) -> LabelRunSummary:
    start = time.perf_counter()
    digest = LabelRun.check_input(traces_path, run_dir)
    # A judge is built (its server probed) before anything is written.
    judge = declared(judge) if judge is not None else create_judge(config, taxonomy)
    spec = judge.spec or JudgeSpec(config, taxonomy)
    state = LabelProgress()
    try:
        with LabelRun.open(
            traces_path,
            run_dir,
            judge_id=judge.judge_id,
            digest=digest,
            options=options,
            seed=config.seed,
        ) as run:
            recorded = options.recorded(
                "include_correct",
                "limit",
                "input_format",
                "regrade",
                "skip_invalid",
                "per_checkpoint",
                "pilot",
            )
            record_manifest(run, spec, recorded, judge=judge)
            live = LiveLabeller(
                judge=judge,
                spec=spec,
                run=run,
                progress=state,
                on_progress=progress,
            )
            tally = await _label_all(run, live)
            written = run.written
    finally:
        await judge.aclose()
    if live.stop is not None:
        raise live.stop
    if progress is not None:
        progress(state)
    return LabelRunSummary(
        run_dir=str(run_dir),
        judge=judge.judge_id,
        traces=state.read,
        written=written,
        resumed=state.resumed,
        rejected=state.rejected,
        calls=state.calls,
        seconds=round(time.perf_counter() - start, 3),
        status_counts=dict(tally.status_counts),
        written_counts=dict(state.status_counts),
        error_types_by_checkpoint={
            ck: dict(tally.by_checkpoint[ck])
            for ck in order_checkpoints(run.graded.table)
            if ck in tally.by_checkpoint
        },
        prompt_tokens=state.prompt_tokens,
        completion_tokens=state.completion_tokens,
    )


@dataclass
class _Tally:
    """The current status of every input trace, and the error types of the ok ones."""

    status_counts: Counter[str] = field(default_factory=Counter)
    by_checkpoint: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, trace: Trace, status: str, error_type: str | None) -> None:
        self.status_counts[status] += 1
        if status == LabelStatus.OK.value:
            key = error_type if error_type is not None else "null"
            self.by_checkpoint.setdefault(trace.checkpoint, Counter())[key] += 1


async def _label_all(run: LabelRun, live: LiveLabeller) -> _Tally:
    """Judge what ``run.todo`` says, at most ``4 * call_limit`` traces in flight (memory stays
    flat; the semaphore bounds the concurrent calls)."""
    tally = _Tally()
    state = live.progress
    pending: set[asyncio.Task[None]] = set()

    async def work(todo: Todo) -> None:
        label = await live.label(todo.trace, todo.answer, todo.inclusion_prob)
        tally.add(todo.trace, label.status.value, label.error_type)

    try:
        for todo in run.todo():
            if live.stop is not None:
                break
            state.read += 1
            state.rejected = run.rejected
            if todo.action is Action.SKIP:
                if todo.write:
                    live.skip(todo.trace, str(todo.reason))
                else:
                    state.done += 1
                tally.add(todo.trace, LabelStatus.SKIPPED.value, None)
                continue
            if todo.action is Action.KEEP:
                state.resumed += 1
                state.done += 1
                current = run.current(todo.trace.trace_id)
                tally.add(todo.trace, "ok", current.detail if current else None)
                continue
            pending.add(asyncio.create_task(work(todo)))
            if len(pending) >= 4 * live.call_limit:
                finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in finished:
                    task.result()  # re-raise a bug, never swallow it
            await asyncio.sleep(0)  # let replies be processed between reads
        if pending and live.stop is None:
            for outcome_or_error in await asyncio.gather(*pending, return_exceptions=True):
                if isinstance(outcome_or_error, BaseException):
                    raise outcome_or_error
        state.rejected = run.rejected
    finally:
        for task in pending:
            task.cancel()
    return tally


def _blocking(fn: Callable[_P, Coroutine[Any, Any, _T]], name: str) -> Callable[_P, _T]:
    """``fn`` run to its end in a new event loop, as the function ``name``."""

    def run(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        return asyncio.run(fn(*args, **kwargs))

    run.__doc__, run.__name__, run.__qualname__ = fn.__doc__, name, name
    return run


run_labeling = _blocking(arun_labeling, "run_labeling")
"""The blocking form of :func:`arun_labeling` (same arguments)."""
