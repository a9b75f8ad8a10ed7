"""Faults that used to hang or mislead ``label``: a trickling server (no total deadline), a
server that dies mid-run or refuses the key (every remaining trace retried, then exit 0)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from misstep.errors import JudgeUnavailableError
from misstep.judge import JudgeConfig
from misstep.judge._openai import probe_server
from misstep.labels import LabelStatus, read_labels
from misstep.pipelines import run_labeling
from misstep.taxonomy import load_taxonomy
from tests.judge.fake_openai import FakeOpenAIServer

TAXONOMY = load_taxonomy(None)


@pytest.fixture
def fake() -> Any:
    with FakeOpenAIServer() as server:
        yield server


def _traces(path: Path, n: int) -> Path:
    rows = [
        {
            "trace_id": f"t{i}",
            "problem_id": f"p{i}",
            "response": f"{i} + 3 = {i + 4}\n\nThe answer is {i + 4}.",
            "gold_answer": str(i + 3),
            "correct": False,
        }
        for i in range(n)
    ]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_probe_has_a_total_deadline(fake: FakeOpenAIServer) -> None:
    # One byte every 0.2 s: each read is quick, the whole answer takes ~10 s.
    fake.trickle_get = True
    start = time.monotonic()
    with pytest.raises(JudgeUnavailableError, match="within 1 s"):
        probe_server(fake.base_url, timeout=1.0)
    assert time.monotonic() - start < 4.0


def test_trickling_reply_hits_the_deadline_and_is_retried(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    traces = _traces(tmp_path / "t.jsonl", 1)
    fake.faults_by_request = {1: "trickle"}  # the first request trickles, the retry answers
    config = JudgeConfig(
        backend="openai", base_url=fake.base_url, timeout_s=5.0, deadline_s=1.0, concurrency=1
    )
    start = time.monotonic()
    run_labeling(traces, tmp_path / "run", config, taxonomy=TAXONOMY)
    assert time.monotonic() - start < 8.0
    label = read_labels(tmp_path / "run")["t0"]
    assert label.status is LabelStatus.OK and label.attempts == 2


@pytest.mark.parametrize(
    ("fault", "words"), [("401", "API key"), ("trickle", "could not reach it")]
)
def test_failing_server_stops_the_run_with_exit_3(
    tmp_path: Path, fake: FakeOpenAIServer, fault: str, words: str
) -> None:
    traces = _traces(tmp_path / "t.jsonl", 40)
    fake.fault = fault
    config = JudgeConfig(
        backend="openai",
        base_url=fake.base_url,
        timeout_s=5.0,
        deadline_s=0.5,
        max_retries=1,
        concurrency=2,
    )
    start = time.monotonic()
    with pytest.raises(JudgeUnavailableError, match=words) as info:
        run_labeling(traces, tmp_path / "run", config, taxonomy=TAXONOMY)
    assert info.value.exit_code == 3
    assert "run the same command again" in (info.value.hint or "")
    # Stopped after a few traces, not after trying all 40 with backoff.
    assert len(fake.chat_requests) < 20
    assert time.monotonic() - start < 20.0
    labels = read_labels(tmp_path / "run")
    assert len(labels) < 40 and all(lab.status is LabelStatus.FAILED for lab in labels.values())
    # The server comes back: the same command resumes and labels everything.
    fake.reset()
    run_labeling(traces, tmp_path / "run", config, taxonomy=TAXONOMY)
    labels = read_labels(tmp_path / "run")
    assert len(labels) == 40 and all(lab.status is LabelStatus.OK for lab in labels.values())


def test_http_400_keeps_the_servers_message(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    traces = _traces(tmp_path / "t.jsonl", 1)
    fake.fault = "401"
    config = JudgeConfig(backend="openai", base_url=fake.base_url, concurrency=1)
    # A single trace: the run stops only after 3 in a row; its record says why it failed.
    run_labeling(traces, tmp_path / "run", config, taxonomy=TAXONOMY)
    label = read_labels(tmp_path / "run")["t0"]
    assert "HTTP 401" in (label.reason or "") and "invalid API key" in (label.reason or "")


def test_ctrl_c_says_how_to_resume(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    import os
    import signal
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    traces = _traces(tmp_path / "t.jsonl", 50)
    fake.fault = "delay"
    fake.delay_s = 1.0
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    with subprocess.Popen(
        [
            *(sys.executable, "-m", "misstep.cli", "label", str(traces)),
            *("--out", str(tmp_path / "run"), "--judge", "openai", "--base-url", fake.base_url),
            *("--concurrency", "2"),
        ],
        cwd=REPO_ROOT,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        # A job started in the background inherits SIGINT ignored; a terminal's Ctrl-C is
        # what this test plays, so the child gets the default disposition back.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as process:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and fake.count < 2:
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "interrupted" in err and "resumes" in err and "Traceback" not in err
