"""Batch labelling through files: export the requests, ingest a ``vllm run-batch`` output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from misstep.cli.app import app
from misstep.judge import JudgeConfig, bounded_schema, label_json_schema, request_seed
from misstep.labels import LabelStatus, read_labels, read_manifest
from misstep.pipelines import export_requests, ingest_replies
from misstep.prompts import render_judge_prompt
from misstep.rollouts import read_traces
from misstep.taxonomy import load_taxonomy
from tests.judge.fake_openai import FakeOpenAIServer
from tests.pipelines.test_label import _mixed, _row, _write

TAXONOMY = load_taxonomy(None)
runner = CliRunner()


def _config(**kw: Any) -> JudgeConfig:
    return JudgeConfig(backend="batch", model="judge-7b", **kw)


def _run_batch(
    run: Path, out: Path, *, skip: set[str] = frozenset(), fail: set[str] = frozenset()
) -> Path:
    """What ``vllm run-batch -i requests.jsonl -o out`` writes: each request's body answered
    by the fake server's model (no HTTP needed: the file format is under test here)."""
    server = FakeOpenAIServer(models=("judge-7b",))
    lines = []
    for n, raw in enumerate((run / "requests.jsonl").read_bytes().splitlines()):
        request = orjson.loads(raw)
        custom_id = request["custom_id"]
        if custom_id in skip:
            continue
        if custom_id in fail:
            status, body = (
                400,
                {"error": {"message": "maximum context length is 4096 tokens", "code": 400}},
            )
        else:
            status, body = server.answer(request["body"])
        lines.append(
            {
                "id": f"vllm-{n}",
                "custom_id": custom_id,
                "response": {"status_code": status, "request_id": f"vllm-batch-{n}", "body": body},
                "error": None,
            }
        )
    out.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return out


def test_export_writes_the_batch_format_and_the_skipped_records(tmp_path: Path) -> None:
    traces, run = _mixed(tmp_path), tmp_path / "run"
    summary = export_requests(traces, run, _config(seed=5), taxonomy=TAXONOMY)
    assert (summary.requests, summary.skipped, summary.already_ok) == (6, 4, 0)
    lines = [orjson.loads(x) for x in (run / "requests.jsonl").read_bytes().splitlines()]
    assert [x["custom_id"] for x in lines] == [f"t{i}" for i in range(6)]
    first = lines[0]
    assert first["method"] == "POST" and first["url"] == "/v1/chat/completions"
    body = first["body"]
    assert body["model"] == "judge-7b"
    assert body["seed"] == request_seed(5, "t0", 0)
    # the label schema with this trace's bounds: its steps are numbered 0..n-1
    n_steps = len(render_judge_prompt(TAXONOMY, read_traces(traces).__next__(), None).steps)
    assert body["response_format"]["json_schema"]["schema"] == bounded_schema(
        label_json_schema(TAXONOMY), n_steps
    )
    step = body["response_format"]["json_schema"]["schema"]["properties"]["first_error_step"]
    assert step["maximum"] == n_steps - 1
    assert body["repetition_penalty"] == 1.0 and body["top_p"] == 1.0
    assert body["max_completion_tokens"] == 1024
    table = pq.read_table(run / "requests.parquet").to_pylist()
    assert [r["custom_id"] for r in table] == [x["custom_id"] for x in lines]
    assert json.loads(table[0]["body"]) == body
    labels = read_labels(run)
    assert {t for t, lab in labels.items() if lab.status is LabelStatus.SKIPPED} == {
        "t6",
        "t7",
        "t8",
        "t9",
    }
    manifest = read_manifest(run)
    assert manifest is not None and manifest.options["mode"] == "batch"
    assert manifest.judge.startswith("llm:judge-7b:")


