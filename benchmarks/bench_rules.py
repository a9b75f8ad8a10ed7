"""Rules-judge speed: traces labelled per second on one core, printed as one JSON object.

Usage: python benchmarks/bench_rules.py [--n 2000] [--processbench PATH]
Uses ProcessBench's real traces from ../shared/data when present, else a synthetic typical trace.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from misstep.judge import JudgeConfig, RulesJudge
from misstep.prompts import split_steps
from misstep.rollouts import read_traces
from misstep.taxonomy import load_taxonomy

DEFAULT_PB = Path(__file__).resolve().parents[1].parent / "shared/data/processbench/traces.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--processbench", type=Path, default=DEFAULT_PB)
    args = parser.parse_args()
    if args.processbench.exists():
        source = "processbench"
        steps_list = [split_steps(t) for t in read_traces(args.processbench)]
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
    print(
        json.dumps(
            {
                "source": source,
                "traces": args.n,
                "seconds": round(seconds, 3),
                "traces_per_s": round(args.n / seconds, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
