"""The shared real data (../shared/data) loads as it is."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson

from misstep.rollouts import read_traces


def test_processbench_traces(shared_data: Path) -> None:
    path = shared_data / "processbench" / "traces.jsonl"
    traces = list(read_traces(path))
    assert len(traces) == 3400
    with path.open("rb") as handle:
        first = orjson.loads(handle.readline())
    assert traces[0].trace_id == first["trace_id"]
    assert traces[0].steps == first["steps"]
    # source, subset and process_correct are not Trace fields: kept in extra.
    assert set(traces[0].extra) == {"source", "subset", "process_correct"}
    assert len({t.trace_id for t in traces}) == 3400


def test_mrben_traces(shared_data: Path) -> None:
    path = shared_data / "mrben" / "traces.jsonl"
    with path.open("rb") as handle:
        lines = sum(1 for line in handle if line.strip())
    traces = list(read_traces(path))
    assert len(traces) == lines
    assert {t.extra["source"] for t in traces} == {"mrben_math", "mr_gsm8k_partial"}


def test_reasoning_gym_run(shared_data: Path) -> None:
    path = shared_data / "reasoning_gym_eval" / "llama_rl_ckpts.jsonl.gz"
    traces = list(read_traces(path))
    assert len(traces) == 7000
    # 2 checkpoints x (30 AIME24 + 40 AMC23 problems) x 50 samples = 7,000.
    assert Counter(t.step for t in traces) == {400: 3500, 800: 3500}
    assert len({t.checkpoint for t in traces}) == 2
    assert Counter(t.dataset for t in traces) == {"aime24": 2 * 30 * 50, "amc23": 2 * 40 * 50}
    # The row's own extra dict is merged into extra.
    assert "pred" in traces[0].extra and "score" in traces[0].extra
    assert all(t.correct is not None for t in traces)
