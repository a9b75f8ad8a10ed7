"""Grading speed and memory on answers as diverse as real ones, printed as one JSON object.

Usage: python benchmarks/bench_grading.py [--n 1000000] [--out DIR] [--naive-n 2000]
       [--real PATH] [--skip-real] [--real-repeats 5]

Two cases, each against the naive path measured in the same run (math-verify ``parse`` of the
gold and of the extracted answer + ``verify``, once per trace, in one process):

- ``synthetic``: N traces from ``gen_grading_traces.py`` (not timed), whose answers have the
  diversity measured on the shared real run; times reading (``misstep.rollouts.read_traces``)
  + ``grade_traces`` + ``misstep.metrics.vote_metrics``. The naive path is timed on an evenly
  spaced subsample of ``--naive-n`` traces and extrapolated per trace.
- ``real``: the shared Reasoning Gym run (7,000 traces, about 41 distinct answers per problem),
  read + regraded against its gold answers; the naive path runs on every trace. It takes about
  2 s against about 20 s, so machine noise moves its ratio: it is measured ``--real-repeats``
  times, each time in a fresh process (a process that has already imported math-verify would
  fork warm workers and flatter the ratio), and ``real_repeats`` gives each repeat's seconds,
  naive seconds and ratio, with their minimum and median.

``peak_rss_mb`` is the maximum resident set of this process plus its children (the pool), so far
in the run (the real case runs first).
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_grading_traces import write_traces

from misstep.rollouts import GradeStats, Trace, extract_answer, grade_traces, read_traces

REAL_RUN = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "reasoning_gym_eval"
    / "llama_rl_ckpts.jsonl.gz"
)


def _peak_rss_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round((own + children) / 1024, 1)  # Linux reports KiB


def _naive_seconds_per_trace(traces: list[Trace]) -> float:
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    parse("$1$")  # math-verify's one-off set-up is not per-trace work
    started = time.perf_counter()
    for trace in traces:
        answer = extract_answer(trace.response).answer
        if answer is None or trace.gold_answer is None:
            continue
        verify(parse(f"${trace.gold_answer}$"), parse(f"${answer}$"))
    return (time.perf_counter() - started) / max(1, len(traces))


def _case(path: Path, regrade: bool, workers: int | None, naive: list[Trace]) -> dict[str, object]:
    try:
        from misstep.metrics import vote_metrics
    except ImportError:  # pragma: no cover
        vote_metrics = None
    started = time.perf_counter()
    stats = GradeStats()
    graded = grade_traces(read_traces(path), regrade=regrade, workers=workers, stats=stats)
    grade_s = time.perf_counter() - started
    metrics_s = None
    if vote_metrics is not None:
        m_started = time.perf_counter()
        vote_metrics(graded, [1, 4, 16])
        metrics_s = time.perf_counter() - m_started
    seconds = time.perf_counter() - started
    peak = _peak_rss_mb()
    naive_s = _naive_seconds_per_trace(naive)
    traces_per_s = len(graded) / seconds
    naive_per_s = 1 / naive_s if naive_s > 0 else float("inf")
    distinct = graded.dropna(subset=["answer"]).groupby(["dataset", "problem_id"])["answer"]
    return {
        "traces": len(graded),
        "problems": int(graded.groupby(["dataset", "problem_id"]).ngroups),
        "distinct_answers_per_problem": round(float(distinct.nunique().mean()), 1),
        "seconds": round(seconds, 2),
        "traces_per_s": round(traces_per_s, 1),
        "peak_rss_mb": peak,
        "naive_traces_measured": len(naive),
        "naive_traces_per_s": round(naive_per_s, 1),
        "naive_seconds_for_all": round(naive_s * len(graded), 1),
        "speedup": round(traces_per_s / naive_per_s, 1),
        "read_and_grade_s": round(grade_s, 2),
        "vote_metrics_s": None if metrics_s is None else round(metrics_s, 2),
        "pool_seconds": round(stats.equivalence.seconds, 2),
        "pool_tasks": stats.pool_tasks,
        "math_verify_calls": stats.equivalence.calls,
        "timeouts": stats.equivalence.timeouts,
        "ungrouped_answers": stats.equivalence.ungrouped,
        "outcomes": graded["outcome"].value_counts().to_dict(),
    }


def _repeats(args: argparse.Namespace) -> dict[str, object]:
    """The real case again, ``--real-repeats`` times, each in a fresh process."""
    runs: list[dict[str, float]] = []
    command = [sys.executable, __file__, "--real-only", "--real", str(args.real)]
    if args.workers is not None:
        command += ["--workers", str(args.workers)]
    for _ in range(args.real_repeats):
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        case = json.loads(out.strip().splitlines()[-1])
        runs.append(
            {
                "seconds": case["seconds"],
                "naive_seconds": case["naive_seconds_for_all"],
                "speedup": case["speedup"],
            }
        )
    ratios = sorted(r["speedup"] for r in runs)
    return {
        "runs": runs,
        "speedup_min": ratios[0] if ratios else None,
        "speedup_median": statistics.median(ratios) if ratios else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=None, help="where to write the traces")
    parser.add_argument("--naive-n", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--real", type=Path, default=REAL_RUN)
    parser.add_argument("--skip-real", action="store_true")
    parser.add_argument("--real-repeats", type=int, default=5)
    parser.add_argument("--real-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    result: dict[str, object] = {}
    if not args.skip_real and args.real.exists():
        real = list(read_traces(args.real))
        result["real"] = _case(args.real, True, args.workers, real)
        if args.real_only:
            print(json.dumps(result["real"]))
            return
        result["real_repeats"] = _repeats(args)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "bench_grading_traces.jsonl"
        gen_started = time.perf_counter()
        write_traces(path, args.n)
        gen_s = time.perf_counter() - gen_started
        every = max(1, args.n // max(1, args.naive_n))
        naive = [t for i, t in enumerate(read_traces(path)) if i % every == 0][: args.naive_n]
        case = _case(path, False, args.workers, naive)
        case["generate_s_not_counted"] = round(gen_s, 2)
        result["synthetic"] = case
    print(json.dumps(result))


if __name__ == "__main__":
    main()
