"""The tier's fixture traces are what they claim to be (cheap; no vLLM)."""

from __future__ import annotations

from pathlib import Path

from misstep.metrics import problem_stats
from misstep.rollouts import extract_answer, load_graded, read_traces
from tests.real.conftest import DATA, TRACES12


def test_first_12_processbench_traces_wrong_with_an_answer(shared_data: Path) -> None:
    ours = TRACES12.read_text(encoding="utf-8").splitlines()
    with open(shared_data / "processbench" / "traces.jsonl", encoding="utf-8") as f:
        first = [next(f).rstrip("\n") for _ in range(12)]
    assert ours == first
    traces = list(read_traces(TRACES12))
    assert [t.correct for t in traces] == [False] * 12
    assert all(extract_answer(t.response).answer is not None for t in traces)


def test_select_fixture_holds_nine_majority_vote_failures() -> None:
    stats = problem_stats(load_graded(DATA / "rg_amc23_failures.jsonl").table)
    assert len(stats) == 9
    assert stats["majority_failure"].all()
