"""misstep's answer equivalence against math-verify's on every pair of distinct answers of one
problem in a real run, printed as one JSON object (the disagreements listed).

Usage: python benchmarks/check_equivalence.py [--real PATH] [--limit 40]

Pairs: per problem (dataset, problem_id), the distinct answers by canonical key (one text
each), every pair where at least one side is not a plain rational (two rationals are decided by
value, which needs no check). misstep's verdict is ``EquivalenceChecker.compare_pairs``;
math-verify's is ``verify(parse(a), parse(b)) or verify(parse(b), parse(a))`` (asked both ways,
as its ``verify`` is not symmetric), each under a 5 s timeout.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from itertools import combinations
from pathlib import Path

from bench_grading import REAL_RUN

from misstep.rollouts import EquivalenceChecker, extract_answer, read_traces
from misstep.rollouts._equivalence import is_rational_key
from misstep.rollouts._normalize import canonical_key


def _distinct_answers(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    """(dataset, problem_id) -> canonical key -> the first text with that key."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for trace in read_traces(path):
        answer = extract_answer(trace.response).answer
        if answer is None or trace.finish_reason == "length":
            continue
        out.setdefault((trace.dataset, trace.problem_id), {}).setdefault(
            canonical_key(answer), answer
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--real", type=Path, default=REAL_RUN)
    parser.add_argument("--limit", type=int, default=40, help="disagreements to list")
    args = parser.parse_args()
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    pairs: list[tuple[str, str]] = []
    for answers in _distinct_answers(args.real).values():
        for (ka, a), (kb, b) in combinations(answers.items(), 2):
            if not (is_rational_key(ka) and is_rational_key(kb)):
                pairs.append((a, b))
    started = time.perf_counter()
    with EquivalenceChecker() as checker:
        ours = checker.compare_pairs(pairs)
    ours_s = time.perf_counter() - started
    parsed: dict[str, list[object]] = {}

    def get(text: str) -> list[object]:
        if text not in parsed:
            parsed[text] = list(parse(f"${text}$", parsing_timeout=5))
        return parsed[text]

    started = time.perf_counter()
    disagree: list[dict[str, object]] = []
    for a, b in pairs:
        pa, pb = get(a), get(b)
        theirs = bool(
            pa and pb and (verify(pa, pb, timeout_seconds=5) or verify(pb, pa, timeout_seconds=5))
        )
        if theirs != ours[(a, b)]:
            disagree.append({"a": a, "b": b, "misstep": ours[(a, b)], "math_verify": theirs})
    mv_s = time.perf_counter() - started
    print(
        json.dumps(
            {
                "pairs": len(pairs),
                "disagreements": len(disagree),
                "misstep_equal": sum(ours.values()),
                "misstep_s": round(ours_s, 1),
                "math_verify_s": round(mv_s, 1),
                "math_verify_calls": checker.stats.calls,
                "listed": disagree[: args.limit],
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
