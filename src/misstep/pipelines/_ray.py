"""Labelling on a Ray cluster (the ``misstep[ray]`` extra, imported lazily).

Two ways, both producing exactly the records ``misstep label`` writes (same statuses, same
validation, same resume, same judge id for the same configuration):

- **servers** (``engine=False``): Ray Data spreads the traces over ``actors`` Ray actors, each
  running misstep's own client (the ``openai`` backend: retries, failover between the
  ``--base-url`` servers, schema and step checks) against existing OpenAI-compatible servers,
  with ``concurrency`` requests in flight per actor. Tested on a local CPU cluster.
- **engine** (``engine=True``): Ray's vLLM engine processor on GPU nodes,
  ``ray.data.llm.build_processor`` with ``vLLMEngineProcessorConfig`` (``engine_kwargs`` from
  ``--engine-arg``, xgrammar with no free whitespace in the JSON grammar), each row's
  ``sampling_params`` made from the live path's chat body by the one adapter
  (``misstep.judge.engine_request``: every sampling field, the seed, ``max_tokens``, the
  per-trace schema as ``structured_outputs``; the chat template arguments and
  ``reasoning_effort`` go to Ray's chat-template stage). Ray's processor keeps only the first
  output of a request, so ``--samples`` above 1 is refused there. A reply is ``truncated``
  when it used all of ``max_tokens`` (the processor does not pass the finish reason on). Each
  generated text is validated by the exchange's one validator. The processor cannot retry
  inline: a cut or broken reply is stored, and the next run sends its retry as ``misstep
  export-requests`` does (another seed at T >= 0.3, or the re-ask), until the retry policy
  gives up. Needs vLLM on the cluster (GPU nodes by default: Ray asks for one GPU per engine).

Both honour ``--limit``, ``--per-checkpoint`` / ``--pilot`` (the same sample ``misstep label``
draws, inclusion probabilities kept) and ``--skip-invalid`` (rejects to ``RUN_DIR/rejects.jsonl``).

The driver renders the prompts, writes the rows to judge to ``RUN_DIR/ray_work.parquet`` (read
back by Ray as a stream, so memory stays flat), holds the run directory's lock, and appends
each record as it comes back: a run killed half-way resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from misstep.errors import OptionError
from misstep.judge import (
    Attempt,
    JudgeConfig,
    JudgeResult,
    JudgeSpec,
    create_judge,
    engine_request,
    engine_settings,
    import_backend,
    parse_completion,
)
from misstep.labels import (
    Action,
    LabelRun,
    RunFields,
    RunOptions,
    StoredLabel,
    skipped_record,
)
from misstep.pipelines._label import LabelProgress, LabelRunSummary, LiveLabeller
from misstep.pipelines._records import record_manifest, round_record
from misstep.rollouts import Trace

if TYPE_CHECKING:
    import pandas as pd

    from misstep.taxonomy import Taxonomy

__all__ = ["check_engine_samples", "import_ray", "label_with_ray"]

WORK_FILE = "ray_work.parquet"


def import_ray() -> Any:
    """The ``ray`` module (with ``ray.data``), or BackendNotInstalledError naming the extra."""
    return import_backend("ray", "ray", "ray.data")


def check_engine_samples(config: JudgeConfig) -> None:
    """Ray's vLLM engine processor draws one sample per request: ``--samples`` above 1 is
    refused there (before anything starts)."""
    if config.samples > 1:
        raise OptionError(
            option="samples",
            value=config.samples,
            allowed="1 on Ray with the vllm backend: Ray's vLLM processor keeps only the first "
            "output of a request",
            hint="label on Ray with the openai backend (servers) for several samples per trace",
        )


class _JudgeActor:
    """A Ray actor holding one misstep client; labels a batch of rows concurrently."""

    def __init__(self, config: str, taxonomy_path: str | None) -> None:
        from misstep.taxonomy import load_taxonomy

        self.config = JudgeConfig.model_validate_json(config)
        self.taxonomy = load_taxonomy(taxonomy_path)
        self.loop = asyncio.new_event_loop()
        judge = create_judge(self.config, self.taxonomy)
        self.run = LiveLabeller(
            judge=judge,
            spec=judge.spec or JudgeSpec(self.config, self.taxonomy),
            run=None,
            progress=LabelProgress(),
            on_progress=None,
        )

    def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
        import pandas as pd

        async def one(trace_json: str, answer: str, prob: float) -> str:
            trace = Trace.model_validate_json(trace_json)
            label = await self.run.build(trace, answer or None)
            if prob >= 0:
                label = label.model_copy(update={"inclusion_prob": prob})
            return label.model_dump_json()

        async def go() -> list[str]:
            return list(
                await asyncio.gather(
                    *(
                        one(t, a, float(p))
                        for t, a, p in zip(
                            batch["trace"], batch["answer"], batch["inclusion_prob"], strict=True
                        )
                    )
                )
            )

        return pd.DataFrame({"record": self.loop.run_until_complete(go())})


def label_with_ray(
    traces_path: str | Path,
    run_dir: str | Path,
    config: JudgeConfig,
    *,
    taxonomy: Taxonomy,
    actors: int = 2,
    batch_size: int = 16,
    engine: bool = False,
    options: RunOptions | None = None,
    **fields: Unpack[RunFields],
) -> LabelRunSummary:
    """Label the traces of ``traces_path`` into ``run_dir`` on Ray (see the module docstring).
    Ray must be initialised (``ray.init(...)``) or it starts a local cluster. ``options``: all
    of the run's options at once (as the CLI builds them); without it they are built from the
    keyword arguments (its fields)."""
    options = options or RunOptions(**fields)
    if engine:
        check_engine_samples(config)
    ray = import_ray()
    start = time.perf_counter()
    traces_path, run_dir = Path(traces_path), Path(run_dir)
    digest = LabelRun.check_input(traces_path, run_dir)
    judge = None if engine else create_judge(config, taxonomy)
    spec = (judge.spec if judge is not None else None) or JudgeSpec(config, taxonomy)
    counts = _Counts()
    try:
        with LabelRun.open(
            traces_path,
            run_dir,
            judge_id=judge.judge_id if judge is not None else spec.judge_id,
            digest=digest,
            options=options,
            seed=config.seed,
        ) as run:
            work = run_dir / WORK_FILE
            rows = _write_work(run, spec, engine, counts, work)
            recorded = {
                "mode": "ray-engine" if engine else "ray",
                "actors": actors,
                **options.recorded(
                    "include_correct", "limit", "per_checkpoint", "pilot", "skip_invalid"
                ),
            }
            record_manifest(run, spec, recorded, judge=judge)
            if rows:
                dataset = ray.data.read_parquet(str(work))
                if engine:
                    records = _engine_records(dataset, spec, run.judge_id, actors, batch_size)
                else:
                    records = _actor_records(ray, dataset, spec.config, actors, batch_size)
                for raw in records:
                    counts.add(run, StoredLabel.model_validate_json(raw))
            work.unlink(missing_ok=True)
            rejected = run.rejected
    finally:
        if judge is not None:
            asyncio.run(judge.aclose())
    return LabelRunSummary(
        run_dir=str(run_dir),
        judge=run.judge_id,
        traces=sum(counts.status.values()),
        written=sum(counts.written.values()),
        resumed=counts.resumed,
        rejected=rejected,
        calls=0,
        seconds=round(time.perf_counter() - start, 3),
        status_counts=dict(counts.status),
        written_counts=dict(counts.written),
        prompt_tokens=counts.prompt_tokens,
        completion_tokens=counts.completion_tokens,
    )


@dataclass
class _Counts:
    """What a Ray run did: records written and current statuses."""

    written: Counter[str] = field(default_factory=Counter)
    status: Counter[str] = field(default_factory=Counter)
    resumed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, run: LabelRun, label: StoredLabel) -> None:
        run.append(label)
        self.written[label.status.value] += 1
        self.status[label.status.value] += 1
        self.prompt_tokens += label.prompt_tokens or 0
        self.completion_tokens += label.completion_tokens or 0


def _write_work(
    run: LabelRun,
    spec: JudgeSpec,
    engine: bool,
    counts: _Counts,
    work: Path,
) -> int:
    """The rows to judge into ``work`` (Parquet, in pieces); the skipped records written. The
    number of rows."""
    samples = spec.config.samples
    writer = _ParquetRows(work)
    batch: list[dict[str, Any]] = []
    rows = 0
    for todo in run.todo():
        trace = todo.trace
        if todo.action is Action.SKIP:
            if todo.write:
                counts.add(run, skipped_record(trace, run.judge_id, str(todo.reason), samples))
            else:
                counts.status["skipped"] += 1
            continue
        if todo.action is Action.KEEP:
            counts.resumed += 1
            counts.status["ok"] += 1
            continue
        previous = run.retry_of(trace.trace_id) if engine else None
        plan = _plan(previous, trace, spec)
        if plan is None:  # the retry policy keeps the cut or broken reply
            counts.status[str(previous["status"] if previous else "")] += 1
            continue
        prob = -1.0 if todo.inclusion_prob is None else float(todo.inclusion_prob)
        batch.append(
            {
                "trace": trace.model_dump_json(),
                "answer": todo.answer or "",
                "inclusion_prob": prob,
                "plan": plan,
            }
        )
        rows += 1
        if len(batch) >= 4096:
            writer.write(batch)
            batch = []
    writer.write(batch)
    writer.close()
    return rows


def _actor_records(
    ray: Any, dataset: Any, config: JudgeConfig, actors: int, batch_size: int
) -> Iterator[str]:
    """Records from misstep's own client in Ray actors (servers)."""
    return (
        row["record"]
        for row in dataset.map_batches(
            _JudgeActor,
            fn_constructor_kwargs={
                "config": config.model_dump_json(),
                "taxonomy_path": config.taxonomy_path,
            },
            compute=ray.data.ActorPoolStrategy(size=actors),
            # an actor mostly waits on the network: a quarter of a CPU leaves the cluster's
            # CPUs to reading the rows
            num_cpus=0.25,
            batch_size=batch_size,
            batch_format="pandas",
        ).iter_rows()
    )


