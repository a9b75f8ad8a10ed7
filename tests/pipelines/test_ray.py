"""Labelling on Ray: the server path on a local CPU cluster against the local test server
(the records equal what ``misstep label`` writes); the GPU engine path where one is lent."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from misstep.judge import JudgeConfig
from misstep.labels import LabelStatus, read_labels, read_manifest
from misstep.pipelines import run_labeling
from misstep.taxonomy import load_taxonomy
from tests.conftest import exclusive
from tests.judge.fake_openai import FakeOpenAIServer
from tests.pipelines.test_label import _mixed, _row, _write

ray = pytest.importorskip("ray")

TAXONOMY = load_taxonomy(None)
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with exclusive(tmp_path_factory, "ray"):  # one Ray cluster at a time (tests/conftest.py)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
        ray.data.DataContext.get_current().enable_progress_bars = False
        yield
        ray.shutdown()


@pytest.fixture
def fake() -> Any:
    with FakeOpenAIServer() as server:
        yield server


def _comparable(labels: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {
        t: (
            lab.status,
            lab.error_type,
            lab.first_error_step,
            lab.evidence,
            lab.evidence_verified,
            lab.reason,
            lab.judge,
        )
        for t, lab in labels.items()
    }


def test_ray_server_path_writes_what_label_writes(
    tmp_path: Path, fake: FakeOpenAIServer, cluster: None
) -> None:
    from misstep.pipelines._ray import label_with_ray

    traces = _mixed(tmp_path)
    config = JudgeConfig(backend="openai", base_url=fake.base_url, concurrency=4)
    run_labeling(traces, tmp_path / "live", config, taxonomy=TAXONOMY)
    summary = label_with_ray(
        traces, tmp_path / "ray", config, taxonomy=TAXONOMY, actors=2, batch_size=2
    )
    assert summary.written_counts == {"ok": 6, "skipped": 4}
    live, on_ray = read_labels(tmp_path / "live"), read_labels(tmp_path / "ray")
    assert _comparable(on_ray) == _comparable(live)
    manifest = read_manifest(tmp_path / "ray")
    assert manifest is not None and manifest.options["mode"] == "ray"
    assert not (tmp_path / "ray" / "ray_work.parquet").exists()
    # resumed: nothing asked again
    before = fake.count
    again = label_with_ray(traces, tmp_path / "ray", config, taxonomy=TAXONOMY, actors=2)
    assert fake.count == before and again.resumed == 6 and again.written == 0


def test_ray_faults_become_the_same_statuses(
    tmp_path: Path, fake: FakeOpenAIServer, cluster: None
) -> None:
    from misstep.pipelines._ray import label_with_ray

    rows = [
        _row(0),
        _row(2, response="FAKE_FAULT:schema 2 + 3 = 6"),
        _row(3, response="FAKE_FAULT:truncated 3 + 3 = 7"),
    ]
    traces = _write(tmp_path / "t.jsonl", rows)
    config = JudgeConfig(backend="openai", base_url=fake.base_url, max_retries=1)
    label_with_ray(traces, tmp_path / "run", config, taxonomy=TAXONOMY, actors=1)
    labels = read_labels(tmp_path / "run")
    assert labels["t0"].status is LabelStatus.OK
    assert labels["t2"].status is LabelStatus.UNPARSEABLE
    assert labels["t3"].status is LabelStatus.TRUNCATED


@pytest.mark.skipif(
    shutil.which("nvidia-smi") is None or os.environ.get("CUDA_VISIBLE_DEVICES") == "",
    reason="needs a CUDA GPU and vLLM on the Ray cluster",
)
def test_ray_engine_path_on_a_gpu(tmp_path: Path, cluster: None) -> None:  # pragma: no cover
    pytest.importorskip("vllm")
    from misstep.pipelines._ray import label_with_ray

    traces = _mixed(tmp_path)
    model = os.environ.get("MISSTEP_TEST_MODEL", "Qwen/Qwen2.5-0.5B-Instruct")
    config = JudgeConfig(backend="vllm", model=model, engine_args={"max_model_len": 4096})
    summary = label_with_ray(
        traces, tmp_path / "run", config, taxonomy=TAXONOMY, actors=1, engine=True
    )
    assert sum(summary.written_counts.values()) == 10


def test_label_cli_on_ray(tmp_path: Path, fake: FakeOpenAIServer, cluster: None) -> None:
    from typer.testing import CliRunner

    from misstep.cli.app import app

    traces = _mixed(tmp_path)
    args = ["label", str(traces), "--out", str(tmp_path / "run"), "--judge", "openai"]
    result = CliRunner().invoke(app, [*args, "--base-url", fake.base_url, "--ray", "2"])
    assert result.exit_code == 0, result.output
    assert "labelling on Ray with 2 actor(s)" in result.output
    labels = read_labels(tmp_path / "run")
    assert sum(lab.status is LabelStatus.OK for lab in labels.values()) == 6
    bad = CliRunner().invoke(app, [*args[:4], "--ray", "2"])  # the rules judge on Ray: no
    assert bad.exit_code == 2 and "--judge openai" in bad.output


def test_engine_rows_come_from_the_one_adapter_and_carry_the_retry() -> None:
    """No cluster needed: the row Ray's processor gets, and the plan of a retry."""
    import json

    from misstep.judge import JudgeSpec, request_seed
    from misstep.pipelines._ray import _engine_row, _plan
    from misstep.rollouts import Trace

    trace = Trace(trace_id="t0", problem_id="p", response="1 + 1 = 3\n\nSo 3.")
    config = JudgeConfig(backend="vllm", model="m", max_tokens=99, reasoning_effort="low")
    spec = JudgeSpec(config, TAXONOMY)
    seed = request_seed(0, "t0", 0)
    first = _plan(None, trace, spec)
    assert first is not None
    row = _engine_row({"trace": trace.model_dump_json(), "answer": "3", "plan": first},
                      spec)  # fmt: skip
    sampling = row["sampling_params"]
    assert (sampling["seed"], sampling["max_tokens"], sampling["n"]) == (seed, 99, 1)
    step = sampling["structured_outputs"]["json"]["properties"]["first_error_step"]
    assert step["maximum"] == 1  # two steps shown
    first_try = {"kind": "first", "seed": seed, "temperature": 0.0, "status": "truncated"}
    cut = {"status": "truncated", "tries": [first_try]}
    retry = _plan(cut, trace, spec)
    assert retry is not None
    plan = json.loads(retry)
    assert (plan["kind"], plan["seed"], plan["temperature"]) == ("cut-retry", seed + 1_000_003, 0.3)
    broken = {"status": "unparseable", "raw_reply": "{oops", "reason": "reply: bad JSON"}
    reask = _plan(broken, trace, spec)
    assert reask is not None
    row = _engine_row({"trace": trace.model_dump_json(), "answer": "3", "plan": reask},
                      spec)  # fmt: skip
    assert row["messages"][-2] == {"role": "assistant", "content": "{oops"}
    second = {"kind": "cut-retry", "seed": 1, "temperature": 0.3, "status": "truncated"}
    given_up = {**cut, "tries": [first_try, second]}
    assert _plan(given_up, trace, spec) is None


def test_ray_honours_limit_and_pilot(tmp_path: Path, fake: FakeOpenAIServer, cluster: None) -> None:
    from misstep.pipelines._ray import label_with_ray

    traces = _mixed(tmp_path)
    config = JudgeConfig(backend="openai", base_url=fake.base_url)
    summary = label_with_ray(traces, tmp_path / "a", config, taxonomy=TAXONOMY, actors=1, limit=3)
    assert summary.traces == 3 and len(read_labels(tmp_path / "a")) == 3
    label_with_ray(traces, tmp_path / "b", config, taxonomy=TAXONOMY, actors=1, pilot=2)
    labels = read_labels(tmp_path / "b")
    judged = [lab for lab in labels.values() if lab.status is LabelStatus.OK]
    assert len(judged) == 2 and all(lab.inclusion_prob is not None for lab in judged)
    assert sum(lab.reason == "not sampled" for lab in labels.values()) == 4  # 6 wrong, 2 drawn
