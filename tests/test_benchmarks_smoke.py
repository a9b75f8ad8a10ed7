"""Each benchmark script runs end to end with a tiny N and prints one JSON object."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_bench_grading_smoke() -> None:
    out = subprocess.run(
        [sys.executable, "benchmarks/bench_grading.py", "--n", "1500", "--naive-n", "20"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result = json.loads(out.stdout)
    assert result["traces"] == 1500
    for key in ("seconds", "traces_per_s", "peak_rss_mb", "naive_traces_per_s", "speedup"):
        assert result[key] > 0
    assert sum(result["outcomes"].values()) == 1500


def test_bench_cache_smoke(tmp_path: object) -> None:
    out = subprocess.run(
        [sys.executable, "benchmarks/bench_cache.py", "--n", "300", "--skip-real"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result = json.loads(out.stdout)
    case = result["synthetic"]
    assert case["traces"] == 300
    for key in ("first_s", "second_s", "ratio", "load_first_s", "load_cached_s", "load_ratio"):
        assert case[key] > 0
