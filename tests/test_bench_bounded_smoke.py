"""The bounded-work and rules benchmarks run end to end on a tiny data folder and print JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO_ROOT


def _bench(script: str, *args: str) -> Any:
    out = subprocess.run(
        [sys.executable, f"benchmarks/{script}", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout)


def _data(tmp_path: Path) -> Path:
    """A data folder shaped like ../shared/data: two wrong GSM8K-style solutions, one tagged."""
    folder = tmp_path / "mrben"
    folder.mkdir()
    traces = [
        {
            "trace_id": f"mr_gsm8k-{i}",
            "source": "mr_gsm8k_partial",
            "problem_id": f"p{i}",
            "problem": "How many?",
            "response": response,
            "steps": response.split("\n\n"),
        }
        for i, response in enumerate(
            [
                "Step 1: He has 3 + 4 = 8 apples.\n\nStep 2: #### 8",  # 7: wrong at step 0
                "Step 1: She walks 3 hours + 30 minutes = 210 minutes.\n\nStep 2: #### 210",
            ]
        )
    ]
    labels = [
        {"trace_id": "mr_gsm8k-0", "error_type": "arithmetic", "first_error_step": 0},
        {"trace_id": "mr_gsm8k-1", "error_type": "misread", "first_error_step": 1},
    ]
    with open(folder / "traces.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(t) + "\n" for t in traces)
    with open(folder / "human_labels.jsonl", "w", encoding="utf-8") as fh:
        for label in labels:
            row = {**label, "mapping_method": "annotator_prefix_tag", "has_error": True}
            fh.write(json.dumps(row) + "\n")
    return tmp_path


def test_bench_rules_counts_hits_and_false_alarms(tmp_path: Path) -> None:
    result = _bench("bench_rules.py", "--n", "20", "--data", str(_data(tmp_path)))
    flags = result["flags"]["mr_gsm8k"]
    # one positive, flagged at its first error step; the unit sum (180 + 30 = 210) is right
    assert (flags["positives"], flags["flags"], flags["hits"], flags["false_alarms"]) == (
        1,
        1,
        1,
        0,
    )
    assert (flags["precision"], flags["recall"]) == (1.0, 1.0)


def test_bench_bounded_smoke(tmp_path: Path) -> None:
    result = _bench("bench_bounded.py", "--sizes", "0.01", "--data", str(_data(tmp_path)))
    assert result["sizes_mib"] == [0.01]
    assert result["split"][0]["steps"] > 0
    assert result["rules_judge"][0]["status"] == "ok"
    big = result["label"]["with_big_trace"][0]
    assert big["records"] == 3 and big["big_trace"]["status"] == "ok"
