"""A real evaluation with few samples per problem, for the grading benchmark (not timed).

``write_few_samples(path, data)`` writes, from the shared real data (``/work/shared/data``,
see its README), JSONL traces with about 2 samples per problem, every response and every gold
answer written by a model or a benchmark's authors (nothing here writes an answer):

- ``processbench``: ProcessBench has no gold answers. For each problem with at least two
  solutions of which one has a correct final answer (the ``correct`` field), the gold is the
  final answer extracted from the first such correct solution (by ``trace_id``): a model's own
  form of a right answer (``\\frac{3}{4}``, ``(1, 2)``, ``x \\in [0, 3)``, ``\\text{...}``),
  as diverse as a reference's. That solution is not a sample; up to 2 others are. Datasets
  ``gsm8k``, ``math``, ``olympiadbench``, ``omnimath``.
- ``mrben_math``: Mr-Ben's multiple-choice problems (options in the problem text, gold a
  letter), the first 2 of their 3 solutions (by model name). Datasets ``college_math``,
  ``high_school_math``.
- ``mr_gsm8k_partial``: MR-GSM8K's wrong solutions with GSM8K's gold numbers (1 per problem,
  a few with 2). Dataset ``mr_gsm8k``.
- ``reasoning_gym``: the Reasoning Gym run (AIME24 and AMC23 golds as the authors wrote them,
  ``7.0``, ``104``), its 50 samples of a problem at a checkpoint split into 25 two-sample
  problems (samples 0 and 1, 2 and 3, ...; ``problem_id`` gets ``/s<step>p<pair>``): 3,500
  problems of 2 responses each, every response a real one. Unlike 3,500 distinct problems,
  these pairs share their golds and often their answers: grading memoises an answer's key,
  so this part flatters misstep a little (the naive path shares nothing); the benchmark gives
  its figures per part.

Each row keeps its source's ``trace_id``; ``correct`` is left out (the benchmark regrades
against the gold).
"""

from __future__ import annotations

import gzip
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

from misstep.rollouts import extract_answer

SAMPLES = 2
"""Samples kept per problem (per problem and checkpoint for the Reasoning Gym run)."""


def _rows(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        return [orjson.loads(line) for line in fh if line.strip()]


def _row(src: dict[str, Any], dataset: str, gold: str, sample_idx: int) -> dict[str, Any]:
    return {
        "trace_id": src["trace_id"],
        "checkpoint": src.get("checkpoint", "default"),
        "step": src.get("step"),
        "dataset": dataset,
        "problem_id": src["problem_id"],
        "sample_idx": sample_idx,
        "problem": src.get("problem"),
        "response": src["response"],
        "gold_answer": gold,
        "finish_reason": src.get("finish_reason"),
    }


def _processbench(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_problem: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_problem[row["problem_id"]].append(row)
    out: list[dict[str, Any]] = []
    for solutions in by_problem.values():
        solutions.sort(key=lambda r: r["trace_id"])
        gold_source = next(
            (
                r
                for r in solutions
                if r["correct"] and extract_answer(r["response"]).answer is not None
            ),
            None,
        )
        if gold_source is None or len(solutions) < 2:
            continue
        gold = extract_answer(gold_source["response"]).answer
        assert gold is not None
        others = [r for r in solutions if r is not gold_source][:SAMPLES]
        out.extend(_row(r, r["subset"], gold, i) for i, r in enumerate(others))
    return out


def _mrben(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_problem: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["gold_answer"] is not None:
            by_problem[row["problem_id"]].append(row)
    out: list[dict[str, Any]] = []
    for solutions in by_problem.values():
        solutions.sort(key=lambda r: (r["model"] or "", r["trace_id"]))
        for i, r in enumerate(solutions[:SAMPLES]):
            dataset = r["subset"] if r["source"] == "mrben_math" else "mr_gsm8k"
            out.append(_row(r, dataset, r["gold_answer"], i))
    return out


def _reasoning_gym(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in rows:
        pair, index = divmod(int(r["sample_idx"]), SAMPLES)
        row = _row(r, r["dataset"], r["gold_answer"], index)
        row["problem_id"] = f"{r['problem_id']}/s{r['step']}p{pair}"
        out.append(row)
    return out


def write_few_samples(path: Path, data: Path) -> dict[str, int]:
    """Write the case to ``path`` from the shared data folder ``data``; returns the number of
    traces per part (the rows are written part by part, in this order)."""
    parts = {
        "processbench": _processbench(_rows(data / "processbench" / "traces.jsonl")),
        "mrben": _mrben(_rows(data / "mrben" / "traces.jsonl")),
        "reasoning_gym": _reasoning_gym(
            _rows(data / "reasoning_gym_eval" / "llama_rl_ckpts.jsonl.gz")
        ),
    }
    with path.open("wb") as fh:
        for rows in parts.values():
            for row in rows:
                fh.write(orjson.dumps(row) + b"\n")
    return {name: len(rows) for name, rows in parts.items()}
