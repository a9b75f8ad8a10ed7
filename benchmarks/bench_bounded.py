"""Bounded work on huge traces: time and memory of step splitting, the rules judge and
``misstep label --judge rules`` end to end, on 1, 10 and 50 MiB traces. Prints one JSON object.

Usage: python benchmarks/bench_bounded.py [--sizes 1 10 50] [--data ../shared/data]

The big trace is made of real model output: the responses of ../shared/data (the Reasoning Gym
RL run, MR-Ben, MR-GSM8K, ProcessBench), shuffled and joined by single line breaks, repeated
when the size asks for more than there is (about 17 MB). So it holds long paragraphs of
LaTeX, sentences, enumerations and calculations, as a runaway generation does.

Measured per size, in this one run:
- ``split``: ``prompts.split_steps`` (seconds; peak traced memory, MB); ``split_one_paragraph``
  the same on one paragraph of the whole size, as a runaway generation writes it (the responses
  written without blank lines, think tags taken out): the case that made the former splitter
  quadratic;
- ``rules_check``: the rules judge's checker on every one of those steps (``check_step``): the
  most work it does on a trace under its size limit (it stops at the first wrong calculation);
- ``rules_judge``: ``RulesJudge.judge`` on the trace as the label pipeline hands it over: a
  trace over ``MAX_TRACE_CHARS`` is skipped before any per-character work;
- ``label``: ``misstep label --judge rules`` in a fresh process on 20 small real traces plus the
  big one (wall seconds, peak RSS of that process), and the big trace's record status.
``per_mib`` is each figure divided by the size; ``growth`` is (figure at size / figure at the
smallest size) / (size / smallest size): 1.0 is linear growth, below 1 is slower than linear.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gzip
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data"
MIB = 1024 * 1024


def _responses(data: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """Real responses, interleaved by source, and 20 small real rows for the label input."""
    sources: list[list[str]] = []
    small: list[dict[str, Any]] = []
    for name in ("processbench", "mrben"):
        path = data / name / "traces.jsonl"
        if path.exists():
            rows = [json.loads(line) for line in path.open(encoding="utf-8")]
            sources.append([r["response"] for r in rows])
            small += [
                {
                    "problem_id": r["problem_id"],
                    "problem": r["problem"],
                    "response": r["response"],
                    "correct": False,  # judged: every trace goes through the rules judge
                }
                for r in rows[:10]
            ]
    gym = data / "reasoning_gym_eval" / "llama_rl_ckpts.jsonl.gz"
    if gym.exists():
        with gzip.open(gym, "rt", encoding="utf-8") as fh:
            sources.append([json.loads(line)["response"] for line in fh])
    if not sources:
        raise SystemExit(f"no real responses under {data} (see its README.md)")
    mixed = [r for rows in sources for r in rows]
    # shuffled once (fixed seed): every size holds the same mix of sources, so that the
    # figures per MiB compare the same kind of text
    random.Random(0).shuffle(mixed)
    return mixed, small[:20]


def _big_trace(responses: list[str], chars: int) -> str:
    parts: list[str] = []
    total = i = 0
    while total < chars:
        part = responses[i % len(responses)]
        parts.append(part)
        total += len(part) + 1
        i += 1
    return "\n".join(parts)[:chars]


def _measure(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Seconds of a call (the faster of two: the machine is shared), and peak traced memory
    (MB) of a third."""
    seconds = math.inf
    for _ in range(2):
        start = time.perf_counter()
        result = fn()
        seconds = min(seconds, time.perf_counter() - start)
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return seconds, peak / 1e6, result


def _check_all(steps: list[str]) -> int:
    """The rules judge's checker on every step (it stops at the first wrong calculation; the
    worst case, a trace without one, checks them all): the steps flagged."""
    from misstep.judge._arith import check_step

    return sum(check_step(step) is not None for step in steps)


def _judge(judge: Any, request: Any) -> Any:
    return asyncio.run(judge.judge(request))