def test_replies_are_ingested_like_live_replies_and_resumably(tmp_path: Path) -> None:
    rows = [
        _row(0),
        _row(1),
        _row(2, response="FAKE_FAULT:schema 2 + 3 = 6"),
        _row(3, response="FAKE_FAULT:truncated 3 + 3 = 7"),
        _row(4),
        _row(5),
    ]
    traces, run = _write(tmp_path / "t.jsonl", rows), tmp_path / "run"
    export_requests(traces, run, _config(), taxonomy=TAXONOMY)
    replies = _run_batch(run, tmp_path / "out.jsonl", skip={"t5"}, fail={"t4"})
    summary = ingest_replies(run, replies, taxonomy=TAXONOMY)
    assert summary.replies == 5
    assert summary.written_counts == {"ok": 2, "unparseable": 1, "truncated": 1, "failed": 1}
    assert summary.awaiting == 1  # t5 has no reply yet
    assert summary.completion_tokens == 4 * 40  # the fake's usage, for the four answered
    labels = read_labels(run)
    assert labels["t0"].status is LabelStatus.OK and labels["t0"].evidence_verified
    assert labels["t2"].status is LabelStatus.UNPARSEABLE
    assert labels["t3"].status is LabelStatus.TRUNCATED
    assert labels["t4"].status is LabelStatus.FAILED
    assert "HTTP 400" in (labels["t4"].reason or "")
    assert "maximum context length" in (labels["t4"].reason or "")
    # the rest of the batch arrives: only what is not ok yet is stored again
    full = _run_batch(run, tmp_path / "out2.jsonl")
    again = ingest_replies(run, full, taxonomy=TAXONOMY)
    assert again.already_ok == 2
    assert again.awaiting == 0
    assert again.written_counts["ok"] == 2  # t4 and t5
    # and exporting again sends only what has no ok label: the broken and the cut reply,
    # retried as the live path retries them
    summary2 = export_requests(traces, run, _config(), taxonomy=TAXONOMY)
    assert summary2.requests == 2 and summary2.already_ok == 4 and summary2.retries == 2
    sent = {
        x["custom_id"]: x["body"]
        for x in map(orjson.loads, (run / "requests.jsonl").read_bytes().splitlines())
    }
    seed = request_seed(0, "t3", 0)
    assert (sent["t3"]["seed"], sent["t3"]["temperature"]) == (seed + 1_000_003, 0.3)
    reask = sent["t2"]["messages"]
    assert [m["role"] for m in reask[-2:]] == ["assistant", "user"]
    assert reask[-2]["content"] == labels["t2"].raw_reply
    assert "not a JSON object that fits" in reask[-1]["content"]
    # their replies are stored with every attempt listed; the policy then gives up
    ingest_replies(run, _run_batch(run, tmp_path / "out3.jsonl"), taxonomy=TAXONOMY)
    labels = read_labels(run)
    assert [t["kind"] for t in labels["t3"].tries or []] == ["first", "cut-retry"]
    assert labels["t3"].attempts == 2
    assert [t["kind"] for t in labels["t2"].tries or []] == ["first", "reask"]
    summary3 = export_requests(traces, run, _config(), taxonomy=TAXONOMY)
    assert (summary3.requests, summary3.given_up) == (0, 2)