class _ParquetRows:
    """Rows appended to one Parquet file in pieces (flat memory however many traces)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._writer: Any = None

    def write(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(
            rows,
            schema=pa.schema(
                [
                    ("trace", pa.string()),
                    ("answer", pa.string()),
                    ("inclusion_prob", pa.float64()),
                    ("plan", pa.string()),
                ]
            ),
        )
        if self._writer is None:
            self._writer = pq.ParquetWriter(str(self.path), table.schema)
        self._writer.write_table(table)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        elif self.path.exists():
            os.unlink(self.path)


def _plan(previous: dict[str, Any] | None, trace: Trace, spec: JudgeSpec) -> str | None:
    """The attempt to send for a trace, as JSON (``Attempt.as_dict``: kind, seed, temperature,
    the attempts before, and for a re-ask the broken reply and its problem); None when the
    retry policy keeps the stored cut or broken reply."""
    attempt = spec.next_attempt(trace.trace_id, previous)
    return None if attempt is None else json.dumps(attempt.as_dict())


def _engine_row(row: dict[str, Any], spec: JudgeSpec) -> dict[str, Any]:
    """A Ray row of one trace: the live path's chat body through the one adapter."""
    trace = Trace.model_validate_json(row["trace"])
    attempt = Attempt.from_dict(json.loads(row["plan"]), spec.first_attempt(trace.trace_id))
    body = spec.attempt_body(trace, row["answer"] or None, attempt)
    request = engine_request(body)
    return {**row, "messages": request.messages, "sampling_params": request.sampling}


