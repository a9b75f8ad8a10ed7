"""Each benchmark script runs end to end with a tiny N and prints one JSON object."""

from __future__ import annotations

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
    result = _bench("bench_grading.py", "--n", "1500", "--naive-n", "20", "--skip-real")
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
    )
    assert result["real"]["traces"] == 48
    # 4, 2+2, \sqrt{16}, 4, 4 of every 8 are right
    assert result["real"]["outcomes"] == {"correct": 30, "wrong": 18}
    repeats = result["real_repeats"]
    assert len(repeats["runs"]) == 2
    assert repeats["speedup_min"] == min(r["speedup"] for r in repeats["runs"])


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
