"""Grading as a whole command against math-verify once per trace, both as whole processes.

Usage: python benchmarks/bench_whole_process.py [--repeats 3] [--data DIR] [--tora FILE ...]
    [--realcritic DIR] [--cases rl_run,few_samples,tora_gsm8k,realcritic]

For each case, three commands, each started as a fresh process ``--repeats`` times (alternating,
so that machine noise falls on both), timed by wall clock from start to exit:

- ``summary``: ``python -m misstep.cli summary FILE --no-cache --regrade --format json``
  (``--k 1`` or ``1,2`` where the case has one or two samples per problem): start-up, imports,
  reading, extraction, grading against the gold and the vote metrics with their intervals;
- ``grade_only``: the grading step alone, a process that runs
  ``misstep.rollouts.load_graded(FILE, regrade=True, cache=False)``;
- ``naive``: a process that imports math-verify, reads the same file with misstep's reader,
  extracts each answer with misstep's ``extract_answer`` and runs math-verify's ``parse`` on the
  gold and the answer and ``verify`` once per trace.

Cases: ``rl_run`` (the shared Reasoning Gym run: 7,000 traces, 50 samples per problem),
``few_samples`` (``few_samples_case.py``: the shared real data as about 2 samples per problem,
answers in many forms) and, with ``--tora``, ``tora_gsm8k`` (ToRA's public GSM8K outputs, one
greedy sample per problem; ``bench_harness_agreement.py`` says where to find them) and, with
``--realcritic``, ``realcritic`` (RealCritic's 2,093 one-sample responses of ten models over 8
benchmarks, LaTeX, numbers and option letters; ``realcritic_case.py``).
Prints one JSON object: per case the seconds of every repeat, their medians, and the speedups
(naive median / misstep's median, for ``summary`` and for ``grade_only``); the same for CPU
seconds (user + system, the process and the children it waited for, math-verify's workers
included), which a machine that others load disturbs less than wall clock; and the load
average before and after the run (on a shared machine, quote it with every figure).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from bench_harness_agreement import _tora_rows
from few_samples_case import write_few_samples
from realcritic_case import write_realcritic

SRC = Path(__file__).resolve().parents[1] / "src"
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

_GRADE_ONLY = """
import sys
from misstep.rollouts import load_graded
load_graded(sys.argv[1], regrade=True, cache=False)
"""
_NAIVE = """
import logging, sys
from math_verify import parse, verify
from misstep.rollouts import extract_answer, read_traces
logging.getLogger("math_verify").setLevel(logging.ERROR)
correct = 0
for trace in read_traces(sys.argv[1]):
    answer = extract_answer(trace.response).answer
    if answer is None or trace.gold_answer is None:
        continue
    correct += bool(verify(parse(f"${trace.gold_answer}$"), parse(f"${answer}$")))
print(correct)
"""


def _seconds(command: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one fresh process."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def _case(path: Path, ks: str | None, repeats: int) -> dict[str, Any]:
    mine = [sys.executable, "-m", "misstep.cli", "summary", str(path), "--no-cache"]
    mine += ["--regrade", "--format", "json", *(["--k", ks] if ks else [])]
    commands = {
        "summary": mine,
        "grade_only": [sys.executable, "-c", _GRADE_ONLY, str(path)],
        "naive": [sys.executable, "-c", _NAIVE, str(path)],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, command in commands.items():
            wall, used = _seconds(command)
            times[name].append(wall)
            cpu[name].append(used)
    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
    return {
        "seconds": {name: [round(s, 2) for s in values] for name, values in times.items()},
        "median": {name: round(value, 2) for name, value in medians.items()},
        "speedup_summary": round(medians["naive"] / medians["summary"], 1),
        "speedup_grade_only": round(medians["naive"] / medians["grade_only"], 1),
        "cpu_median": {name: round(value, 2) for name, value in cpu_medians.items()},
        "cpu_speedup_summary": round(cpu_medians["naive"] / cpu_medians["summary"], 1),
        "cpu_speedup_grade_only": round(cpu_medians["naive"] / cpu_medians["grade_only"], 1),
    }


def _write_tora(paths: list[Path], out: Path) -> int:
    rows = 0
    with out.open("wb") as handle:
        for path in paths:
            traces, _, _ = _tora_rows(path)
            for trace in traces:
                handle.write(orjson.dumps(trace.model_dump(exclude_defaults=True)) + b"\n")
                rows += 1
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--tora", type=Path, nargs="*", default=[])
    parser.add_argument("--realcritic", type=Path)
    parser.add_argument("--cases", default="rl_run,few_samples,tora_gsm8k,realcritic")
    args = parser.parse_args()
    cases = set(args.cases.split(","))
    out: dict[str, Any] = {"cpu_count": os.cpu_count(), "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        if "rl_run" in cases:
            rl = args.data / "reasoning_gym_eval" / "llama_rl_ckpts.jsonl.gz"
            out["rl_run"] = _case(rl, None, args.repeats)
        if "few_samples" in cases:
            few = Path(tmp) / "few.jsonl"
            write_few_samples(few, args.data)
            out["few_samples"] = _case(few, "1,2", args.repeats)
        if args.tora and "tora_gsm8k" in cases:
            tora = Path(tmp) / "tora.jsonl"
            _write_tora(args.tora, tora)
            out["tora_gsm8k"] = _case(tora, "1", args.repeats)
        if args.realcritic and "realcritic" in cases:
            realcritic = Path(tmp) / "realcritic.jsonl"
            write_realcritic(realcritic, args.realcritic)
            out["realcritic"] = _case(realcritic, "1", args.repeats)
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
