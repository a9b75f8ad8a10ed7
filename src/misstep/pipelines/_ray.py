"""Labelling on a Ray cluster (the ``misstep[ray]`` extra, imported lazily).

Two ways, both producing exactly the records ``misstep label`` writes (same statuses, same
validation, same resume, same judge id for the same configuration):

- **servers** (``engine=False``): Ray Data spreads the traces over ``actors`` Ray actors, each
  running misstep's own client (the ``openai`` backend: retries, failover between the
  ``--base-url`` servers, schema and step checks) against existing OpenAI-compatible servers,
  with ``concurrency`` requests in flight per actor. Tested on a local CPU cluster.
- **engine** (``engine=True``): Ray's vLLM engine processor on GPU nodes,
  ``ray.data.llm.build_processor`` with ``vLLMEngineProcessorConfig`` (``engine_kwargs`` from
  ``--engine-arg``, no free whitespace in the JSON grammar), the label schema as
  ``structured_outputs`` in each row's ``sampling_params`` together with the neutral sampling
  fields. Each generated text is validated as a server reply would be. Needs GPUs and vLLM
  on the cluster; not testable on a machine without them.

The driver renders the prompts, writes the rows to judge to ``RUN_DIR/ray_work.parquet`` (read
back by Ray as a stream, so memory stays flat), holds the run directory's lock, and appends
each record as it comes back: a run killed half-way resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from misstep.errors import BackendNotInstalledError
from misstep.judge import JudgeConfig, create_judge, request_seed
from misstep.labels import (
    LabelStore,
    StoredLabel,
    add_to_history,
    read_manifest,
    run_dir_lock,
    write_manifest,
)
from misstep.pipelines._label import (
    LabelProgress,
    LabelRunSummary,
    _check_one_judge,
    _check_same_input,
    _check_step,
    _load_index,
    _manifest,
    _Run,
    _with_outcomes,
    record_of,
    skipped_record,
)
from misstep.prompts import render_judge_prompt
from misstep.rollouts import Outcome, Trace, input_digest, load_graded

if TYPE_CHECKING:
    import pandas as pd

    from misstep.taxonomy import Taxonomy

__all__ = ["label_with_ray"]

WORK_FILE = "ray_work.parquet"


def _import_ray() -> Any:
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

        async def go() -> list[str]:
            labels = await asyncio.gather(
                *(
                    self.run.build(Trace.model_validate_json(t), a or None)
                    for t, a in zip(batch["trace"], batch["answer"], strict=True)
                )
            )
            return [label.model_dump_json() for label in labels]

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
    cache: bool = True,
) -> LabelRunSummary:
    """Label the traces of ``traces_path`` into ``run_dir`` on Ray (see the module docstring).
    Ray must be initialised (``ray.init(...)``) or it starts a local cluster."""
    import time

    ray = _import_ray()
    start = time.perf_counter()
    traces_path, run_dir = Path(traces_path), Path(run_dir)
    digest = input_digest(traces_path)
    _check_same_input(run_dir, traces_path, digest)
    graded = load_graded(
        traces_path, input_format=input_format, regrade=regrade, digest=digest, cache=cache
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
            work = run_dir / WORK_FILE
            rows = 0
            with LabelStore(run_dir) as store:
                batch: list[dict[str, Any]] = []
                writer = _ParquetRows(work)
                for trace, outcome, answer in _with_outcomes(
                    traces_path, input_format, graded.table, False
                ):
                    send = outcome is Outcome.WRONG or (
                        include_correct and outcome is Outcome.CORRECT
                    )
                    current = index.get(trace.trace_id)
                    if not send:
                        status_counts["skipped"] += 1
                        if current is None or current[:3] != ("skipped", judge_id, outcome.value):
                            store.append(
                                skipped_record(trace, judge_id, outcome.value, config.samples)
                            )
                            written["skipped"] += 1
                        continue
                    if current is not None and current[:2] == ("ok", judge_id):
                        resumed += 1
                        status_counts["ok"] += 1
                        continue
                    batch.append({"trace": trace.model_dump_json(), "answer": answer or ""})
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
                    {"mode": "ray-engine" if engine else "ray", "actors": actors},
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
        rejected=0,
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
            rows, schema=pa.schema([("trace", pa.string()), ("answer", pa.string())])
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
    from misstep.judge import judge_id, label_json_schema
    from misstep.prompts import prompt_hash

    return judge_id(
        config.model_copy(update={"backend": "ray-vllm"}),
        taxonomy.hash,
        prompt_hash(),
        label_json_schema(taxonomy),
    )


def _engine_records(
    dataset: Any,
    config: JudgeConfig,
    taxonomy: Taxonomy,
    judge_id: str,
    actors: int,
    batch_size: int,
) -> Any:
    """Records from Ray's vLLM engine processor (GPU nodes; see the module docstring)."""
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    from misstep.judge import label_json_schema, label_model
    from misstep.judge._config import NEUTRAL_SAMPLING
    from misstep.judge._openai import results_from_completion

    schema = label_json_schema(taxonomy)
    engine_kwargs = {
        "structured_outputs_config": {"disable_any_whitespace": True},
        **config.engine_args,
    }
    processor = build_processor(
        vLLMEngineProcessorConfig(
            model_source=str(config.model),
            engine_kwargs=engine_kwargs,
            concurrency=actors,
            batch_size=batch_size,
        ),
        preprocess=lambda row: {
            **row,
            "messages": render_judge_prompt(
                taxonomy,
                Trace.model_validate_json(row["trace"]),
                row["answer"] or None,
                max_trace_tokens=config.max_trace_tokens,
            ).messages,
            "sampling_params": {
                **NEUTRAL_SAMPLING,
                "temperature": config.temperature,
                "max_tokens": config.max_tokens,
                "n": config.samples,
                "seed": request_seed(
                    config.seed, Trace.model_validate_json(row["trace"]).trace_id, 0
                ),
                "structured_outputs": {"json": schema},
            },
        },
        postprocess=lambda row: {
            "trace": row["trace"],
            "answer": row["answer"],
            "generated_text": row.get("generated_text", ""),
            "finish_reason": row.get("finish_reason"),
        },
    )
    label_type = label_model(taxonomy)
    order = {key: i for i, key in enumerate(taxonomy.keys)}
    for row in processor(dataset).iter_rows():
        trace = Trace.model_validate_json(row["trace"])
        rendered = render_judge_prompt(
            taxonomy, trace, row["answer"] or None, max_trace_tokens=config.max_trace_tokens
        )
        steps = list(rendered.steps)
        completion = {
            "choices": [
                {
                    "message": {"content": row["generated_text"]},
                    "finish_reason": row.get("finish_reason") or "stop",
                }
            ]
        }
        results = [
            _check_step(r, len(steps))
            for r in results_from_completion(completion, label_type, config.max_tokens)
        ]
        yield record_of(
            trace,
            results,
            steps,
            judge=judge_id,
            samples=config.samples,
            order=order,
            attempts=1,
            trace_cut=rendered.trace_cut,
        ).model_dump_json()
