"""Every judge path against real vLLM 0.32 (CPU) serving SmolLM2-135M-Instruct.

The input is ProcessBench's first 12 traces (all wrong, all with a final answer). Issue 20's bar:
each path leaves at least 11 answers (``ok`` or ``abstained``) and no ``unparseable`` one, and
labels of the same request carry the same judge id whichever path made them. The model is tiny:
these tests prove the plumbing (requests, grammar, statuses, resumption), not the labels'
quality.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.real._server import CPU_FLAGS, Proc, Server, VllmEnv
from tests.real.conftest import (
    CONCURRENCY,
    MAX_TOKENS,
    TRACES12,
    assert_issue20_bar,
    engine_env,
    judge_ids,
    run_misstep,
    statuses,
)


def test_live_labels_meet_the_bar(live_run: Path) -> None:
    assert_issue20_bar(live_run, "live --judge openai")


def test_live_rerun_resumes_without_asking_again(
    live_run: Path, real_server: Server, tmp_path: Path
) -> None:
    before = (live_run / "labels.jsonl").read_text(encoding="utf-8").count("\n")
    ok = statuses(live_run)["ok"]
    run_misstep(
        "label", str(TRACES12), "--out", str(live_run), "--judge", "openai",
        "--base-url", real_server.base_url, "--max-tokens", MAX_TOKENS,
        "--concurrency", CONCURRENCY,
    )  # fmt: skip
    after = (live_run / "labels.jsonl").read_text(encoding="utf-8").count("\n")
    # Only the traces not yet ok are asked again: 12 - ok new lines at most.
    assert after - before <= 12 - ok


def _traceback(stderr: str) -> str:
    """The last Python traceback in a vLLM log (the engine core's cause), else its tail."""
    start = stderr.rfind("Traceback (most recent call last)")
    return stderr[start:][-6000:] if start >= 0 else stderr[-3000:]


def test_batch_round_trip_through_vllm_run_batch(
    live_run: Path, vllm_server_env: VllmEnv, real_server: Server, tmp_path: Path
) -> None:
    """export-requests -> vLLM's own run-batch (the README server's engine flags) ->
    ingest-replies, and again for the retries of cut or broken replies that the second export
    holds (the batch form of the live path's retry): the same bar, and the same judge id as the
    live labels."""
    run = tmp_path / "batch"
    rounds = 0
    while rounds < 2:
        rounds += 1
        run_misstep(
            "export-requests", str(TRACES12), "--out", str(run),
            "--model", str(vllm_server_env.model), "--max-tokens", MAX_TOKENS,
        )  # fmt: skip
        requests = run / "requests.jsonl"
        n = len(requests.read_text(encoding="utf-8").splitlines())
        if rounds == 1:
            assert n == 12
        if n == 0:
            break
        replies = tmp_path / f"replies{rounds}.jsonl"
        cmd = [
            str(vllm_server_env.python), "-m", "vllm.entrypoints.launchers.run_batch",
            "-i", str(requests), "-o", str(replies), "--model", str(vllm_server_env.model),
            *real_server.flags, *CPU_FLAGS,
        ]  # fmt: skip
        # Supervised like a server, so that a time-out leaves no engine behind.
        log = tmp_path / f"run_batch{rounds}.log"
        code = Proc(cmd, env=vllm_server_env.environ(), log=log).wait(timeout=900)
        stderr = log.read_text(encoding="utf-8", errors="replace")
        assert code == 0, stderr[-4000:]
        lines = [json.loads(x) for x in replies.read_text(encoding="utf-8").splitlines()]
        codes = [ln["response"]["status_code"] for ln in lines]
        assert codes == [200] * n, f"{codes}\n{_traceback(stderr)}"
        run_misstep("ingest-replies", str(run), str(replies))
        print(f"run-batch round {rounds}: {n} requests -> {dict(statuses(run))}")
    assert_issue20_bar(run, "run-batch round trip")
    assert judge_ids(run) == judge_ids(live_run), "live and batch labels differ in judge id"


def test_offline_engine_with_no_engine_args(vllm_env: VllmEnv, tmp_path: Path) -> None:
    """``--judge vllm`` (in-process engine, in the vLLM venv) with no ``--engine-arg``."""
    run = tmp_path / "offline"
    run_misstep(
        "label", str(TRACES12), "--out", str(run), "--judge", "vllm",
        "--model", str(vllm_env.model), "--max-tokens", MAX_TOKENS,
        env=engine_env(vllm_env), python=vllm_env.python,
    )  # fmt: skip
    assert_issue20_bar(run, "offline --judge vllm")
