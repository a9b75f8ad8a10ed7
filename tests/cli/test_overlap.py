"""``misstep sample --annotators ... --overlap R`` end to end: the task's rows per person, their
labels imported with the sidecar's weights, agree on the real overlap, and the corrected
estimate using each trace once (its human consensus)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from misstep.cli.app import app

runner = CliRunner()
TYPES = ["arithmetic", "misread", "other"]


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _run(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """Two checkpoints of 150 wrong traces; the judge right 80% of the time."""
    rng = np.random.default_rng(1)
    traces, labels, truth = [], [], {}
    for ck in ("step_1", "step_2"):
        for i in range(150):
            tid = f"{ck}/{i}"
            truth[tid] = TYPES[int(rng.choice(3, p=[0.5, 0.3, 0.2]))]
            said = truth[tid] if rng.random() < 0.8 else TYPES[int(rng.integers(3))]
            traces.append(
                {
                    "trace_id": tid,
                    "problem_id": f"p{i // 3}",
                    "response": "1 + 1 = 3",
                    "pred_answer": "1",
                    "gold_answer": "2",
                    "checkpoint": ck,
                }
            )
            labels.append({"trace_id": tid, "judge": "j", "status": "ok", "error_type": said})
    run = tmp_path / "run"
    run.mkdir()
    _jsonl(run / "labels.jsonl", labels)
    return _jsonl(tmp_path / "traces.jsonl", traces), run, truth


def test_overlap_from_task_to_agree_and_summary(tmp_path: Path) -> None:
    traces, run, truth = _run(tmp_path)
    task = tmp_path / "task.jsonl"
    args = ["sample", str(traces), "--labels", str(run), "--n", "120", "--out", str(task)]
    drawn = runner.invoke(app, [*args, "--annotators", "alice,bob,carol", "--overlap", "0.5"])
    assert drawn.exit_code == 0, drawn.output
    rows = [json.loads(x) for x in task.read_text().splitlines()]
    per_trace = Counter(r["trace_id"] for r in rows)
    # 120 traces, round(0.5 * 120) = 60 of them to two people: 180 rows, 60 each
    assert len(per_trace) == 120 and Counter(per_trace.values()) == {1: 60, 2: 60}
    assert Counter(r["annotator"] for r in rows) == {"alice": 60, "bob": 60, "carol": 60}
    assert "60 of them to two people" in drawn.stderr
    # People label what they were given: right 75% of the time, else another type.
    rng = np.random.default_rng(2)
    for r in rows:
        right = rng.random() < 0.75
        r["error_type"] = (
            truth[r["trace_id"]]
            if right
            else TYPES[(TYPES.index(truth[r["trace_id"]]) + 1 + int(rng.integers(2))) % 3]
        )
    _jsonl(task, rows)  # filled in place: the sidecar is beside it
    human = tmp_path / "human.jsonl"
    done = runner.invoke(app, ["import-labels", str(task), "--out", str(human)])
    assert done.exit_code == 0, done.output
    assert "weights from" in done.stderr and "judge.jsonl" in done.stderr
    # agree: the pairs of people on the traces they share
    report = runner.invoke(
        app, ["agree", "--human", str(human), "--format", "json", "--n-boot", "50"]
    )
    assert report.exit_code == 0, report.output
    got = json.loads(report.stdout)
    shared = Counter(
        tuple(sorted(r["annotator"] for r in rows if r["trace_id"] == t))
        for t, n in per_trace.items()
        if n == 2
    )
    pairs = {(p["a"], p["b"]): p for p in got["pairs"]}
    assert {tuple(sorted(k)): p["n"] for k, p in pairs.items()} == dict(shared)
    for p in pairs.values():
        assert p["cohen_kappa_ci"][0] <= p["cohen_kappa"] <= p["cohen_kappa_ci"][1]
    assert got["overall"]["n_items"] == 60 and got["overall"]["krippendorff_alpha_ci"]
    # summary: each trace once, as its consensus; a doubled trace whose two people disagree
    # is a tie and is left out (until adjudicated)
    labels_of: dict[str, set[str]] = {}
    for r in rows:
        labels_of.setdefault(r["trace_id"], set()).add(r["error_type"])
    summary = runner.invoke(
        app,
        ["summary", str(traces), "--labels", str(run), "--human", str(human), "--format", "json"],
    )
    assert summary.exit_code == 0, summary.output
    for row in json.loads(summary.stdout):
        ck = row["checkpoint"]
        agreed = sum(1 for t, s in labels_of.items() if t.startswith(ck + "/") and len(s) == 1)
        assert row["n_human"] == agreed


def test_overlap_errors(tmp_path: Path) -> None:
    traces, run, _ = _run(tmp_path)
    base = ["sample", str(traces), "--labels", str(run), "--out"]
    for extra, says in (
        (["--overlap", "0.3"], "--annotators"),
        (["--annotators", "alice", "--overlap", "0.3"], "two annotators"),
        (["--annotators", "alice,bob", "--overlap", "1.5"], "--overlap"),
        (["--annotators", "alice,alice"], "distinct"),
        (["--annotators", "../etc"], "--annotators"),
    ):
        result = runner.invoke(app, [*base, str(tmp_path / "t.jsonl"), *extra])
        assert result.exit_code == 2 and says in result.stderr, (extra, result.output)
    result = runner.invoke(app, [*base, str(tmp_path / "t.json"), "--annotators", "alice,bob"])
    assert result.exit_code == 2 and "Label Studio" in result.stderr
