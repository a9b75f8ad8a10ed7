"""Each benchmark script runs end to end with a tiny N and prints one JSON object."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT


def _bench(script: str, *args: str, timeout: int = 300) -> Any:
    """Run ``benchmarks/<script>`` with ``args``; its one JSON object."""
    out = subprocess.run(
        [sys.executable, f"benchmarks/{script}", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return json.loads(out.stdout)


def test_bench_grading_smoke() -> None:
    result = _bench(
        "bench_grading.py", "--n", "1500", "--naive-n", "20", "--skip-real", "--skip-few"
    )
    result = result["synthetic"]
    assert result["traces"] == 1500
    for key in ("seconds", "traces_per_s", "peak_rss_mb", "naive_traces_per_s", "speedup"):
        assert result[key] > 0
    assert sum(result["outcomes"].values()) == 1500
    assert result["ungrouped_answers"] == 0


def test_bench_grading_real_repeats_smoke(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    answers = ["4", "2+2", "x^2", "\\sqrt{16}", "5", "\\{1,2\\}", "4", "4"]
    rows = [  # 3 problems of 16 samples (the benchmark's vote metrics go to k = 16)
        {
            "trace_id": f"t{i}",
            "checkpoint": "step_1",
            "problem_id": f"p{i % 3}",
            "gold_answer": "4",
            "response": f"So the answer is \\boxed{{{answers[i % 8]}}}.",
        }
        for i in range(48)
    ]
    real.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = _bench(
        "bench_grading.py",
        "--n",
        "200",
        "--naive-n",
        "5",
        "--real",
        str(real),
        "--real-repeats",
        "2",
        "--skip-few",
    )
    assert result["real"]["traces"] == 48
    # 4, 2+2, \sqrt{16}, 4, 4 of every 8 are right
    assert result["real"]["outcomes"] == {"correct": 30, "wrong": 18}
    repeats = result["real_repeats"]
    assert len(repeats["runs"]) == 2
    assert repeats["speedup_min"] == min(r["speedup"] for r in repeats["runs"])


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row) + "\n" for row in rows)
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)


def test_bench_grading_few_samples_smoke(tmp_path: Path) -> None:
    boxed = "So the answer is \\boxed{{{}}}."
    pb = [  # problem a: gold from t0 (correct), samples t1 and t2; problem b: no correct one
        {"trace_id": "t0", "problem_id": "a", "subset": "math", "correct": True},
        {"trace_id": "t1", "problem_id": "a", "subset": "math", "correct": False},
        {"trace_id": "t2", "problem_id": "a", "subset": "math", "correct": True},
        {"trace_id": "t3", "problem_id": "b", "subset": "math", "correct": False},
        {"trace_id": "t4", "problem_id": "b", "subset": "math", "correct": False},
    ]
    answers = ["(1, 2)", "(2, 1)", "\\left(1, 2\\right)", "3", "4"]
    for row, answer in zip(pb, answers, strict=True):
        row.update(response=boxed.format(answer), problem="?", gold_answer=None)
    mrben = [
        {
            "trace_id": f"m{i}",
            "problem_id": "m",
            "source": "mrben_math",
            "subset": "college_math",
            "model": f"model{i}",
            "gold_answer": "B",
            "problem": "Pick one.\nOptions:\nA: 4\nB: 8",
            "response": f"Step 1: ...\nSolution: {answer}",
        }
        # 8 is option B's text; the third solution is left out (2 per problem)
        for i, answer in enumerate(["\\boxed{8}", "Choice_A", "Choice_B"])
    ]
    rg = [
        {
            "trace_id": f"r{i}",
            "checkpoint": "c",
            "step": 1,
            "dataset": "aime24",
            "problem_id": "r",
            "sample_idx": i,
            "gold_answer": "7.0",
            "response": boxed.format(7 if i else 8),
        }
        for i in range(4)
    ]
    _write(tmp_path / "processbench" / "traces.jsonl", pb)
    _write(tmp_path / "mrben" / "traces.jsonl", mrben)
    _write(tmp_path / "reasoning_gym_eval" / "llama_rl_ckpts.jsonl.gz", rg)
    result = _bench(
        "bench_grading.py", "--n", "200", "--naive-n", "2", "--skip-real", "--data", str(tmp_path),
        "--few-repeats", "2",
    )  # fmt: skip
    few = result["few_samples"]
    assert few["traces_per_source"] == {"processbench": 2, "mrben": 2, "reasoning_gym": 4}
    # 3 problems of 2 samples: a (gold (1, 2)), m, and r split into 2 pairs
    assert few["problems"] == 4 and few["samples_per_problem"] == 2.0
    # right: (1, 2) in another form, 8 (option B), and r's samples 1 to 3; wrong: (2, 1), A, 8
    assert few["correct"] == 5
    # math-verify does not map an option's text to its letter: that disagreement is listed
    assert [d["trace_id"] for d in few["disagreements"]] == ["m0"]
    assert len(few["runs"]) == 2 and few["speedup_min"] > 0
    assert set(few["parts"]) == {"processbench", "mrben", "reasoning_gym"}


def test_bench_link_smoke(tmp_path: Path) -> None:
    rows = [
        {
            "checkpoint": f"step_{c}",
            "step": c,
            "problem_id": f"p{p}",
            "sample_idx": s,
            "gold_answer": "4",
            "response": f"So \\boxed{{{4 if (p + s + c) % 3 else 5}}}.",
        }
        for c in (1, 2)
        for p in range(3)
        for s in range(4)
    ]
    _write(tmp_path / "real.jsonl", rows)
    result = _bench(
        "bench_link.py", "--checkpoints", "2", "--problems", "10", "--samples", "4",
        "--replicas", "3", "--real", str(tmp_path / "real.jsonl"),
    )  # fmt: skip
    assert result["traces"] == 80
    assert result["real"]["traces"] == 3 * 24
    for case in (result, result["real"]):
        assert case["voting_rows"] == 2  # one row per checkpoint, datasets pooled
        assert case["report_seconds"] >= case["link_seconds"] > 0


def test_bench_cache_smoke(tmp_path: object) -> None:
    result = _bench("bench_cache.py", "--n", "300", "--skip-real")
    case = result["synthetic"]
    assert case["traces"] == 300
    for key in ("first_s", "second_s", "ratio", "load_first_s", "load_cached_s", "load_ratio"):
        assert case[key] > 0


def test_bench_no_answer_smoke(tmp_path: Path) -> None:
    data = tmp_path / "mrben"
    data.mkdir()
    rows = [
        {"problem_id": "p", "response": "Step 1: ...\nSolution: Choice_B", "correct": False},
        {"problem_id": "p", "response": "I am not sure.", "correct": False},
    ]
    (data / "traces.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = _bench("bench_no_answer.py", "--data", str(tmp_path), timeout=120)
    assert result == {
        "mrben": {
            "traces": 2,
            "no_answer": 1,
            "no_answer_share": 0.5,
            "wrong": 2,
            "no_answer_among_wrong_share": 0.5,
            "methods": {"choice": 1, "none": 1},
        }
    }


def test_bench_servers_smoke() -> None:
    result = _bench("bench_servers.py", "--n", "60", "--servers", "2")
    assert result["labels"] == 60 and result["servers"] == 2
    assert result["one_server_labels_per_s"] > 0 and result["ratio"] > 0


@pytest.mark.slow
def test_bench_review_smoke(shared_data: Path) -> None:
    result = _bench(
        "bench_review.py", "--traces", "14000", "--labels", "2000", "--requests", "5", timeout=600
    )
    assert (result["traces"], result["labels"]) == (14000, 2000)
    for key in ("open_trace", "list_filtered_page_of_50"):
        assert result[key]["n"] == 5 and 0 < result[key]["p50_ms"] <= result[key]["max_ms"]


def test_bench_estimators_smoke() -> None:
    result = _bench(
        "bench_estimators.py", "--runs", "2", "--wrong", "400", "--human", "60", "--n-boot", "30"
    )
    for case in ("no_drift", "drift"):
        for name in ("ppi", "pooled", "human_only", "active"):
            assert 0 <= result[case][name]["coverage"] <= 1
            assert result[case][name]["intervals"] == 2 * 3 * 5
        assert result[case]["plan"]["draws"] == 5


def test_bench_discover_smoke() -> None:
    result = _bench(
        "bench_discover.py",
        *("--n", "300", "--quality-n", "200", "--seeds", "1", "--embeddings", "tfidf"),
    )
    assert result["speed"]["tfidf"]["texts"] == 300 and result["speed"]["tfidf"]["seconds"] > 0
    f1 = result["quality"]["tfidf"]["held_out"]["f1_mean"]
    assert 0.0 <= f1 <= 1.0
    assert set(result["topics"]["tfidf"]) == {"carry", "sign"}


def test_bench_harness_agreement_realcritic_smoke(tmp_path: Path) -> None:
    """Four RealCritic-shaped rows of two models: misstep's grades against the harness's, by
    hand: model a's MATH answers 1/2 (gold 1/2, harness True) and 3 (gold 4, harness True:
    a disagreement), model b's ARC answer B (gold B, True) and GSM8K 7 (gold 8, False)."""
    rows = {
        "math": [
            {"idx": 0, "model": "a", "question": "q0", "gt": "\\frac{1}{2}", "pred": "1/2",
             "reasoning": "So \\boxed{\\frac{1}{2}}.", "previous_score": [True]},
            {"idx": 1, "model": "a", "question": "q1", "gt": "4", "pred": "4",
             "reasoning": "So \\boxed{3}.", "previous_score": [True]},
        ],
        "arc-challenge": [
            {"idx": 0, "model": "b", "question": "Which?\nAnswer Choices: (A) x (B) y",
             "gt": "B", "pred": "B", "reasoning": "\\boxed{B}", "previous_score": [True]},
        ],
        "gsm8k": [
            {"idx": 0, "model": "b", "question": "q", "gt": "8", "pred": "7",
             "reasoning": "The answer is \\boxed{7}.", "previous_score": [False]},
        ],
    }  # fmt: skip
    for benchmark, items in rows.items():
        (tmp_path / benchmark).mkdir()
        lines = "".join(json.dumps(row) + "\n" for row in items)
        (tmp_path / benchmark / "test.jsonl").write_text(lines, encoding="utf-8")
    result = _bench("bench_harness_agreement.py", "--realcritic", str(tmp_path), "--no-shared")
    models = result["sets"]["realcritic"]["models"]
    assert models["a"]["source_accuracy"] == 100.0  # 2 of 2
    assert models["a"]["misstep_accuracy"] == 50.0  # 1 of 2: 3 is not 4
    assert models["b"]["source_accuracy"] == models["b"]["misstep_accuracy"] == 50.0
    pairs = {(p["model"], p["benchmark"]): p for p in result["sets"]["realcritic"]["pairs"]}
    assert pairs[("a", "math")]["disagreements"] == 1
    assert pairs[("a", "math")]["same_answer"] == 0  # the harness read 4, misstep 3
    assert result["summary"]["pairs"] == 3
