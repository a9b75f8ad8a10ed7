"""Other aggregators against a brute-force computation on small cases."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from misstep.cli.app import app
from misstep.metrics import voting_table

# Two checkpoints, one problem, 6 samples each: answer classes (None = no answer).
C1 = ["g", "g", "w", "w", "w", None]  # g is the right answer
C2 = ["g", "w", "v", "v", "g", "g"]


def _table() -> pd.DataFrame:
    rows = []
    for ck, step, answers in (("c1", 1, C1), ("c2", 2, C2)):
        for i, a in enumerate(answers):
            rows.append(
                {
                    "trace_id": f"{ck}/{i}",
                    "checkpoint": ck,
                    "step": step,
                    "dataset": "d",
                    "problem_id": "p",
                    "sample_idx": i,
                    "answer": a,
                    "answer_class": a,
                    "outcome": "no_answer" if a is None else "correct" if a == "g" else "wrong",
                    "correct": a == "g",
                }
            )
    return pd.DataFrame(rows)


def _vote(sample: list[str | None]) -> float:
    votes = Counter(a for a in sample if a is not None)
    if not votes:
        return 0.0
    top = max(votes.values())
    winners = [a for a, v in votes.items() if v == top]
    return winners.count("g") / len(winners)


def _maj_brute(answers: list[str | None], k: int) -> float:
    subsets = list(itertools.combinations(answers, k))
    return sum(_vote(list(s)) for s in subsets) / len(subsets)


def _early_brute(answers: list[str | None], m: int, n: int) -> tuple[float, float]:
    total = used = 0.0
    orders = list(itertools.permutations(range(len(answers))))
    for order in orders:
        seen: Counter[str] = Counter()
        drawn: list[str | None] = []
        for i in order[:n]:
            a = answers[i]
            drawn.append(a)
            if a is not None:
                seen[a] += 1
                if seen[a] >= m:
                    break
        total += _vote(drawn)
        used += len(drawn)
    return total / len(orders), used / len(orders)


def _by_name(rows: list, checkpoint: str) -> dict:
    row = next(r for r in rows if r.checkpoint == checkpoint)
    return {a.name: a for a in row.aggregators}


def test_aggregators_equal_brute_force() -> None:
    rows = voting_table(_table(), 3, windows=[2], early_stops=[(2, 4), (2, 6)])
    first, second = _by_name(rows, "c1"), _by_name(rows, "c2")
    assert first["maj@3"].score == pytest.approx(_maj_brute(C1, 3))
    assert second["maj@3"].score == pytest.approx(_maj_brute(C2, 3))
    # answered only: the no-answer sample is not drawn
    assert first["maj-answered@3"].score == pytest.approx(_maj_brute(C1[:5], 3))
    # window of 2 at c2: 3-subsets of the 12 pooled samples; undefined at c1
    assert second["window2-maj@3"].score == pytest.approx(_maj_brute(C1 + C2, 3))
    assert first["window2-maj@3"].score is None
    for (m, n), answers, agg in (
        ((2, 4), C1, first["early-stop-2of4"]),
        ((2, 6), C2, second["early-stop-2of6"]),
    ):
        exact, used = _early_brute(answers, m, n)
        assert agg.score == pytest.approx(exact, abs=4 * agg.score_se + 1e-9)
        assert agg.samples_used == pytest.approx(used, abs=0.05)
    # c1's full vote: w (3) beats g (2): a failure; maj@3 there avoids it with its score
    assert rows[0].majority_failures == 1
    assert first["maj@3"].failures_avoided == pytest.approx(first["maj@3"].score)


def test_voting_command_json(tmp_path: Path) -> None:
    table = _table()
    path = tmp_path / "t.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for r in table.to_dict("records"):
            row = {
                "checkpoint": r["checkpoint"],
                "step": r["step"],
                "problem_id": "p",
                "sample_idx": r["sample_idx"],
                "response": "no idea" if pd.isna(r["answer"]) else f"\\boxed{{{r['answer']}}}",
                "gold_answer": "g",
            }
            fh.write(json.dumps(row) + "\n")
    runner = CliRunner()
    result = runner.invoke(app, ["voting", str(path), "--k", "3", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["checkpoint"] for r in rows] == ["c1", "c2"]
    names = [a["name"] for a in rows[1]["aggregators"]]
    assert names[:3] == ["maj@3", "maj-answered@3", "window2-maj@3"]
    assert "early-stop-2of4" in names
    maj = rows[0]["aggregators"][0]
    assert set(maj) == {"name", "score", "score_se", "samples_used", "failures_avoided"}
    assert maj["score"] == pytest.approx(_maj_brute(C1, 3))
