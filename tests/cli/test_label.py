"""``misstep label`` through typer's CliRunner: exit codes and messages."""

from __future__ import annotations

import importlib.util
import socket
import time
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from misstep.cli import app
from misstep.labels import LabelStatus, read_labels

runner = CliRunner()


def _traces(tmp_path: Path) -> Path:
    rows = [
        # step 1 claims 2 + 3 = 6: the rules judge reports arithmetic at step 1
        {"trace_id": "a", "problem_id": "p", "checkpoint": "ck1", "correct": False,
         "response": "We add 2 and 3.\n\n2 + 3 = 6\n\nThe answer is 6."},
        {"trace_id": "b", "problem_id": "p", "checkpoint": "ck1", "correct": True,
         "response": "2 + 3 = 5\n\nThe answer is 5."},
        {"trace_id": "c", "problem_id": "q", "checkpoint": "ck2", "correct": False,
         "response": "The answer is 7.", "finish_reason": "length"},
    ]  # fmt: skip
    path = tmp_path / "traces.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_rules_judge_labels_a_small_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    result = runner.invoke(app, ["label", str(_traces(tmp_path)), "--out", str(run)])
    assert result.exit_code == 0, result.output
    labels = read_labels(run)
    assert labels["a"].status is LabelStatus.OK
    assert labels["a"].error_type == "arithmetic"
    assert labels["a"].first_error_step == 1
    assert labels["b"].reason == "correct"
    assert labels["c"].reason == "truncated"
    assert "arithmetic" in result.output  # the per-checkpoint table's columns
    assert "3 traces read" in result.output
    # re-running resumes: nothing new is written
    again = runner.invoke(app, ["label", str(_traces(tmp_path)), "--out", str(run)])
    assert again.exit_code == 0, again.output
    assert "0 records written" in again.output
    assert "1 already labelled" in again.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_dead_server_exits_3_within_seconds_naming_the_url(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    start = time.perf_counter()
    result = runner.invoke(
        app,
        ["label", str(_traces(tmp_path)), "--out", str(tmp_path / "run"),
         "--judge", "openai", "--base-url", url],
    )  # fmt: skip
    assert time.perf_counter() - start < 5.0
    assert result.exit_code == 3
    assert url in result.output
    assert "vllm serve" in result.output
    assert not (tmp_path / "run" / "labels.jsonl").exists()  # nothing written before the probe


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_vllm_without_the_extra_gives_the_install_hint(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["label", str(_traces(tmp_path)), "--out", str(tmp_path / "run"),
         "--judge", "vllm", "--model", "Qwen/Qwen2.5-7B-Instruct"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "pip install 'misstep[vllm]'" in result.output


def test_unknown_judge_lists_the_registered_ones(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["label", str(_traces(tmp_path)), "--out", str(tmp_path / "r"), "--judge", "gpt9"]
    )
    assert result.exit_code == 2
    assert "openai" in result.output
    assert "rules" in result.output


@pytest.mark.parametrize("source", ["processbench", "mrben"])
def test_shared_real_data_through_label_with_rules(
    shared_data: Path, tmp_path: Path, source: str
) -> None:
    traces = shared_data / source / "traces.jsonl"
    run = tmp_path / "run"
    result = runner.invoke(app, ["label", str(traces), "--out", str(run), "--limit", "150"])
    assert result.exit_code == 0, result.output
    labels = read_labels(run)
    assert len(labels) == 150  # every trace read has exactly one current record
    statuses = {lab.status for lab in labels.values()}
    # the rules judge types what it can check and abstains on the rest (never `other`)
    assert statuses <= {LabelStatus.OK, LabelStatus.ABSTAINED, LabelStatus.SKIPPED}
    sent = [lab for lab in labels.values() if lab.status is LabelStatus.OK]
    assert sent, "the first 150 traces hold wrong ones"
    assert all(lab.error_type != "other" for lab in sent)
    abstained = [lab for lab in labels.values() if lab.status is LabelStatus.ABSTAINED]
    assert abstained and all(
        lab.error_type is None and lab.first_error_step is None for lab in abstained
    )
    # an arithmetic label must quote the trace verbatim
    assert all(lab.evidence_verified for lab in sent if lab.error_type == "arithmetic")
