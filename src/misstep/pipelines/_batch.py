"""Batch labelling through files: ``export-requests`` writes the judge requests in the OpenAI
batch format that ``vllm run-batch`` reads; ``ingest-replies`` reads its output and stores the
labels, validated exactly as the live path validates a reply.

``RUN_DIR/requests.jsonl``, one line per trace to judge::

    {"custom_id": TRACE_ID, "method": "POST", "url": "/v1/chat/completions", "body": {...}}

(the body the ``openai`` backend would send: the rendered prompt, every sampling field explicit,
the label schema as ``response_format``), and ``RUN_DIR/requests.parquet`` with the same rows
(``custom_id``, ``body`` as JSON text) for Ray Data. Traces that are not judged (truncated, no
answer, correct) get their ``skipped`` record at export, as ``misstep label`` writes them; a
trace whose current record is already ``ok`` under this judge is not exported again.

``ingest-replies`` reads ``vllm run-batch``'s output lines::

    {"id": ..., "custom_id": TRACE_ID, "response": {"status_code": 200, "body": {...}},
     "error": null}

and, per reply, re-renders the trace's prompt from the input (the manifest names it and its
SHA-256; a changed input is refused) to check the step range and the evidence quote; a reply
with an error or a status other than 200 is a ``failed`` record naming it. It is resumable (a
trace already ``ok`` under this judge is left alone) and counts the requests still without a
reply. The judge id is ``batch:<model>:<hash>``, the hash covering what the live path's covers.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel, Field

from misstep.errors import InputError, InvalidRecordError, LabelStoreError, OptionError
from misstep.judge import (
    JudgeConfig,
    JudgeResult,
    judge_id,
    label_json_schema,
    label_model,
    request_seed,
)
from misstep.labels import (
    LabelStatus,
    LabelStore,
    add_to_history,
    read_manifest,
    run_dir_lock,
    write_manifest,
)
from misstep.pipelines._label import (
    _check_one_judge,
    _check_same_input,
    _check_step,
    _load_index,
    _manifest,
    _with_outcomes,
    record_of,
    skipped_record,
)
from misstep.prompts import prompt_hash, render_judge_prompt
from misstep.rollouts import Outcome, input_digest, load_graded

if TYPE_CHECKING:
    from misstep.taxonomy import Taxonomy

__all__ = [
    "REPLIES_HINT",
    "REQUESTS_FILE",
    "ExportSummary",
    "IngestSummary",
    "export_requests",
    "ingest_replies",
]

REQUESTS_FILE = "requests.jsonl"
REQUESTS_PARQUET = "requests.parquet"
BATCH_BACKEND = "batch"
REPLIES_HINT = (
    "vllm run-batch -i RUN_DIR/requests.jsonl -o replies.jsonl --model MODEL, then "
    "misstep ingest-replies RUN_DIR replies.jsonl"
)


class ExportSummary(BaseModel):
    """What ``export_requests`` wrote."""

    run_dir: str
    """The run directory."""
    judge: str
    """Judge id the ingested labels will carry."""
    requests: int
    """Requests written to requests.jsonl."""
    skipped: int
    """Traces not judged (truncated, no answer, correct), with their skipped record."""
    already_ok: int
    """Traces already labelled ok by this judge: not exported again."""


class IngestSummary(BaseModel):
    """What ``ingest_replies`` stored."""

    run_dir: str
    """The run directory."""
    judge: str
    """Judge id of the stored labels."""
    replies: int
    """Reply lines read."""
    written_counts: dict[str, int] = Field(default_factory=dict)
    """Records appended, per status."""
    already_ok: int = 0
    """Replies for traces already labelled ok by this judge: left alone."""
    unknown: int = 0
    """Replies whose custom_id is no trace of the input to judge."""
    awaiting: int = 0
    """Exported requests still without a reply (and without an ok label)."""
    prompt_tokens: int = 0
    """Prompt tokens the server counted for the ingested replies."""
    completion_tokens: int = 0
    """Completion tokens the server counted for the ingested replies."""


@dataclass
class _BatchJudge:
    """What the manifest reads from a judge, for a judge that is a file."""

    judge_id: str
    server_model: str | None = None


def _batch_config(config: JudgeConfig) -> JudgeConfig:
    if not config.model:
        raise OptionError(
            option="--model",
            value=None,
            allowed="the model vllm run-batch will serve (it goes into every request)",
            hint="e.g. --model Qwen/Qwen2.5-7B-Instruct",
        )
    if config.samples > 1 and config.temperature <= 0:
        raise OptionError(
            option="--samples",
            value=config.samples,
            allowed="1 at temperature 0 (greedy samples are copies of one another)",
            hint="pass --temperature above 0 with --samples",
        )
    return config.model_copy(update={"backend": BATCH_BACKEND, "base_url": None})


def _judge_id(config: JudgeConfig, taxonomy: Taxonomy) -> str:
    return judge_id(config, taxonomy.hash, prompt_hash(), label_json_schema(taxonomy))


def export_requests(
    traces_path: str | Path,
    run_dir: str | Path,
    config: JudgeConfig,
    *,
    taxonomy: Taxonomy,
    include_correct: bool = False,
    limit: int | None = None,
    input_format: str | None = None,
    regrade: bool = False,
    add_judge: bool = False,
    cache: bool = True,
) -> ExportSummary:
    """Write ``RUN_DIR/requests.jsonl`` (and ``.parquet``) and the run's manifest (see the
    module docstring)."""
    from misstep.judge._openai import request_body

    traces_path, run_dir = Path(traces_path), Path(run_dir)
    config = _batch_config(config)
    model = str(config.model)
    digest = input_digest(traces_path)
    _check_same_input(run_dir, traces_path, digest)
    graded = load_graded(
        traces_path, input_format=input_format, regrade=regrade, digest=digest, cache=cache
    )
    jid = _judge_id(config, taxonomy)
    schema = label_json_schema(taxonomy)
    with run_dir_lock(run_dir):
        _check_one_judge(run_dir, jid, add_judge)
        index = _load_index(run_dir / "labels.jsonl")
        requests = skipped = already = 0
        rows: list[dict[str, str]] = []
        tmp = run_dir / f".{REQUESTS_FILE}.{os.getpid()}.tmp"
        with LabelStore(run_dir) as store, open(tmp, "wb") as out:
            for n, (trace, outcome, answer) in enumerate(
                _with_outcomes(traces_path, input_format, graded.table, False)
            ):
                if limit is not None and n >= limit:
                    break
                current = index.get(trace.trace_id)
                send = outcome is Outcome.WRONG or (include_correct and outcome is Outcome.CORRECT)
                if not send:
                    skipped += 1
                    if current is None or current[:3] != ("skipped", jid, outcome.value):
                        store.append(skipped_record(trace, jid, outcome.value, config.samples))
                    continue
                if current is not None and current.status == "ok" and current.judge == jid:
                    already += 1
                    continue
                rendered = render_judge_prompt(
                    taxonomy, trace, answer, max_trace_tokens=config.max_trace_tokens
                )
                body = request_body(
                    model=model,
                    messages=rendered.messages,
                    schema=schema,
                    temperature=config.temperature,
                    max_tokens=config.max_tokens,
                    seed=request_seed(config.seed, trace.trace_id, 0),
                    n=config.samples,
                    reasoning_effort=config.reasoning_effort,
                    chat_template_kwargs=config.chat_template_kwargs,
                )
                line = {
                    "custom_id": trace.trace_id,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": body,
                }
                out.write(orjson.dumps(line) + b"\n")
                rows.append({"custom_id": trace.trace_id, "body": json.dumps(body)})
                requests += 1
        os.replace(tmp, run_dir / REQUESTS_FILE)
        _write_parquet(run_dir / REQUESTS_PARQUET, rows)
        options = {
            "mode": "batch",
            "include_correct": include_correct,
            "limit": limit,
            "input_format": input_format,
            "regrade": regrade,
        }
        manifest = _manifest(
            traces_path, config, taxonomy, _BatchJudge(jid, model), options, digest
        )
        write_manifest(run_dir, add_to_history(read_manifest(run_dir), manifest))
    return ExportSummary(
        run_dir=str(run_dir), judge=jid, requests=requests, skipped=skipped, already_ok=already
    )


def _write_parquet(path: Path, rows: list[dict[str, str]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "custom_id": pa.array([r["custom_id"] for r in rows], pa.string()),
            "body": pa.array([r["body"] for r in rows], pa.string()),
        }
    )
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _read_replies(path: Path) -> dict[str, dict[str, Any]]:
    """custom_id -> reply line of a ``vllm run-batch`` output file (the last one wins)."""
    replies: dict[str, dict[str, Any]] = {}
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    with fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                line = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise InvalidRecordError(
                    path=path,
                    line=number,
                    reason=f"not a JSON object ({str(exc).splitlines()[0][:80]})",
                    hint="a reply file is what `vllm run-batch -o FILE` writes, one JSON "
                    "object per line",
                ) from None
            custom_id = line.get("custom_id") if isinstance(line, dict) else None
            if not isinstance(custom_id, str):
                raise InvalidRecordError(
                    path=path, line=number, field="custom_id", reason="missing or not a string"
                )
            replies[custom_id] = line
    return replies


def _reply_results(
    reply: dict[str, Any], label_type: type[BaseModel], max_tokens: int
) -> list[JudgeResult]:
    from misstep.judge._openai import results_from_completion

    error = reply.get("error")
    response = reply.get("response") if isinstance(reply.get("response"), dict) else None
    status = response.get("status_code") if response else None
    if error or response is None or status != 200:
        body = response.get("body") if response else None
        message = None
        if isinstance(body, dict):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, dict) else None
        if isinstance(error, dict):
            message = message or error.get("message")
        elif error:
            message = message or str(error)
        reason = f"batch reply: HTTP {status}" if status is not None else "batch reply: error"
        if message:
            reason += ": " + " ".join(str(message).split())[:300]
        return [JudgeResult(status=LabelStatus.FAILED, reason=reason)]
    return results_from_completion(response.get("body"), label_type, max_tokens)


def ingest_replies(
    run_dir: str | Path,
    replies_path: str | Path,
    *,
    taxonomy: Taxonomy,
) -> IngestSummary:
    """Store the labels of a ``vllm run-batch`` output file (see the module docstring)."""
    run_dir, replies_path = Path(run_dir), Path(replies_path)
    manifest = read_manifest(run_dir)
    if manifest is None or manifest.options.get("mode") != "batch" or not manifest.inputs:
        raise LabelStoreError(
            path=run_dir,
            reason="it holds no exported requests (no batch manifest)",
            hint="run `misstep export-requests TRACES --out RUN_DIR --model MODEL` first",
        )
    if manifest.taxonomy_hash != taxonomy.hash:
        raise OptionError(
            option="--taxonomy",
            value=taxonomy.id,
            allowed=f"the taxonomy the requests were made with ({manifest.taxonomy_id}, hash "
            f"{manifest.taxonomy_hash[:12]})",
        )
    config = JudgeConfig.model_validate(manifest.judge_config)
    traces_path = Path(manifest.inputs[0].path)
    if not traces_path.exists():
        raise LabelStoreError(
            path=run_dir, reason=f"its input {traces_path} is gone", hint="put it back"
        )
    digest = input_digest(traces_path)
    if manifest.input_sha256 not in (None, digest):
        raise LabelStoreError(
            path=run_dir,
            reason=f"its input {traces_path} changed since the requests were exported",
            hint="export the requests again",
        )
    jid = manifest.judge
    if jid != _judge_id(config, taxonomy):
        raise LabelStoreError(
            path=run_dir,
            reason="the prompt or the schema changed since the requests were exported (another "
            "misstep version?)",
            hint="export the requests again",
        )
    replies = _read_replies(replies_path)
    options = manifest.options
    input_format = options.get("input_format")
    graded = load_graded(
        traces_path, input_format=input_format, regrade=bool(options.get("regrade")), digest=digest
    )
    label_type = label_model(taxonomy)
    order = {key: i for i, key in enumerate(taxonomy.keys)}
    requested = _requested_ids(run_dir / REQUESTS_FILE)
    summary = IngestSummary(run_dir=str(run_dir), judge=jid, replies=len(replies))
    written: Counter[str] = Counter()
    seen: set[str] = set()
    with run_dir_lock(run_dir):
        index = _load_index(run_dir / "labels.jsonl")
        with LabelStore(run_dir) as store:
            for trace, _, answer in _with_outcomes(traces_path, input_format, graded.table, False):
                reply = replies.get(trace.trace_id)
                if reply is None:
                    continue
                seen.add(trace.trace_id)
                if trace.trace_id not in requested:
                    continue  # a reply to a request this run did not export
                current = index.get(trace.trace_id)
                if current is not None and current.status == "ok" and current.judge == jid:
                    summary.already_ok += 1
                    continue
                rendered = render_judge_prompt(
                    taxonomy, trace, answer, max_trace_tokens=config.max_trace_tokens
                )
                steps = list(rendered.steps)
                results = [
                    _check_step(r, len(steps))
                    for r in _reply_results(reply, label_type, config.max_tokens)
                ]
                record = record_of(
                    trace,
                    results,
                    steps,
                    judge=jid,
                    samples=config.samples,
                    order=order,
                    attempts=1,
                    trace_cut=rendered.trace_cut,
                )
                store.append(record)
                written[record.status.value] += 1
                summary.prompt_tokens += record.prompt_tokens or 0
                summary.completion_tokens += record.completion_tokens or 0
        index = _load_index(run_dir / "labels.jsonl")
    summary.written_counts = dict(written)
    summary.unknown = sum(1 for custom_id in replies if custom_id not in requested)
    summary.awaiting = sum(
        1
        for custom_id in requested
        if custom_id not in seen
        and not (index.get(custom_id) is not None and index[custom_id][:2] == ("ok", jid))
    )
    return summary


def _requested_ids(path: Path) -> set[str]:
    ids: set[str] = set()
    with contextlib.suppress(FileNotFoundError), open(path, "rb") as fh:
        for raw in fh:
            if raw.strip():
                ids.add(str(orjson.loads(raw)["custom_id"]))
    return ids
