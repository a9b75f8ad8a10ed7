"""Causes beyond error types and vote transitions, hand-worked; and the shared real run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from misstep.link._causes import cause_shifts, cause_values, vote_transitions
from misstep.rollouts import repetition_score


def _row(ck: str, pid: str, i: int, outcome: str, chars: int = 100, rep: float = 0.0) -> dict:
    answered = outcome in ("correct", "wrong")
    return {
        "trace_id": f"{ck}/{pid}/{i}",
        "checkpoint": ck,
        "step": int(ck[1:]),
        "dataset": "d",
        "problem_id": pid,
        "sample_idx": i,
        "answer": ("g" if outcome == "correct" else "w") if answered else None,
        "answer_class": ("g" if outcome == "correct" else "w") if answered else None,
        "outcome": outcome,
        "correct": outcome == "correct",
        "response_chars": chars,
        "repetition": rep,
    }


def _table() -> pd.DataFrame:
    rows = []
    for p in range(6):
        # c1: 2 of 4 samples without an answer on every problem; c2: none.
        for i, outcome in enumerate(["correct", "wrong", "no_answer", "no_answer"]):
            rows.append(_row("c1", f"p{p}", i, outcome, chars=200))
        for i, outcome in enumerate(["correct", "correct", "wrong", "wrong"]):
            rows.append(_row("c2", f"p{p}", i, outcome, chars=100))
    return pd.DataFrame(rows)


def test_cause_shift_hand_worked() -> None:
    values = cause_values(_table())
    shifts = {s.cause: s for s in cause_shifts(values, ["c1", "c2"], seed=0)}
    no_answer = shifts["no_answer_rate"]
    # 2 of 4 -> 0 of 4 on each of 6 problems: -0.5, every problem the same, so the interval
    # is the point and a sign flip never beats it: p = (1 + #|null| >= 0.5) / 2001, where the
    # null reaches 0.5 only when all six signs agree (2 of 64 patterns, ~62 of 2000 flips).
    assert (no_answer.value_before, no_answer.value_after) == (0.5, 0.0)
    assert no_answer.delta == pytest.approx(-0.5) and no_answer.ci == pytest.approx((-0.5, -0.5))
    assert (no_answer.count_before, no_answer.count_after) == (12, 0)
    assert no_answer.verdict == "down" and no_answer.p_raw is not None
    assert 0.01 < no_answer.p_raw < 0.06
    chars = shifts["response_chars"]
    assert chars.delta == pytest.approx(-100.0) and chars.count_before is None
    assert shifts["truncated_rate"].delta == 0.0


def test_vote_transitions_hand_worked() -> None:
    # c1: each problem has 1 right, 1 wrong answered: a tie with a wrong class -> not right.
    # c2: 2 right vs 2 wrong: a tie again -> not right. All six stay wrong.
    (moves,) = vote_transitions(_table(), ["c1", "c2"])
    assert (moves.right_right, moves.right_wrong, moves.wrong_right, moves.wrong_wrong) == (
        0,
        0,
        0,
        6,
    )


def test_repetition_score() -> None:
    assert repetition_score("x") == 0.0
    assert repetition_score("one two three four five six seven eight nine") == 0.0
    # "a b c d" repeated 10 times: 37 4-grams, 4 distinct -> 1 - 4/37
    assert repetition_score("a b c d " * 10) == pytest.approx(1 - 4 / 37)


def test_unanswered_drop_surfaces_on_the_shared_run(shared_data: Path, tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from misstep.cli.app import app

    runner = CliRunner()
    traces = str(shared_data / "reasoning_gym_eval" / "llama_rl_ckpts.jsonl.gz")
    run = tmp_path / "run"
    result = runner.invoke(app, ["label", traces, "--out", str(run)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["link", traces, "--labels", str(run), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    drop = next(
        f
        for f in data["findings"]
        if f["kind"] == "cause_shift" and "no final answer" in f["sentence"]
    )
    assert drop["significant"] and "202 -> 42 samples" in drop["sentence"]
    # No finding marked significant narrates an sc_gain change inside the noise.
    for f in data["findings"]:
        if f["significant"] and f["kind"] == "type_shift":
            assert "within noise" not in f["sentence"]
    assert not any(f["significant"] for f in data["findings"] if f["kind"] == "type_shift")
