"""Labelling throughput and memory of the ``openai`` backend against a zero-latency server.

Writes N synthetic wrong traces (default 20,000), starts ``tests/judge/fake_openai.py`` as its
own process (so that the server's CPU is not the client's), and runs the real label pipeline:
prompt rendering, the HTTP round trip through the openai client, schema validation, evidence
check and the append to labels.jsonl. Prints one JSON object.

    python benchmarks/bench_label.py [--n 20000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SERVER = REPO / "tests" / "judge" / "fake_openai.py"


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _write_traces(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            a, b = i % 97, i % 89 + 3
            response = (
                f"We need the sum of {a} and {b}.\n\n"
                f"First, {a} + {b} = {a + b + 1}.\n\n"
                f"Then we double it: 2 * {a + b + 1} = {2 * (a + b + 1)}.\n\n"
                f"The answer is {2 * (a + b + 1)}."
            )
            row = {
                "trace_id": f"t{i}",
                "problem_id": f"p{i % 500}",
                "checkpoint": f"step_{(i % 4) * 100}",
                "problem": f"Find twice the sum of {a} and {b}.",
                "response": response,
                "correct": False,
                "pred_answer": str(2 * (a + b + 1)),
            }
            fh.write(json.dumps(row) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()

    from misstep.judge import JudgeConfig
    from misstep.pipelines import LabelProgress, run_labeling
    from misstep.taxonomy import load_taxonomy

    server = subprocess.Popen(
        [sys.executable, str(SERVER)], stdout=subprocess.PIPE, text=True, cwd=str(REPO)
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().split()[1])
        with tempfile.TemporaryDirectory() as tmp:
            traces = Path(tmp) / "traces.jsonl"
            _write_traces(traces, args.n)
            marks = {args.n // 4: "rss_mb_at_n_4", args.n // 2: "rss_mb_at_n_2"}
            rss: dict[str, float] = {}

            def progress(state: LabelProgress) -> None:
                key = marks.get(state.done)
                if key is not None and key not in rss:
                    rss[key] = round(_rss_mb(), 1)

            config = JudgeConfig(
                backend="openai",
                base_url=f"http://127.0.0.1:{port}/v1",
                concurrency=args.concurrency,
            )
            cpu0 = time.process_time()
            start = time.perf_counter()
            summary = run_labeling(
                traces, Path(tmp) / "run", config, taxonomy=load_taxonomy(None), progress=progress
            )
            seconds = time.perf_counter() - start
            cpu = time.process_time() - cpu0
            rss["rss_mb_at_n"] = round(_rss_mb(), 1)
    finally:
        server.terminate()
        server.wait(timeout=10)
    result: dict[str, Any] = {
        "labels": summary.written,
        "ok": summary.status_counts.get("ok", 0),
        "seconds": round(seconds, 2),
        "labels_per_s": round(summary.written / seconds, 1),
        "client_ms_per_label": round(1000.0 * cpu / max(1, summary.written), 3),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        **rss,
        "concurrency": args.concurrency,
        "note": "client_ms_per_label is the client process's CPU time per label; the fake "
        "server runs in its own process on the same (shared, noisy) cores",
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
