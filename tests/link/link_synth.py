"""Synthetic graded runs for the link tests and benchmark, with or without a planted cause.

Every problem has a per-checkpoint chance of a right sample; wrong samples scatter over several
wrong answers and carry error types drawn from a per-problem mix (so traces of one problem are
correlated, as in real runs). With ``plant_at``, from that checkpoint on a share of problems
acquires one consistent wrong answer, given by most of their samples and labelled ``plant_type``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TYPES = ["arithmetic", "broken_derivation", "misread", "theorem_misuse"]
BASE_MIX = np.array([0.4, 0.3, 0.1, 0.2])


def synth_run(
    *,
    n_checkpoints: int = 8,
    n_problems: int = 120,
    n_samples: int = 16,
    plant_at: int | None = None,
    plant_type: str = "misread",
    plant_share: float = 0.35,
    label_share: float = 0.5,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (graded table, labels frame with trace_id, status, error_type, first_error_step,
    evidence)."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.25, 0.75, n_problems)
    mixes = rng.dirichlet(BASE_MIX * 20, n_problems)
    planted = rng.random(n_problems) < plant_share
    cols: dict[str, list[object]] = {
        c: []
        for c in (
            "trace_id",
            "checkpoint",
            "step",
            "dataset",
            "problem_id",
            "sample_idx",
            "answer",
            "answer_class",
            "outcome",
            "correct",
        )
    }
    lab_rows = []
    for t in range(n_checkpoints):
        ck = f"global_step_{(t + 1) * 100}"
        for i in range(n_problems):
            p_right = min(0.95, base[i] + 0.02 * t)
            plant = plant_at is not None and t >= plant_at and planted[i]
            u = rng.random(n_samples)
            for s in range(n_samples):
                tid = f"{ck}/d/p{i}/{s}"
                etype = None
                if plant and u[s] < 0.6:
                    outcome, ans = "wrong", "W*"
                    etype = plant_type
                elif u[s] < 0.04:
                    outcome, ans = "truncated", None
                elif rng.random() < p_right:
                    outcome, ans = "correct", "42"
                else:
                    outcome, ans = "wrong", f"W{rng.integers(0, 8)}"
                    etype = TYPES[rng.choice(len(TYPES), p=mixes[i])]
                cols["trace_id"].append(tid)
                cols["checkpoint"].append(ck)
                cols["step"].append((t + 1) * 100)
                cols["dataset"].append("d")
                cols["problem_id"].append(f"p{i}")
                cols["sample_idx"].append(s)
                cols["answer"].append(ans)
                cols["answer_class"].append(ans)
                cols["outcome"].append(outcome)
                cols["correct"].append(outcome == "correct")
                if etype is not None and rng.random() < label_share:
                    lab_rows.append((tid, "ok", etype, 0, None))
    graded = pd.DataFrame(cols)
    graded["step"] = graded["step"].astype("Int64")
    graded["sample_idx"] = graded["sample_idx"].astype("Int64")
    labels = pd.DataFrame(
        lab_rows, columns=["trace_id", "status", "error_type", "first_error_step", "evidence"]
    )
    return graded, labels
