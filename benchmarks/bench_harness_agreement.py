"""misstep's own extraction and grading against the grades of the harnesses that made real runs.

Usage: python benchmarks/bench_harness_agreement.py [--tora FILE ...] [--realcritic DIR]
    [--data DIR] [--read PATH ... [--input-format NAME] [--path-fields T] [--map F=C,...]]

Every row's ``pred_answer`` and ``correct`` are dropped and misstep extracts and grades the
response against its gold (``grade_traces(..., regrade=True)``); the result is compared, row by
row, with the source's own grade. Prints one JSON object: per set, per (model, benchmark) pair
the rows, both accuracies (percent), the difference in points and the disagreements (each with
both answers); per model the same totals; and the targets of issues 27 and 33 (within 0.2
points of accuracy per model; within max(1 item, 2%) on at least 25 of every 26 pairs; the
mean absolute difference per pair in points, at most 0.5 on the issue's 13 benchmarks).

Sets:

- ``--read PATH ...``: harness outputs read as the harness wrote them, by misstep's readers
  (``--input-format``, ``--path-fields``, ``--map`` as the CLI takes them): the harness's
  grade is each trace's ``correct`` as read, its answer ``harness_answer``; rows the harness
  did not grade are counted in ``not_graded_by_harness`` and left out.

- ``--tora FILE``: evaluation outputs of the ToRA / Qwen2.5-Math harness (``math_eval.py``:
  JSONL rows with ``idx``, ``gt``, ``code`` (the responses), ``pred`` and, in newer versions,
  ``score``), for instance ToRA's public GSM8K outputs (microsoft/ToRA,
  ``src/outputs/llm-agents/<model>/gsm8k/test_tora_-1_seed0_t0.0_s0_e1319.jsonl``; not part of
  this project: pass their paths). The model is the folder two levels up when the file is
  named ``test_*``, else the file's stem. The harness's grade is ``score`` when the rows carry
  it; ToRA's files do not, so it is recomputed from ``pred`` and ``gt`` by the harness's
  numeric rule (``_harness_numeric``, restated from its ``math_equal``); the rows where that
  rule does not apply are counted in ``harness_fallback`` and graded as the harness's symbolic
  path would grade a non-number against a number gold: wrong. The recomputed accuracies are
  printed so they can be checked against the harness's own ``.metrics`` files.
- ``--realcritic DIR``: RealCritic's one-sample outputs of ten models over 8 benchmarks, graded
  by the Qwen2.5-Math harness (``realcritic_case.py`` says where to find them); the harness's
  grade is each row's ``previous_score``.
- the shared real data (``--data``, default ``../shared/data``): Mr-Ben and MR-GSM8K (gold and
  ``correct`` per trace) and the Reasoning Gym run (the authors' ``correct``). ProcessBench has
  no gold answers and is skipped with that reason.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from realcritic_case import realcritic_rows  # a sibling script: run from benchmarks/

from misstep.rollouts import ReadSpec, Trace, grade_traces, parse_column_map, read_traces

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
_POINTS_PER_MODEL = 0.2
_PAIRS_SHARE = 25 / 26


def _number(text: str) -> float | None:
    text = text.replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        pass
    if text.endswith("%"):
        try:
            return float(text[:-1].removesuffix("\\")) / 100
        except ValueError:
            return None
    return None


def _harness_numeric(pred: str, gold: str) -> bool | None:
    """The harness's numeric rule (``math_equal`` with ``include_percentage``): both sides
    numbers, the prediction within a relative 1e-4 of gold/100, gold or 100*gold; None where it
    does not apply."""
    p, g = _number(pred), _number(gold)
    if p is None or g is None:
        return None
    return any(math.isclose(p, x, rel_tol=1e-4) for x in (g / 100, g, g * 100))


def _tora_rows(path: Path) -> tuple[list[Trace], dict[str, bool], int]:
    """A ToRA / Qwen2.5-Math harness file read by misstep's own reader (``qwen-math-eval``):
    the model is the folder two levels up when the file is named ``test_*``, else the file's
    stem; the harness's grade is ``score`` where rows carry it, else its numeric rule."""
    model = path.parents[1].name if path.name.startswith("test_") else path.stem
    traces: list[Trace] = []
    truth: dict[str, bool] = {}
    fallback = 0
    for trace in read_traces(path, input_format="qwen-math-eval"):
        if trace.correct is not None:
            grade = trace.correct
        else:
            numeric = _harness_numeric(str(trace.harness_answer or ""), str(trace.gold_answer))
            fallback += numeric is None
            grade = bool(numeric)
        update: dict[str, Any] = {"checkpoint": model, "correct": None, "trace_id": ""}
        if not path.name.startswith("test_"):
            update["dataset"] = "gsm8k"
        trace = Trace(**(trace.model_dump() | update))
        traces.append(trace)
        truth[trace.trace_id] = grade
    return traces, truth, fallback


def _read_rows(
    paths: list[Path], spec: ReadSpec
) -> tuple[list[Trace], dict[str, bool], dict[str, str], int]:
    """Harness outputs read as written (``--read``): the harness's grade (the reader's
    ``correct``) and extracted answer by trace id; rows the harness did not grade are left out
    and counted."""
    traces: list[Trace] = []
    truth: dict[str, bool] = {}
    preds: dict[str, str] = {}
    ungraded = 0
    for path in paths:
        for trace in read_traces(path, input_format=spec):
            if trace.correct is None:
                ungraded += 1
                continue
            truth[trace.trace_id] = trace.correct
            preds[trace.trace_id] = trace.harness_answer or ""
            traces.append(trace.model_copy(update={"correct": None, "pred_answer": None}))
    return traces, truth, preds, ungraded