def test_ingest_names_duplicates_unknown_ids_and_another_model(tmp_path: Path) -> None:
    from misstep.errors import InvalidRecordError

    traces, run = _write(tmp_path / "t.jsonl", [_row(0), _row(1)]), tmp_path / "run"
    export_requests(traces, run, _config(), taxonomy=TAXONOMY)
    replies = _run_batch(run, tmp_path / "out.jsonl")
    lines = replies.read_bytes().splitlines()
    # a later line for t0 (an HTTP 500) must not replace the earlier ok one silently
    late = orjson.loads(lines[0])
    late["response"] = {"status_code": 500, "body": None}
    doubled = tmp_path / "doubled.jsonl"
    doubled.write_bytes(b"\n".join([*lines, orjson.dumps(late)]) + b"\n")
    with pytest.raises(InvalidRecordError, match="already answered on line 1"):
        ingest_replies(run, doubled, taxonomy=TAXONOMY)
    assert read_labels(run).get("t0") is None  # nothing stored from the refused file
    other = orjson.loads(lines[1])
    other["response"]["body"]["model"] = "another-model"
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_bytes(lines[0] + b"\n" + orjson.dumps(other) + b"\n")
    with pytest.raises(InvalidRecordError, match="another-model"):
        ingest_replies(run, foreign, taxonomy=TAXONOMY)
    stray = orjson.loads(lines[1])
    stray["custom_id"] = "no-such-trace"
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(b"\n".join([*lines, orjson.dumps(stray)]) + b"\n")
    summary = ingest_replies(run, mixed, taxonomy=TAXONOMY)
    assert (summary.unknown, summary.unknown_ids) == (1, ["no-such-trace"])
    assert summary.written_counts == {"ok": 2}


def test_a_step_out_of_range_is_not_kept(tmp_path: Path) -> None:
    traces, run = _write(tmp_path / "t.jsonl", [_row(0)]), tmp_path / "run"
    export_requests(traces, run, _config(), taxonomy=TAXONOMY)
    replies = _run_batch(run, tmp_path / "out.jsonl")
    line = orjson.loads(replies.read_bytes())
    content = json.loads(line["response"]["body"]["choices"][0]["message"]["content"])
    content["first_error_step"] = 99
    line["response"]["body"]["choices"][0]["message"]["content"] = json.dumps(content)
    replies.write_bytes(orjson.dumps(line) + b"\n")
    ingest_replies(run, replies, taxonomy=TAXONOMY)
    label = read_labels(run)["t0"]
    assert label.status is LabelStatus.UNPARSEABLE
    assert "outside the" in (label.reason or "")


def test_ingest_refuses_a_changed_input(tmp_path: Path) -> None:
    traces, run = _write(tmp_path / "t.jsonl", [_row(0)]), tmp_path / "run"
    export_requests(traces, run, _config(), taxonomy=TAXONOMY)
    replies = _run_batch(run, tmp_path / "out.jsonl")
    _write(traces, [_row(0), _row(1)])
    from misstep.errors import LabelStoreError

    with pytest.raises(LabelStoreError, match="changed since the requests were exported"):
        ingest_replies(run, replies, taxonomy=TAXONOMY)


def test_cli_round_trip_and_a_bad_reply_line(tmp_path: Path) -> None:
    traces, run = _mixed(tmp_path), tmp_path / "run"
    result = runner.invoke(
        app, ["export-requests", str(traces), "--out", str(run), "--model", "judge-7b"]
    )
    assert result.exit_code == 0, result.output
    assert "vllm run-batch" in result.output
    replies = _run_batch(run, tmp_path / "out.jsonl")
    result = runner.invoke(app, ["ingest-replies", str(run), str(replies)])
    assert result.exit_code == 0, result.output
    assert "labels written: ok 6" in result.output
    stray = orjson.loads(replies.read_bytes().splitlines()[0])
    stray["custom_id"] = "ghost-7"
    with open(replies, "ab") as fh:
        fh.write(orjson.dumps(stray) + b"\n")
    result = runner.invoke(app, ["ingest-replies", str(run), str(replies)])
    assert result.exit_code == 0 and "'ghost-7'" in result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"custom_id": "t0", "response": {}}\nnot json\n')
    result = runner.invoke(app, ["ingest-replies", str(run), str(bad)])
    assert result.exit_code == 2
    assert "bad.jsonl, line 2" in result.output
    samples = runner.invoke(
        app,
        [
            "export-requests",
            str(traces),
            "--out",
            str(tmp_path / "r2"),
            "--model",
            "m",
            "--samples",
            "3",
        ],
    )
    assert samples.exit_code == 2 and "--temperature" in samples.output