def _engine_records(
    dataset: Any, spec: JudgeSpec, judge_id: str, actors: int, batch_size: int
) -> Iterator[str]:
    """Records from Ray's vLLM engine processor (see the module docstring)."""
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    config = spec.config
    template_kwargs = spec.template_kwargs()
    settings = engine_settings(config)
    settings.pop("seed", None)  # per request
    try:  # Ray hands engine_kwargs to AsyncEngineArgs, which wants the config object
        from vllm.config import StructuredOutputsConfig

        settings["structured_outputs_config"] = StructuredOutputsConfig(
            **settings["structured_outputs_config"]
        )
    except ImportError:  # a driver without vllm: the workers' VllmConfig validates the dict
        pass
    processor = build_processor(
        vLLMEngineProcessorConfig(
            model_source=str(config.model),
            engine_kwargs=settings,
            # Ray's default exports vLLM's metrics through ray.serve, which ray[data] (the ray
            # extra) lacks: every engine actor died with "RayPrometheusMetric requires Ray to
            # be installed" (tests/real/test_ray.py).
            log_engine_metrics=False,
            concurrency=actors,
            batch_size=batch_size,
        ),
        preprocess=lambda row: _engine_row(row, spec),
        postprocess=lambda row: {
            "trace": row["trace"],
            "answer": row["answer"],
            "inclusion_prob": row["inclusion_prob"],
            "plan": row["plan"],
            "generated_text": row.get("generated_text", ""),
            "num_generated_tokens": row.get("num_generated_tokens"),
        },
        builder_kwargs={"chat_template_kwargs": template_kwargs} if template_kwargs else None,
    )
    for row in processor(dataset).iter_rows():
        yield _engine_record(row, spec, judge_id)


def _engine_record(row: dict[str, Any], spec: JudgeSpec, judge_id: str) -> str:
    """The record of one row Ray's processor generated, validated by the one validator."""
    max_tokens = spec.config.max_tokens
    used = row.get("num_generated_tokens")
    # Ray's processor passes no finish reason on: a reply that used every token was cut.
    cut = isinstance(used, int) and used >= max_tokens
    completion = {
        "choices": [
            {
                "message": {"content": row["generated_text"] or ""},
                "finish_reason": "length" if cut else "stop",
            }
        ]
    }

    def results_of(n_steps: int) -> list[JudgeResult]:
        return parse_completion(completion, spec.label_type, n_steps=n_steps, max_tokens=max_tokens)

    prob = float(row["inclusion_prob"])
    return round_record(
        spec,
        Trace.model_validate_json(row["trace"]),
        row["answer"] or None,
        results_of,
        json.loads(row["plan"]),
        judge_id=judge_id,
        inclusion_prob=prob if prob >= 0 else None,
    ).model_dump_json()
