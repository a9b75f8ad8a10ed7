"""Bounded work in the label pipeline: a judge's size limit before any splitting, long traces
split and rendered off the event loop."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from misstep.judge import JudgeConfig, RulesJudge
from misstep.labels import LabelStatus, read_labels
from misstep.pipelines import _label, run_labeling
from misstep.prompts import render_judge_prompt
from misstep.taxonomy import load_taxonomy

TAXONOMY = load_taxonomy(None)


def _write(path: Path, responses: list[str]) -> Path:
    rows = [
        {"trace_id": f"t{i}", "problem_id": f"p{i}", "response": r, "gold_answer": "5"}
        for i, r in enumerate(responses)
    ]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """trace_id -> the thread that rendered it (splitting happens inside rendering)."""
    seen: dict[str, int] = {}

    def spy(taxonomy: Any, trace: Any, answer: Any, **kw: Any) -> Any:
        seen[trace.trace_id] = threading.get_ident()
        return render_judge_prompt(taxonomy, trace, answer, **kw)

    monkeypatch.setattr(_label, "render_judge_prompt", spy)
    return seen


def test_a_trace_over_the_size_limit_is_skipped_before_it_is_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rendered: dict[str, int]
) -> None:
    monkeypatch.setattr(RulesJudge, "max_trace_chars", 1_000)
    long = "We add 2 and 3. " * 100 + "2 + 3 = 6. The answer is 6."  # 1,600 + 27 characters
    short = "2 + 3 = 6. The answer is 6."
    run = tmp_path / "run"
    run_labeling(_write(tmp_path / "t.jsonl", [long, short]), run, JudgeConfig(), taxonomy=TAXONOMY)
    labels = read_labels(run)
    assert labels["t0"].status is LabelStatus.SKIPPED
    assert labels["t0"].reason == "too long for the rules judge: 1,627 characters (limit 1,000)"
    assert labels["t1"].status is LabelStatus.OK and labels["t1"].error_type == "arithmetic"
    assert set(rendered) == {"t1"}  # the long one was never split nor rendered


def test_a_long_trace_is_split_and_rendered_off_the_event_loop(
    tmp_path: Path, rendered: dict[str, int]
) -> None:
    filler = "We think about the sum once more. " * 1_000  # 34,000 characters
    long = filler + "So 2 + 3 = 6. The answer is 6."
    assert len(long) > _label.OFF_LOOP_CHARS
    run = tmp_path / "run"
    run_labeling(_write(tmp_path / "t.jsonl", [long]), run, JudgeConfig(), taxonomy=TAXONOMY)
    label = read_labels(run)["t0"]
    # the 1,000 filler sentences are steps 0-999, the calculation step 1000
    assert (label.error_type, label.first_error_step) == ("arithmetic", 1000)
    assert rendered["t0"] != threading.get_ident()  # the loop runs in this (the main) thread
