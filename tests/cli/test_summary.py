from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from misstep.cli import app

runner = CliRunner()


def _row(ck: str, step: int, pid: str, gold: str, answer: str | None, i: int) -> dict[str, object]:
    response = "12 + 30 = 42, so" + (f" the answer is $\\boxed{{{answer}}}$." if answer else " we")
    row: dict[str, object] = {
        "checkpoint": ck,
        "step": step,
        "problem_id": pid,
        "sample_idx": i,
        "gold_answer": gold,
        "response": response,
    }
    if answer is None:
        row["finish_reason"] = "length"
    return row


def _write(tmp_path: Path, extra_lines: list[str] | None = None) -> Path:
    rows = []
    # step 100: p1 gold 1/2: \frac{1}{2}, 0.5 (one class, correct) and 3, 3 -> c=2, tie at 4
    for i, a in enumerate([r"\frac{1}{2}", "0.5", "3", "3"]):
        rows.append(_row("global_step_100", 100, "p1", r"\frac{1}{2}", a, i))
    # step 100: p2 gold 7: 7, 7, 7 and one truncated -> c=3
    for i, a in enumerate(["7", "7", "7", None]):
        rows.append(_row("global_step_100", 100, "p2", "7", a, i))
    # step 200: everything right
    for pid, gold, a in (("p1", r"\frac{1}{2}", r"\dfrac12"), ("p2", "7", "7")):
        for i in range(4):
            rows.append(_row("global_step_200", 200, pid, gold, a, i))
    lines = [json.dumps(r) for r in rows] + (extra_lines or [])
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_summary_json_by_hand(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["summary", str(_write(tmp_path)), "--k", "1,4", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)  # stdout holds the data alone
    assert [r["checkpoint"] for r in rows] == ["global_step_100", "global_step_200"]
    first = rows[0]
    assert first["dataset"] == "default" and first["n_samples"] == 8
    assert first["pass@1"] == pytest.approx(0.625)  # (2/4 + 3/4) / 2
    # maj@4: p1 ties 1/2 (0.5 and \frac{1}{2} are one vote) vs 3; p2 wins -> (0.5 + 1) / 2
    assert first["maj@4"] == pytest.approx(0.75)
    assert first["sc_gain@4"] == pytest.approx(0.125)
    assert first["majority_failures"] == 1  # p1's tie, 1 of 2 problems
    assert first["majority_failure_rate"] == pytest.approx(0.5)
    assert (first["n_correct"], first["n_wrong"], first["n_truncated"]) == (5, 2, 1)
    assert rows[1]["pass@1"] == 1.0 and rows[1]["maj@4"] == 1.0


def test_summary_csv_and_table(tmp_path: Path) -> None:
    path = _write(tmp_path)
    csv = runner.invoke(app, ["summary", str(path), "--k", "1", "--format", "csv"])
    assert csv.exit_code == 0
    lines = csv.stdout.strip().splitlines()
    assert lines[0].startswith(
        "checkpoint,dataset,n_problems,n_samples,pass@1,pass@1_ci_low,pass@1_ci_high,maj@1,"
    )
    assert "change.pass@1.delta" in lines[0] and "change.pass@1.ci_low" in lines[0]
    assert len(lines) == 3
    table = runner.invoke(app, ["summary", str(path)])
    assert table.exit_code == 0
    assert "Vote metrics per checkpoint" in table.stdout and "global_step_200" in table.stdout
    # default k: 1,4,16 capped at the 4 samples per problem -> no 16 column
    assert "maj@4" in table.stdout and "maj@16" not in table.stdout


@pytest.mark.parametrize("k", ["0", "9", "a,b"])
def test_bad_k_exits_2(tmp_path: Path, k: str) -> None:
    result = runner.invoke(app, ["summary", str(_write(tmp_path)), "--k", k])
    assert result.exit_code == 2
    assert "--k" in result.stderr


def test_malformed_line_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, ["{not json"])
    result = runner.invoke(app, ["summary", str(path), "--format", "json"])
    assert result.exit_code == 2
    assert "traces.jsonl" in result.stderr and "line 17" in result.stderr
    assert result.stdout == ""


def test_skip_invalid_reports_rejects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, ['{"problem_id": "p9"}'])  # no response
    result = runner.invoke(app, ["summary", str(path), "--format", "json", "--skip-invalid"])
    assert result.exit_code == 0, result.output
    assert "1 invalid row(s) rejected" in result.stderr
    assert "traces.rejects.jsonl" in result.stderr
    assert (tmp_path / "traces.rejects.jsonl").exists()
    assert len(json.loads(result.stdout)) == 2


def test_coverage_json(tmp_path: Path) -> None:
    result = runner.invoke(app, ["coverage", str(_write(tmp_path)), "--format", "json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["checkpoints"] == ["global_step_100", "global_step_200"]
    assert got["solved"] == [2, 2]
    assert got["jaccard"] == [[1.0, 1.0], [1.0, 1.0]]
    assert got["retention"] == [None, 1.0] and got["forgetting"] == [None, 0.0]
    assert got["union_coverage"] == 1.0
    table = runner.invoke(app, ["coverage", str(_write(tmp_path))])
    assert table.exit_code == 0 and "Jaccard" in table.stdout


@pytest.mark.slow
def test_summary_on_the_real_rl_run(shared_data: Path) -> None:
    path = shared_data / "reasoning_gym_eval" / "llama_rl_ckpts.jsonl.gz"
    result = runner.invoke(app, ["summary", str(path), "--k", "1,50", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    # 2 checkpoints x 2 datasets; 50 samples per problem; 30 AIME24 and 40 AMC23 problems
    assert [(r["dataset"], r["n_problems"], r["n_samples"]) for r in rows[:2]] == [
        ("aime24", 30, 1500),
        ("amc23", 40, 2000),
    ]
    assert [r["checkpoint"] for r in rows] == ["llama3.2-3b-rg-step400"] * 2 + [
        "llama3.2-3b-rg-step800"
    ] * 2
    # The data's README: accuracy about 2.5% on AIME24 and 14% on AMC23.
    assert rows[0]["pass@1"] == pytest.approx(0.025, abs=0.01)
    assert rows[1]["pass@1"] == pytest.approx(0.14, abs=0.02)
