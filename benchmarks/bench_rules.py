"""Rules judge: speed (traces labelled per second on one core) and how right its arithmetic flags
are on real wrong solutions with human first-error steps. Prints one JSON object.

Usage: python benchmarks/bench_rules.py [--n 2000] [--data ../shared/data] [--examples 10]

Flags are measured against people's labels in ../shared/data (when present):
- ``mr_gsm8k``: 590 wrong GSM8K solutions (MR-GSM8K), and ``mrben_math`` (918 solutions to
  MMLU math questions); where an annotator tagged the first error ``calculation`` (their own
  tag, ``mapping_method`` ``annotator_prefix_tag``) the trace is a positive. A flag is a *hit*
  when it points at the annotated first error step of a positive; a *false alarm* when it
  points at a step before the annotated first error (steps the annotator read as correct);
  flags after the first error (or at it, on a trace with another tag) are *unverified* and
  counted apart. ``precision`` = hits / (hits + false alarms); ``recall`` = hits / positives.
- ``processbench``: expert first error steps without error types, so no positives; every
  step before the first error (all steps of a correct solution) is verified correct: a flag
  there is a false alarm, in every source.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from misstep.judge import JudgeConfig, RulesJudge
from misstep.judge._arith import find_arithmetic_error
from misstep.prompts import split_steps
from misstep.rollouts import read_traces
from misstep.taxonomy import load_taxonomy

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _human(path: Path) -> dict[str, list[dict[str, Any]]]:
    by_trace: dict[str, list[dict[str, Any]]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            by_trace.setdefault(row["trace_id"], []).append(row)
    return by_trace


def _flags(data: Path, examples: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for folder in ("mrben", "processbench"):
        if not (data / folder / "human_labels.jsonl").exists():
            continue
        human = _human(data / folder / "human_labels.jsonl")
        counts: dict[str, Counter[str]] = {}
        shown: dict[str, list[dict[str, Any]]] = {}
        for trace in read_traces(data / folder / "traces.jsonl"):
            source = str(trace.extra.get("source", folder))
            source = {"mr_gsm8k_partial": "mr_gsm8k"}.get(source, source)
            rows = human.get(trace.trace_id, [])
            steps = split_steps(trace)
            found = find_arithmetic_error(steps)
            tally = counts.setdefault(source, Counter())
            tally["traces"] += 1
            tagged = [r for r in rows if r["mapping_method"] == "annotator_prefix_tag"]
            positive = any(r["error_type"] == "arithmetic" for r in tagged)
            tally["positives"] += positive
            # the earliest step any annotator calls wrong: every step before it was read as right
            firsts = [r["first_error_step"] for r in rows if r["first_error_step"] is not None]
            first = min(firsts) if firsts else None
            if found is None:
                continue
            tally["flags"] += 1
            if first is None or found.step < first:
                kind = "false_alarms"
            elif found.step == first and positive:
                kind = "hits"
            else:
                kind = "unverified"
            tally[kind] += 1
            if kind != "unverified" and len(shown.setdefault(f"{source}:{kind}", [])) < examples:
                shown[f"{source}:{kind}"].append(
                    {"trace": trace.trace_id, "step": found.step, "evidence": found.evidence}
                )
        for source, tally in counts.items():
            result: dict[str, Any] = dict(tally)
            for key in ("positives", "flags", "hits", "false_alarms", "unverified"):
                result.setdefault(key, 0)
            judged = result["hits"] + result["false_alarms"]
            if result["positives"]:
                result["precision"] = round(result["hits"] / judged, 3) if judged else None
                result["recall"] = round(result["hits"] / result["positives"], 3)
            result["examples"] = {
                k.split(":")[1]: v for k, v in shown.items() if k.startswith(source + ":")
            }
            out[source] = result
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--examples", type=int, default=10, help="flags listed per kind")
    args = parser.parse_args()
    processbench = args.data / "processbench" / "traces.jsonl"
    if processbench.exists():
        source = "processbench"
        steps_list = [split_steps(t) for t in read_traces(processbench)]
    else:
        source = "synthetic"
        step = (
            "Since there were 18 flamingos, \\(1/3 \\times 18 = 6\\) flamingos are taken back, "
            "and \\(18 - 6 = 12\\)."
        )
        steps_list = [[step] * 8 + ["The answer is \\boxed{24}."]]
    judge = RulesJudge(JudgeConfig(), load_taxonomy())
    start = time.perf_counter()
    for i in range(args.n):
        judge.label_steps(steps_list[i % len(steps_list)])
    seconds = time.perf_counter() - start
    result: dict[str, Any] = {
        "source": source,
        "traces": args.n,
        "seconds": round(seconds, 3),
        "traces_per_s": round(args.n / seconds, 1),
    }
    if (args.data / "mrben" / "human_labels.jsonl").exists():
        result["flags"] = _flags(args.data, args.examples)
    print(json.dumps(result, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
