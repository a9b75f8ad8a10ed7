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


def test_weighted_vote_equals_brute_force() -> None:
    # c1: g g w w w (None): plain vote w (3 vs 2) -> 0; weights make g win: 0.9+0.8 > 0.2*3.
    table = _table()
    weights = pd.Series([0.9, 0.8, 0.2, 0.2, 0.2, 5.0] + [0.1] * 6, index=table.index)
    rows = voting_table(table, 3, windows=[], early_stops=[], weights=weights, weight_name="rm")
    first, second = _by_name(rows, "c1"), _by_name(rows, "c2")
    assert first["maj@all"].score == 0.0 and first["weighted-maj@all[rm]"].score == 1.0
    assert first["weighted-maj@all[rm]"].failures_avoided == 1.0
    # c2: g w v v g g with equal weights: g wins 3 to 2 either way
    assert second["maj@all"].score == second["weighted-maj@all[rm]"].score == 1.0
    # log-probabilities (negative): exp keeps the order, so g still wins at c1
    logs = pd.Series([-0.1, -0.2, -3.0, -3.0, -3.0, -0.1] + [-1.0] * 6, index=table.index)
    rows = voting_table(table, 3, windows=[], early_stops=[], weights=logs, weight_name="lp")
    # exp(-0.1)+exp(-0.2) = 1.72 > 3*exp(-3) = 0.15
    assert _by_name(rows, "c1")["weighted-maj@all[lp]"].score == 1.0


def test_voting_weight_field_from_the_input(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    rows = [
        {
            "problem_id": "p",
            "sample_idx": i,
            "response": f"\\boxed{{{a}}}",
            "gold_answer": "1",
            "rm": w,
        }
        for i, (a, w) in enumerate([("1", 0.9), ("1", 0.8), ("2", 0.1), ("2", 0.1), ("2", 0.1)])
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    runner = CliRunner()
    args = ["voting", str(path), "--k", "3", "--weight-field", "rm", "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    scores = {a["name"]: a["score"] for a in row["aggregators"]}
    assert scores["maj@all"] == 0.0 and scores["weighted-maj@all[rm]"] == 1.0
    missing = runner.invoke(app, ["voting", str(path), "--weight-field", "nope"])
    assert missing.exit_code == 2 and "--weight-field" in missing.stderr


def test_short_half_vote_equals_brute_force() -> None:
    # c1: g g w w w (None) with lengths 10 10 90 90 90 (50): median 70, so the shorter half is
    # g g and the no-answer sample: g wins where the plain vote picks w.
    table = _table()
    table["response_chars"] = [10, 10, 90, 90, 90, 50, 10, 90, 10, 10, 90, 90]
    rows = voting_table(table, 3, windows=[], early_stops=[])
    first, second = _by_name(rows, "c1"), _by_name(rows, "c2")
    assert first["maj@all"].score == 0.0 and first["short-half-maj@all"].score == 1.0
    # c2: g w v v g g, median 50: short ones g v v -> v wins: 0; the plain vote g: 1
    assert second["maj@all"].score == 1.0 and second["short-half-maj@all"].score == 0.0


def _pass_brute(answers: list[str | None], k: int) -> float:
    subsets = list(itertools.combinations(answers, k))
    return sum("g" in s for s in subsets) / len(subsets)


def test_union_pass_at_k_against_the_best_single_checkpoint() -> None:
    rows = voting_table(_table(), 2, windows=[2], early_stops=[])
    first, second = _by_name(rows, "c1"), _by_name(rows, "c2")
    assert first["pass@2"].score == pytest.approx(_pass_brute(C1, 2))
    assert second["pass@2"].score == pytest.approx(_pass_brute(C2, 2))
    # 2 samples drawn from the 12 pooled ones, against the better checkpoint alone
    assert second["window2-pass@2"].score == pytest.approx(_pass_brute(C1 + C2, 2))
    best = max(_pass_brute(C1, 2), _pass_brute(C2, 2))
    assert second["window2-best-single-pass@2"].score == pytest.approx(best)
    assert second["window2-best-single-pass@2"].failures_avoided is None
    assert first["window2-pass@2"].score is None  # no window of 2 at the first checkpoint
