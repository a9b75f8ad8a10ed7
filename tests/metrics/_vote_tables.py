"""Build graded tables by hand for the vote-metric tests (no reader or grader involved)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

# One sample: (answer_class or None, correct, outcome). Outcome defaults from the first two.
Sample = tuple[str | None, bool] | tuple[str | None, bool, str]


def graded_table(
    problems: dict[tuple[str, str, str], Sequence[Sample]],
    steps: dict[str, int] | None = None,
) -> pd.DataFrame:
    """Rows for {(checkpoint, dataset, problem_id): samples} in the GRADED_COLUMNS shape."""
    rows = []
    for (checkpoint, dataset, problem_id), samples in problems.items():
        for i, sample in enumerate(samples):
            answer_class, correct = sample[0], sample[1]
            if len(sample) == 3:
                outcome = sample[2]
            elif answer_class is None:
                outcome = "truncated"
            else:
                outcome = "correct" if correct else "wrong"
            rows.append(
                {
                    "trace_id": f"{checkpoint}/{dataset}/{problem_id}/{i}",
                    "checkpoint": checkpoint,
                    "step": (steps or {}).get(checkpoint),
                    "dataset": dataset,
                    "problem_id": problem_id,
                    "sample_idx": i,
                    "answer": answer_class,
                    "answer_class": answer_class,
                    "outcome": outcome,
                    "correct": correct,
                }
            )
    table = pd.DataFrame(rows)
    table["step"] = table["step"].astype("Int64")
    table["sample_idx"] = table["sample_idx"].astype("Int64")
    return table


def samples(**counts: int) -> list[Sample]:
    """``samples(A=3, B=1, none=2)``: class A is correct (the first upper-case key is the gold
    class only when named ``A``), others wrong, ``none`` gives truncated samples."""
    out: list[Sample] = []
    for key, count in counts.items():
        for _ in range(count):
            if key == "none":
                out.append((None, False))
            else:
                out.append((key, key == "A"))
    return out
