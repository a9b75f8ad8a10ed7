"""RealCritic's evaluation outputs as misstep traces: one-sample answers over 8 benchmarks.

RealCritic (tangzhy/RealCritic on GitHub, ``data/mix_data/<benchmark>/test.jsonl``; not part of
this project: pass the folder that holds the benchmark folders) collects responses of ten
models (Qwen2.5-Math-72B-Instruct, Llama-3.1-70B-Instruct, ...) to GSM8K, MATH, Minerva math,
college math, OlympiadBench, MMLU-STEM, ARC-Challenge and GPQA, 2,093 in all, each graded by
the Qwen2.5-Math evaluation harness (``math_eval.py``, the ToRA harness's successor). A row
carries ``idx``, ``question`` (multiple-choice options inline: ``Answer Choices: (A) ...``),
``gt`` (the gold answer: LaTeX, a number or an option letter), ``reasoning`` (the response),
``pred`` (the harness's extracted answer), ``previous_score`` (``[True]`` or ``[False]``: the
harness's grade of ``pred`` against ``gt``) and ``model``.

One trace per row: checkpoint = model, dataset = benchmark, problem_id = ``idx``, one sample.
The harness's grade is kept apart (``truth``), not in the trace, so that misstep grades from
the response and the gold alone.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from misstep.rollouts import Trace

BENCHMARKS = (
    "arc-challenge",
    "college_math",
    "gpqa",
    "gsm8k",
    "math",
    "minerva_math",
    "mmlu_stem",
    "olympiadbench",
)


def realcritic_rows(folder: Path) -> tuple[list[Trace], dict[str, bool], dict[str, str]]:
    """Every benchmark's rows under ``folder`` as traces, the harness's grade by trace id and
    the harness's extracted answer (``pred``) by trace id."""
    traces: list[Trace] = []
    truth: dict[str, bool] = {}
    preds: dict[str, str] = {}
    for benchmark in BENCHMARKS:
        path = folder / benchmark / "test.jsonl"
        if not path.exists():
            continue
        with path.open("rb") as handle:
            for line in handle:
                row = orjson.loads(line)
                trace = Trace(
                    problem_id=str(row["idx"]),
                    response=str(row["reasoning"]),
                    checkpoint=str(row["model"]),
                    dataset=benchmark,
                    problem=str(row["question"]),
                    gold_answer=str(row["gt"]),
                )
                traces.append(trace)
                truth[trace.trace_id] = bool(row["previous_score"][0])
                preds[trace.trace_id] = str(row["pred"])
    if not traces:
        raise SystemExit(f"no RealCritic rows under {folder} (expected {BENCHMARKS[0]}/test.jsonl)")
    return traces, truth, preds


def write_realcritic(out: Path, folder: Path) -> int:
    """The traces as misstep JSONL (without the harness's grade); returns the row count."""
    traces, _, _ = realcritic_rows(folder)
    with out.open("wb") as handle:
        for trace in traces:
            handle.write(orjson.dumps(trace.model_dump(exclude_defaults=True)) + b"\n")
    return len(traces)
