"""Ray against real vLLM: misstep's Ray actors over a real server, and Ray Data's own vLLM
engine processor on CPU (vllm-facts.md section 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from misstep.judge import label_model
from misstep.taxonomy import load_taxonomy
from tests.real._server import Proc, Server, VllmEnv
from tests.real.conftest import (
    CONCURRENCY,
    MAX_TOKENS,
    TRACES12,
    assert_issue20_bar,
    engine_env,
    judge_ids,
    run_misstep,
)


def test_ray_actors_against_a_real_server(
    real_server: Server, live_run: Path, tmp_path: Path, ray_slot: None
) -> None:
    pytest.importorskip("ray")
    run = tmp_path / "ray"
    run_misstep(
        "label", str(TRACES12), "--out", str(run), "--judge", "openai", "--ray", "2",
        "--base-url", real_server.base_url, "--max-tokens", MAX_TOKENS,
        "--concurrency", CONCURRENCY,
    )  # fmt: skip
    assert_issue20_bar(run, "--ray 2 --judge openai")
    assert judge_ids(run) == judge_ids(live_run), "Ray and live labels differ in judge id"


def test_ray_vllm_engine_processor_on_cpu(
    vllm_env: VllmEnv, tmp_path: Path, ray_slot: None
) -> None:
    """Ray Data's vLLM engine processor on CPU (a CPU placement bundle, the ``mp`` executor,
    vLLM's ``StructuredOutputsConfig`` object, no Ray metrics logger): two schema-valid
    replies. About a minute on 2 cores."""
    out = tmp_path / "probe.json"
    probe = Path(__file__).with_name("_ray_engine_probe.py")
    # Supervised like a server: at the time limit the whole group goes (Ray's workers too).
    proc = Proc(
        [str(vllm_env.python), str(probe), str(vllm_env.model), str(out)],
        env=engine_env(vllm_env, RAY_DISABLE_USAGE_STATS="1"),
        log=tmp_path / "probe.log",
    )
    code = proc.wait(timeout=600)
    assert code is not None, f"Ray's engine processor did not finish in 600 s:\n{proc.tail(15)}"
    result = json.loads(out.read_text()) if out.exists() else {"ok": False, "reason": "no output"}
    assert result["ok"], f"Ray's vLLM engine processor failed: {result['reason']}\n{proc.tail(15)}"
    label_type = label_model(load_taxonomy(None))
    assert len(result["replies"]) == 2
    for reply in result["replies"]:
        label_type.model_validate_json(reply)