def _label(small: list[dict[str, Any]], big: str | None, tmp: Path) -> dict[str, Any]:
    """``misstep label --judge rules`` in a fresh process: wall seconds, its peak RSS."""
    rows = [*small]
    if big is not None:
        rows.append({"problem_id": "big", "problem": "p", "response": big, "correct": False})
    traces = tmp / f"traces-{len(big or '')}.jsonl"
    with open(traces, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    run = tmp / f"run-{len(big or '')}"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")}
    command = [sys.executable, "-m", "misstep.cli", "label", str(traces), "--out", str(run)]
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*command, "--judge", "rules"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        error = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"misstep label failed: {error}")
    proc.returncode = 0
    statuses = {}
    for line in (run / "labels.jsonl").open(encoding="utf-8"):
        record = json.loads(line)
        if record["problem_id"] == "big":
            statuses = {"status": record["status"], "reason": record["reason"]}
    return {
        "seconds": round(seconds, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "records": sum(1 for _ in (run / "labels.jsonl").open(encoding="utf-8")),
        **({"big_trace": statuses} if big is not None else {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=float, nargs="+", default=[1.0, 10.0, 50.0], help="MiB")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()

    from misstep.judge import JudgeConfig, JudgeRequest, RulesJudge
    from misstep.judge._rules import MAX_TRACE_CHARS
    from misstep.prompts import split_steps
    from misstep.rollouts import Trace
    from misstep.taxonomy import load_taxonomy

    responses, small = _responses(args.data)
    # a runaway generation: one unclosed <think> block without blank lines, so one paragraph of
    # the whole size (the responses written without blank lines, their think tags taken out)
    one_paragraph = [re.sub(r"</?think>", "", r) for r in responses if "\n\n" not in r] or [
        r.replace("\n\n", "\n") for r in responses
    ]
    judge = RulesJudge(JudgeConfig(), load_taxonomy(None))
    result: dict[str, Any] = {"sizes_mib": args.sizes, "rules_limit_chars": MAX_TRACE_CHARS}
    rows: dict[str, list[dict[str, Any]]] = {
        "split": [],
        "split_one_paragraph": [],
        "rules_check": [],
        "rules_judge": [],
    }
    labels: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        baseline = _label(small, None, Path(tmp))
        for size in args.sizes:
            text = _big_trace(responses, int(size * MIB))
            one = _big_trace(one_paragraph, int(size * MIB))
            seconds, peak, steps = _measure(functools.partial(split_steps, one))
            rows["split_one_paragraph"].append(
                {"seconds": seconds, "peak_mb": peak, "steps": len(steps)}
            )
            del one, steps
            seconds, peak, steps = _measure(functools.partial(split_steps, text))
            rows["split"].append({"seconds": seconds, "peak_mb": peak, "steps": len(steps)})
            seconds, peak, flagged = _measure(functools.partial(_check_all, steps))
            rows["rules_check"].append({"seconds": seconds, "peak_mb": peak, "flags": flagged})
            request = JudgeRequest(
                trace=Trace(problem_id="big", response=text),
                final_answer=None,
                steps=steps,
                messages=[],
                seed=0,
            )
            seconds, peak, judged = _measure(functools.partial(_judge, judge, request))
            rows["rules_judge"].append(
                {"seconds": seconds, "peak_mb": peak, "status": judged.status.value}
            )
            del steps, request
            labels.append(_label(small, text, Path(tmp)))
    smallest = args.sizes[0]
    for name, measured in rows.items():
        for size, row in zip(args.sizes, measured, strict=True):
            first = measured[0]
            row["per_mib"] = {
                "seconds": round(row["seconds"] / size, 4),
                "peak_mb": round(row["peak_mb"] / size, 2),
            }
            row["growth"] = {
                key: round((row[key] / first[key]) / (size / smallest), 3) if first[key] else None
                for key in ("seconds", "peak_mb")
            }
            row["seconds"] = round(row["seconds"], 4)
            row["peak_mb"] = round(row["peak_mb"], 2)
        result[name] = measured
    for size, row in zip(args.sizes, labels, strict=True):
        extra = row["seconds"] - baseline["seconds"]
        row["extra_seconds_per_mib"] = round(extra / size, 4)
        row["growth"] = {
            "seconds": round((row["seconds"] / labels[0]["seconds"]) / (size / smallest), 3),
            "peak_rss_mb": round(
                (row["peak_rss_mb"] / labels[0]["peak_rss_mb"]) / (size / smallest), 3
            ),
        }
    result["label"] = {"without_big_trace": baseline, "with_big_trace": labels}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
