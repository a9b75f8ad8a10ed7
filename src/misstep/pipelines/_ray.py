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
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from misstep.errors import BackendNotInstalledError, OptionError
from misstep.judge import (
    JudgeConfig,
    RetryPolicy,
    bounded_schema,
    chat_body,
    create_judge,
    engine_request,
    judge_id,
    label_json_schema,
    parse_completion,
    reask_messages,
    request_seed,
)
from misstep.labels import (
    LabelStatus,
    LabelStore,
    StoredLabel,
    add_to_history,
    read_manifest,
    run_dir_lock,
    write_manifest,
)
from misstep.pipelines._batch import _problem, _retry_state, _tries_of
from misstep.pipelines._budget import label_sample
from misstep.pipelines._label import (
    NOT_SAMPLED,
    REJECTS_FILE,
    LabelProgress,
    LabelRunSummary,
    _check_one_judge,
    _check_same_input,
    _load_index,
    _manifest,
    _Run,
    _with_outcomes,
    record_of,
    skipped_record,
)
from misstep.prompts import prompt_hash, render_judge_prompt
from misstep.rollouts import Outcome, RejectSink, Trace, input_digest, load_graded

if TYPE_CHECKING:
    import pandas as pd

    from misstep.taxonomy import Taxonomy

__all__ = ["import_ray", "label_with_ray"]

WORK_FILE = "ray_work.parquet"


def import_ray() -> Any:
    """The ``ray`` module (with ``ray.data``), or BackendNotInstalledError naming the extra."""
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise BackendNotInstalledError(
            backend="ray", extra="ray", reason=f"ray cannot be imported ({exc})"
        ) from None
    return ray


