"""Grading speed and memory, printed as one JSON object.

Usage: python benchmarks/bench_grading.py [--n 1000000] [--out DIR] [--naive-n 2000]

Generates N synthetic traces (``gen_grading_traces.py``; not timed), then times reading
(``misstep.rollouts.read_traces``) + ``grade_traces`` + ``misstep.metrics.vote_metrics``. The naive
path (math-verify ``parse`` + ``verify`` of every trace's extracted answer against the gold, one
process) is timed on a subsample of ``--naive-n`` traces in the same run and extrapolated per
trace. ``peak_rss_mb`` is the maximum resident set of this process plus its children (pool).
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_grading_traces import write_traces

from misstep.rollouts import GradeStats, extract_answer, grade_traces, read_traces


def _peak_rss_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round((own + children) / 1024, 1)  # Linux reports KiB


def _naive_seconds_per_trace(path: Path, n: int) -> float:
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    traces = list(islice(read_traces(path), n))
    started = time.perf_counter()
    for trace in traces:
        answer = extract_answer(trace.response).answer
        if answer is None or trace.gold_answer is None:
            continue
        verify(parse(f"${trace.gold_answer}$"), parse(f"${answer}$"))
    return (time.perf_counter() - started) / max(1, len(traces))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=None, help="where to write the traces")
    parser.add_argument("--naive-n", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "bench_grading_traces.jsonl"
        gen_started = time.perf_counter()
        n_problems = write_traces(path, args.n)
        gen_s = time.perf_counter() - gen_started

        try:
            from misstep.metrics import vote_metrics
        except ImportError:  # eval not there yet
            vote_metrics = None
        started = time.perf_counter()
        stats = GradeStats()
        graded = grade_traces(read_traces(path), workers=args.workers, stats=stats)
        grade_s = time.perf_counter() - started
        metrics_s = None
        if vote_metrics is not None:
            m_started = time.perf_counter()
            vote_metrics(graded, [1, 4, 16])
            metrics_s = time.perf_counter() - m_started
        seconds = time.perf_counter() - started
        peak = _peak_rss_mb()
        naive = _naive_seconds_per_trace(path, min(args.naive_n, args.n))
    traces_per_s = len(graded) / seconds
    naive_per_s = 1 / naive if naive > 0 else float("inf")
    result = {
        "traces": len(graded),
        "problems": n_problems,
        "seconds": round(seconds, 2),
        "traces_per_s": round(traces_per_s, 1),
        "peak_rss_mb": peak,
        "naive_traces_per_s": round(naive_per_s, 1),
        "speedup": round(traces_per_s / naive_per_s, 1),
        "read_and_grade_s": round(grade_s, 2),
        "vote_metrics_s": None if metrics_s is None else round(metrics_s, 2),
        "pool_seconds": round(stats.equivalence.seconds, 2),
        "pool_tasks": stats.pool_tasks,
        "math_verify_calls": stats.equivalence.calls,
        "timeouts": stats.equivalence.timeouts,
        "generate_s_not_counted": round(gen_s, 2),
        "outcomes": graded["outcome"].value_counts().to_dict(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
