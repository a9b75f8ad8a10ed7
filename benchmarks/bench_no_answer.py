"""How often no final answer is found, per shared data set, printed as one JSON object.

Usage: python benchmarks/bench_no_answer.py [--data ../shared/data]

For each shared set of traces: the share of traces whose response gives no answer (the
extraction rules of ``misstep.rollouts.extract_answer``; ``pred_answer`` when a row has one),
overall and among the traces the source grades wrong, with the rule that found the answers.
Sets that are not there are skipped.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from misstep.rollouts import extract_answer, read_traces

SETS = {
    "mrben": "mrben/traces.jsonl",
    "processbench": "processbench/traces.jsonl",
    "reasoning_gym": "reasoning_gym_eval/llama_rl_ckpts.jsonl.gz",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    default = Path(__file__).resolve().parents[2] / "shared" / "data"
    parser.add_argument("--data", type=Path, default=default)
    args = parser.parse_args()
    out: dict[str, object] = {}
    for name, rel in SETS.items():
        path = args.data / rel
        if not path.exists():
            continue
        methods: Counter[str] = Counter()
        total = missing = wrong = wrong_missing = 0
        for trace in read_traces(path):
            if trace.pred_answer is not None:
                method = "pred_answer" if trace.pred_answer.strip() else "none"
            else:
                method = extract_answer(trace.response).method
            methods[method] += 1
            total += 1
            missing += method == "none"
            if trace.correct is False:
                wrong += 1
                wrong_missing += method == "none"
        out[name] = {
            "traces": total,
            "no_answer": missing,
            "no_answer_share": round(missing / total, 4) if total else None,
            "wrong": wrong,
            "no_answer_among_wrong_share": round(wrong_missing / wrong, 4) if wrong else None,
            "methods": dict(methods.most_common()),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