class _JudgeActor:
    """A Ray actor holding one misstep client; labels a batch of rows concurrently."""

    def __init__(self, config: str, taxonomy_path: str | None) -> None:
        from misstep.taxonomy import load_taxonomy

        self.config = JudgeConfig.model_validate_json(config)
        self.taxonomy = load_taxonomy(taxonomy_path)
        self.loop = asyncio.new_event_loop()
        judge = create_judge(self.config, self.taxonomy)
        self.run = _Run(
            judge=judge,
            config=self.config,
            taxonomy=self.taxonomy,
            store=None,
            progress=LabelProgress(),
            on_progress=None,
            call_limit=self.config.concurrency,
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
    include_correct: bool = False,
    input_format: str | None = None,
    regrade: bool = False,
    add_judge: bool = False,
    limit: int | None = None,
    per_checkpoint: int | None = None,
    pilot: int | None = None,
    skip_invalid: bool = False,
    cache: bool = True,
) -> LabelRunSummary:
    """Label the traces of ``traces_path`` into ``run_dir`` on Ray (see the module docstring).
    Ray must be initialised (``ray.init(...)``) or it starts a local cluster."""
    import time

    if engine and config.samples > 1:
        raise OptionError(
            option="--samples",
            value=config.samples,
            allowed="1 with --ray and --judge vllm: Ray's vLLM processor keeps only the first "
            "output of a request",
            hint="use --ray with --judge openai (servers) for several samples per trace",
        )
    ray = import_ray()
    start = time.perf_counter()
    traces_path, run_dir = Path(traces_path), Path(run_dir)
    digest = input_digest(traces_path)
    _check_same_input(run_dir, traces_path, digest)
    rejects = RejectSink(run_dir / REJECTS_FILE, source=traces_path) if skip_invalid else None
    try:
        graded = load_graded(
            traces_path,
            input_format=input_format,
            regrade=regrade,
            rejects=rejects,
            digest=digest,
            cache=cache,
        )
    finally:
        if rejects is not None:
            rejects.close()
    sample = label_sample(
        graded.table,
        per_stratum=per_checkpoint,
        total=pilot,
        include_correct=include_correct,
        seed=config.seed,
    )
    judge = None if engine else create_judge(config, taxonomy)
    judge_id = judge.judge_id if judge is not None else _engine_judge_id(config, taxonomy)
    written: Counter[str] = Counter()
    status_counts: Counter[str] = Counter()
    resumed = 0
    prompt_tokens = completion_tokens = 0
    try:
        with run_dir_lock(run_dir):
            _check_one_judge(run_dir, judge_id, add_judge)
            index = _load_index(run_dir / "labels.jsonl")
            retry = _retry_state(run_dir / "labels.jsonl", judge_id) if engine else {}
            policy = RetryPolicy()
            work = run_dir / WORK_FILE
            rows = 0
            with LabelStore(run_dir) as store:
                batch: list[dict[str, Any]] = []
                writer = _ParquetRows(work)
                for n, (trace, outcome, answer) in enumerate(
                    _with_outcomes(traces_path, input_format, graded.table, skip_invalid)
                ):
                    if limit is not None and n >= limit:
                        break
                    send = outcome is Outcome.WRONG or (
                        include_correct and outcome is Outcome.CORRECT
                    )
                    current = index.get(trace.trace_id)
                    already_ok = current is not None and current[:2] == ("ok", judge_id)
                    reason = outcome.value
                    # left out of the budget (an ok label of an earlier, larger run is kept)
                    sampled = sample is None or trace.trace_id in sample
                    if send and not sampled and not already_ok:
                        send, reason = False, NOT_SAMPLED
                    if not send:
                        status_counts["skipped"] += 1
                        if current is None or current[:3] != ("skipped", judge_id, reason):
                            store.append(skipped_record(trace, judge_id, reason, config.samples))
                            written["skipped"] += 1
                        continue
                    if already_ok:
                        resumed += 1
                        status_counts["ok"] += 1
                        continue
                    prob = -1.0 if sample is None else float(sample.get(trace.trace_id, -1.0))
                    plan = _plan(retry.get(trace.trace_id), trace, config, policy)
                    if plan is None:  # the retry policy keeps the cut or broken reply
                        status_counts[str(retry[trace.trace_id]["status"])] += 1
                        continue
                    batch.append(
                        {
                            "trace": trace.model_dump_json(),
                            "answer": answer or "",
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
                manifest = _manifest(
                    traces_path,
                    config,
                    taxonomy,
                    judge if judge is not None else _Named(judge_id),
                    {
                        "mode": "ray-engine" if engine else "ray",
                        "actors": actors,
                        "include_correct": include_correct,
                        "limit": limit,
                        "per_checkpoint": per_checkpoint,
                        "pilot": pilot,
                        "skip_invalid": skip_invalid,
                    },
                    digest,
                )
                write_manifest(run_dir, add_to_history(read_manifest(run_dir), manifest))
                if rows:
                    dataset = ray.data.read_parquet(str(work))
                    if engine:
                        records = _engine_records(
                            dataset, config, taxonomy, judge_id, actors, batch_size
                        )
                    else:
                        records = (
                            row["record"]
                            for row in dataset.map_batches(
                                _JudgeActor,
                                fn_constructor_kwargs={
                                    "config": config.model_dump_json(),
                                    "taxonomy_path": config.taxonomy_path,
                                },
                                compute=ray.data.ActorPoolStrategy(size=actors),
                                # an actor mostly waits on the network: a quarter of a CPU
                                # leaves the cluster's CPUs to reading the rows
                                num_cpus=0.25,
                                batch_size=batch_size,
                                batch_format="pandas",
                            ).iter_rows()
                        )
                    for raw in records:
                        label = StoredLabel.model_validate_json(raw)
                        store.append(label)
                        written[label.status.value] += 1
                        status_counts[label.status.value] += 1
                        prompt_tokens += label.prompt_tokens or 0
                        completion_tokens += label.completion_tokens or 0
            work.unlink(missing_ok=True)
    finally:
        if judge is not None:
            asyncio.run(judge.aclose())
    return LabelRunSummary(
        run_dir=str(run_dir),
        judge=judge_id,
        traces=sum(status_counts.values()),
        written=sum(written.values()),
        resumed=resumed,
        rejected=rejects.count if rejects is not None else 0,
        calls=0,
        seconds=round(time.perf_counter() - start, 3),
        status_counts=dict(status_counts),
        written_counts=dict(written),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


class _Named:
    def __init__(self, judge_id: str) -> None:
        self.judge_id = judge_id


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


def _engine_judge_id(config: JudgeConfig, taxonomy: Taxonomy) -> str:
    # The live path's id: what is asked, not the wire.
    return judge_id(config, taxonomy.hash, prompt_hash(), label_json_schema(taxonomy))


def _plan(
    previous: dict[str, Any] | None, trace: Trace, config: JudgeConfig, policy: RetryPolicy
) -> str | None:
    """The attempt to send for a trace, as JSON (kind, seed, temperature, the attempts before,
    and for a re-ask the broken reply and its problem); None when the retry policy keeps the
    stored cut or broken reply."""
    first_seed = request_seed(config.seed, trace.trace_id, 0)
    plan: dict[str, Any] = {
        "kind": "first",
        "seed": first_seed,
        "temperature": config.temperature,
        "before": [],
    }
    if previous is not None:
        before = _tries_of(previous, first_seed, config.temperature)
        step = policy.next_try(before, LabelStatus(str(previous["status"])), config.temperature)
        if step is None:
            return None
        plan.update(kind=step[0], seed=step[1], temperature=step[2])
        plan["before"] = [t.as_dict() for t in before]
        if step[0] == "reask":
            plan["raw"] = str(previous.get("raw_reply") or "")
            plan["problem"] = _problem(str(previous.get("reason") or ""))
    return json.dumps(plan)


def _engine_row(row: dict[str, Any], config: JudgeConfig, taxonomy: Taxonomy) -> dict[str, Any]:
    """A Ray row of one trace: the live path's chat body through the one adapter."""
    trace = Trace.model_validate_json(row["trace"])
    plan = json.loads(row["plan"])
    rendered = render_judge_prompt(
        taxonomy, trace, row["answer"] or None, max_trace_tokens=config.max_trace_tokens
    )
    messages = rendered.messages
    if plan["kind"] == "reask":
        messages = reask_messages(messages, plan["raw"], plan["problem"])
    body = chat_body(
        model=str(config.model),
        messages=messages,
        schema=bounded_schema(
            label_json_schema(taxonomy), len(rendered.steps), max_tokens=config.max_tokens
        ),
        name="Label",
        temperature=float(plan["temperature"]),
        max_tokens=config.max_tokens,
        seed=int(plan["seed"]),
        n=1,
        reasoning_effort=config.reasoning_effort,
        chat_template_kwargs=config.chat_template_kwargs,
    )
    request = engine_request(body)
    return {**row, "messages": request.messages, "sampling_params": request.sampling}


def _engine_records(
    dataset: Any,
    config: JudgeConfig,
    taxonomy: Taxonomy,
    judge_id: str,
    actors: int,
    batch_size: int,
) -> Any:
    """Records from Ray's vLLM engine processor (see the module docstring)."""
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    from misstep.judge import engine_settings, label_model

    template_kwargs = engine_request(
        chat_body(
            model="",
            messages=[],
            schema={},
            name="Label",
            temperature=0.0,
            max_tokens=1,
            seed=0,
            reasoning_effort=config.reasoning_effort,
            chat_template_kwargs=config.chat_template_kwargs,
        )
    ).chat_template_kwargs
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
        preprocess=lambda row: _engine_row(row, config, taxonomy),
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
    label_type = label_model(taxonomy)
    order = {key: i for i, key in enumerate(taxonomy.keys)}
    for row in processor(dataset).iter_rows():
        trace = Trace.model_validate_json(row["trace"])
        rendered = render_judge_prompt(
            taxonomy, trace, row["answer"] or None, max_trace_tokens=config.max_trace_tokens
        )
        steps = list(rendered.steps)
        used = row.get("num_generated_tokens")
        # Ray's processor passes no finish reason on: a reply that used every token was cut.
        cut = isinstance(used, int) and used >= config.max_tokens
        completion = {
            "choices": [
                {
                    "message": {"content": row["generated_text"] or ""},
                    "finish_reason": "length" if cut else "stop",
                }
            ]
        }
        results = parse_completion(
            completion, label_type, n_steps=len(steps), max_tokens=config.max_tokens
        )
        plan = json.loads(row["plan"])
        tries = [
            *plan["before"],
            {
                "kind": plan["kind"],
                "seed": plan["seed"],
                "temperature": plan["temperature"],
                "status": results[0].status.value,
            },
        ]
        results[0].extra["tries"] = tries
        prob = float(row["inclusion_prob"])
        yield record_of(
            trace,
            results,
            steps,
            judge=judge_id,
            samples=config.samples,
            order=order,
            attempts=len(tries),
            trace_cut=rendered.trace_cut,
            inclusion_prob=prob if prob >= 0 else None,
        ).model_dump_json()
