"""Grading speed and memory on answers as diverse as real ones, printed as one JSON object.

Usage: python benchmarks/bench_grading.py [--n 1000000] [--out DIR] [--naive-n 2000]
       [--real PATH] [--skip-real] [--real-repeats 5] [--data DIR] [--skip-few]
       [--few-repeats 3]

Three cases, each against the naive path measured in the same run (math-verify ``parse`` of the
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

- ``few_samples``: an evaluation with about 2 samples per problem, built from the shared real
  data (``few_samples_case.py``: ProcessBench, Mr-Ben, MR-GSM8K and the Reasoning Gym run
  split into two-sample problems; every answer and gold in a real form), regraded against its
  golds; ``--few-repeats`` fresh processes, each timing misstep (read + grade) and then the
  naive path on every trace. Each run also compares the grades trace by trace
  (``disagreements``: every trace where misstep and math-verify differ, with both answers).
  ``parts`` gives, once, the same figures for each source alone (fresh processes too).

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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from few_samples_case import write_few_samples
from gen_grading_traces import write_traces

from misstep.rollouts import GradeStats, Trace, extract_answer, grade_traces, read_traces

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
REAL_RUN = SHARED_DATA / "reasoning_gym_eval" / "llama_rl_ckpts.jsonl.gz"
PARTS = {
    "processbench": ("gsm8k", "math", "olympiadbench", "omnimath"),
    "mrben": ("college_math", "high_school_math", "mr_gsm8k"),
    "reasoning_gym": ("aime24", "amc23"),
}
"""The few-samples case's sources, by the datasets they write (``few_samples_case.py``)."""


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


def _few_once(path: Path, workers: int | None) -> dict[str, object]:
    """The few-samples case in this (fresh) process: misstep first, then the naive path on
    every trace, then the grades compared trace by trace."""
    started = time.perf_counter()
    stats = GradeStats()
    graded = grade_traces(read_traces(path), regrade=True, workers=workers, stats=stats)
    seconds = time.perf_counter() - started
    traces = list(read_traces(path))
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    parse("$1$")  # math-verify's one-off set-up is not per-trace work
    naive: list[bool] = []
    naive_started = time.perf_counter()
    for trace in traces:
        answer = extract_answer(trace.response).answer
        if answer is None or trace.gold_answer is None:
            naive.append(False)
            continue
        naive.append(bool(verify(parse(f"${trace.gold_answer}$"), parse(f"${answer}$"))))
    naive_s = time.perf_counter() - naive_started
    disagreements = [
        {
            "trace_id": trace.trace_id,
            "dataset": trace.dataset,
            "gold": trace.gold_answer,
            "answer": answer,
            "misstep": bool(mine),
            "math_verify": theirs,
        }
        for trace, answer, mine, theirs in zip(
            traces, graded["answer"], graded["correct"], naive, strict=True
        )
        if bool(mine) != theirs
    ]
    return {
        "traces": len(graded),
        "problems": int(graded.groupby(["dataset", "problem_id"]).ngroups),
        "seconds": round(seconds, 2),
        "naive_seconds": round(naive_s, 2),
        "speedup": round(naive_s / seconds, 1),
        "math_verify_calls": stats.equivalence.calls,
        "pool_tasks": stats.pool_tasks,
        "correct": int(graded["correct"].sum()),
        "naive_correct": sum(naive),
        "disagreements": disagreements,
    }


def _fresh(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--few-only", str(path)]
    if args.workers is not None:
        command += ["--workers", str(args.workers)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _few_samples(args: argparse.Namespace, tmp: Path) -> dict[str, object]:
    path = tmp / "few_samples.jsonl"
    sources = write_few_samples(path, args.data)
    runs = [_fresh(args, path) for _ in range(args.few_repeats)]
    ratios = sorted(float(r["speedup"]) for r in runs)
    first = runs[0]
    parts: dict[str, object] = {}
    rows = path.read_bytes().splitlines(keepends=True)
    for name, datasets in PARTS.items():
        part = tmp / f"few_samples_{name}.jsonl"
        wanted = tuple(f'"dataset":"{d}"'.encode() for d in datasets)
        part.write_bytes(b"".join(r for r in rows if any(w in r for w in wanted)))
        got = _fresh(args, part)
        got["disagreements"] = len(got["disagreements"])  # listed once, for the whole case
        parts[name] = got
    return {
        "traces": first["traces"],
        "traces_per_source": sources,
        "problems": first["problems"],
        "samples_per_problem": round(int(first["traces"]) / int(first["problems"]), 2),
        "runs": [
            {k: r[k] for k in ("seconds", "naive_seconds", "speedup", "math_verify_calls")}
            for r in runs
        ],
        "speedup_min": ratios[0],
        "speedup_median": statistics.median(ratios),
        "correct": first["correct"],
        "naive_correct": first["naive_correct"],
        "disagreements": first["disagreements"],
        "parts": parts,
    }


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
    parser.add_argument("--data", type=Path, default=SHARED_DATA, help="the shared real data")
    parser.add_argument("--skip-few", action="store_true")
    parser.add_argument("--few-repeats", type=int, default=3)
    parser.add_argument("--few-only", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.few_only is not None:
        print(json.dumps(_few_once(args.few_only, args.workers)))
        return
    result: dict[str, object] = {}
    if not args.skip_real and args.real.exists():
        real = list(read_traces(args.real))
        result["real"] = _case(args.real, True, args.workers, real)
        if args.real_only:
            print(json.dumps(result["real"]))
            return
        result["real_repeats"] = _repeats(args)
    if not args.skip_few and (args.data / "processbench" / "traces.jsonl").exists():
        with tempfile.TemporaryDirectory() as few_tmp:
            result["few_samples"] = _few_samples(args, Path(few_tmp))
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
