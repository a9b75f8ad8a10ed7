"""Real servers that die: failover between two, ``select`` killed -9, ``select``'s only server
killed. Runs after the other real tests (it kills the shared server last; the pool restarts it
for any test that needs it later)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from misstep.labels import read_labels
from tests.real._server import Server
from tests.real.conftest import (
    CONCURRENCY,
    DATA,
    MAX_TOKENS,
    TRACES12,
    ServerPool,
    assert_issue20_bar,
    checkout_env,
    misstep_cmd,
)

FAILURES = DATA / "rg_amc23_failures.jsonl"  # 9 majority-vote failures
SELECT_ARGS = ["--max-candidates", "3", "--max-tokens", "256", "--concurrency", "1"]


def _lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _wait_for(cond: Callable[[], bool], proc: subprocess.Popen[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert proc.poll() is None, f"exited {proc.returncode} early:\n{proc.communicate()}"
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.3)


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        misstep_cmd(*args),
        env=checkout_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_failover_when_one_of_two_real_servers_is_killed(
    servers: ServerPool, second_server: Server, tmp_path: Path
) -> None:
    a, b = servers.get("a"), second_server
    run = tmp_path / "run"
    proc = _start(
        "label", str(TRACES12), "--out", str(run), "--judge", "openai",
        "--base-url", b.base_url, "--base-url", a.base_url,
        "--max-tokens", MAX_TOKENS, "--concurrency", CONCURRENCY,
    )  # fmt: skip
    labels = run / "labels.jsonl"
    # Kill b once the run is under way (a label is written, so requests are in flight on both).
    _wait_for(lambda: len(_lines(labels)) >= 1, proc, timeout=600)
    b.proc.kill(signal.SIGKILL)
    _out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    assert len(read_labels(run)) == 12  # every trace recorded
    assert_issue20_bar(run, "two servers, one killed")
    servers.stop("b")
    assert b.proc.group_pids() == [], "the killed server left processes behind"


def test_select_survives_kill_9_and_resumes(servers: ServerPool, tmp_path: Path) -> None:
    a = servers.get("a")
    run = tmp_path / "sel"
    args = ["select", str(FAILURES), "--out", str(run), "--base-url", a.base_url, *SELECT_ARGS]
    proc = _start(*args)
    records = run / "selections.jsonl"
    _wait_for(lambda: len(_lines(records)) >= 2, proc, timeout=600)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    finished = _lines(records)  # every line that made it is a whole record
    assert 2 <= len(finished) < 9
    done = subprocess.run(
        misstep_cmd(*args, "--format", "json"),
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    assert "9 majority-vote failure(s)" in done.stderr
    ok_before = sum(1 for r in finished if r["status"] == "ok")
    assert f"{ok_before} already selected" in done.stderr, done.stderr
    current = {(r["checkpoint"], r["dataset"], r["problem_id"]) for r in _lines(records)}
    assert len(current) == 9


def test_select_exits_3_when_its_only_server_dies(servers: ServerPool, tmp_path: Path) -> None:
    a = servers.get("a")
    run = tmp_path / "sel"
    proc = _start(
        "select", str(FAILURES), "--out", str(run), "--base-url", a.base_url, *SELECT_ARGS
    )
    _wait_for(lambda: len(_lines(run / "selections.jsonl")) >= 1, proc, timeout=600)
    a.proc.kill(signal.SIGKILL)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 3, err
    assert len(_lines(run / "selections.jsonl")) >= 1  # what was finished stays
    servers.stop("a")