def _shared_rows(path: Path, by_model: bool) -> tuple[list[Trace], dict[str, bool]]:
    traces: list[Trace] = []
    truth: dict[str, bool] = {}
    for trace in read_traces(path):
        if trace.correct is None or trace.gold_answer is None:
            continue
        truth[trace.trace_id] = trace.correct
        update: dict[str, Any] = {"correct": None, "pred_answer": None}
        if by_model:  # Mr-Ben's and MR-GSM8K's rows: one model's answers to one subset
            update["checkpoint"] = trace.model or str(trace.extra.get("source", "default"))
            update["dataset"] = str(trace.extra.get("subset", trace.dataset))
        traces.append(trace.model_copy(update=update))
    return traces, truth


def _example(row: Any, source: bool, preds: dict[str, str] | None) -> dict[str, Any]:
    answer = row.answer if isinstance(row.answer, str) else None
    out = {"problem_id": row.problem_id, "source": source, "misstep_answer": answer,
           "outcome": row.outcome}  # fmt: skip
    if preds is not None:
        out["harness_answer"] = preds[row.trace_id]
    return out


def _same_answer(row: Any, preds: dict[str, str]) -> bool:
    """Whether misstep extracted what the harness did (spaces and ``\\left``/``\\right``
    aside): then a disagreement is one of equivalence, not of extraction."""
    answer = row.answer if isinstance(row.answer, str) else ""

    def plain(text: str) -> str:
        return "".join(text.replace("\\left", "").replace("\\right", "").split())

    return plain(answer) == plain(preds[row.trace_id])


def _compare(
    traces: list[Trace], truth: dict[str, bool], preds: dict[str, str] | None = None
) -> dict[str, Any]:
    graded = grade_traces(traces, regrade=True)
    pairs: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for row in graded.itertuples(index=False):
        pairs[(row.checkpoint, row.dataset)].append(row)
    out_pairs = []
    models: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for (model, dataset), rows in sorted(pairs.items()):
        source = sum(truth[r.trace_id] for r in rows)
        mine = sum(bool(r.correct) for r in rows)
        differ = [r for r in rows if bool(r.correct) != truth[r.trace_id]]
        n = len(rows)
        out_pairs.append(
            {
                "model": model,
                "benchmark": dataset,
                "rows": n,
                "source_accuracy": round(100 * source / n, 2),
                "misstep_accuracy": round(100 * mine / n, 2),
                "points": round(100 * (mine - source) / n, 2),
                "disagreements": len(differ),
                "within_target": len(differ) <= max(1, 0.02 * n),
                "examples": [_example(r, truth[r.trace_id], preds) for r in differ[:10]],
            }
        )
        if preds is not None:  # disagreements on the answer the harness extracted too
            out_pairs[-1]["same_answer"] = sum(_same_answer(r, preds) for r in differ)
        total = models[model]
        total[0] += n
        total[1] += source
        total[2] += mine
    per_model = {
        m: {
            "rows": n,
            "source_accuracy": round(100 * s / n, 2),
            "misstep_accuracy": round(100 * k / n, 2),
            "points": round(100 * (k - s) / n, 2),
            "within_target": abs(100 * (k - s) / n) <= _POINTS_PER_MODEL,
        }
        for m, (n, s, k) in sorted(models.items())
    }
    return {"pairs": out_pairs, "models": per_model}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tora", type=Path, nargs="*", default=[])
    parser.add_argument("--realcritic", type=Path)
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--no-shared", action="store_true", help="skip the shared real data")
    parser.add_argument("--read", type=Path, nargs="*", default=[])
    parser.add_argument("--input-format")
    parser.add_argument("--path-fields")
    parser.add_argument("--map", dest="column_map")
    args = parser.parse_args()
    sets: dict[str, Any] = {}
    if args.read:
        spec = ReadSpec(
            format=args.input_format,
            path_fields=args.path_fields,
            columns=parse_column_map(args.column_map),
        )
        traces, truth, preds, ungraded = _read_rows(args.read, spec)
        sets["read"] = _compare(traces, truth, preds) | {"not_graded_by_harness": ungraded}
    if args.tora:
        traces, truth, fallback = [], {}, 0
        for path in args.tora:
            t, g, f = _tora_rows(path)
            traces += t
            truth |= g
            fallback += f
        sets["tora"] = _compare(traces, truth) | {"harness_fallback": fallback}
    if args.realcritic:
        sets["realcritic"] = _compare(*realcritic_rows(args.realcritic))
    if not args.no_shared and (args.data / "mrben" / "traces.jsonl").exists():
        traces, truth = _shared_rows(args.data / "mrben" / "traces.jsonl", by_model=True)
        sets["mrben"] = _compare(traces, truth)
        rg = args.data / "reasoning_gym_eval" / "llama_rl_ckpts.jsonl.gz"
        traces, truth = _shared_rows(rg, by_model=False)
        sets["reasoning_gym"] = _compare(traces, truth)
        sets["processbench"] = {"skipped": "no gold answers in the source"}
    pairs = [p for s in sets.values() for p in s.get("pairs", [])]
    models = [m for s in sets.values() for m in s.get("models", {}).values()]
    summary = {
        "pairs": len(pairs),
        "pairs_within": sum(p["within_target"] for p in pairs),
        # the second target: the mean, over pairs, of |misstep - harness| in points
        "mean_abs_points": round(sum(abs(p["points"]) for p in pairs) / max(1, len(pairs)), 2),
        "pairs_target_met": sum(p["within_target"] for p in pairs) >= _PAIRS_SHARE * len(pairs),
        "models": len(models),
        "models_within_0.2_points": sum(m["within_target"] for m in models),
    }
    json.dump({"summary": summary, "sets": sets}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
