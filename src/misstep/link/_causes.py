"""Causes beyond error types: response length, unanswered and truncated samples, repetition.

Per problem (checkpoint x dataset x problem_id), over its samples:

- ``response_chars``: mean response length in characters;
- ``no_answer_rate``: share of samples with no final answer;
- ``truncated_rate``: share of samples cut at the token limit;
- ``repetition``: mean repetition score (share of repeated word 4-grams at a response's end,
  ``misstep.rollouts.repetition_score``).

A checkpoint's value is the mean over its problems (with equal samples per problem, the rates
equal the pooled rates; the counts are reported beside them). Between consecutive checkpoints
each cause's change is paired over the problems both have: ``delta`` is the mean per-problem
difference, its 95% interval a percentile bootstrap over problems, its p-value a two-sided
sign-flip permutation test over problems (``N_FLIPS`` seeded flips), Benjamini-Hochberg adjusted
across every cause and pair; ``effect`` is the standardised mean difference (delta over the
standard deviation of the per-problem values of both checkpoints). A pair with fewer than
``MIN_SHARED`` shared problems is not tested.

The transition table counts, between consecutive checkpoints, the shared problems whose full-n
vote went right -> right, right -> wrong, wrong -> right and wrong -> wrong, and names the ones
that flipped.
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pandas as pd
from pydantic import BaseModel

from misstep.link._anatomy import PROBLEM_KEY
from misstep.link._shifts import bh_adjust
from misstep.metrics import mean_ci, problem_stats, verdict

__all__ = [
    "CAUSES",
    "MIN_SHARED",
    "CauseShift",
    "VoteTransition",
    "cause_shifts",
    "cause_values",
    "vote_transitions",
]

CAUSES = ("response_chars", "no_answer_rate", "truncated_rate", "repetition")
MIN_SHARED = 5
N_FLIPS = 2000


class CauseShift(BaseModel):
    """One cause's change between two consecutive checkpoints."""

    cause: str
    """One of ``CAUSES``."""
    before: str
    """Earlier checkpoint."""
    after: str
    """Later checkpoint."""
    n_shared: int
    """Problems both checkpoints have."""
    value_before: float
    """Mean over the earlier checkpoint's shared problems."""
    value_after: float
    """Mean over the later checkpoint's shared problems."""
    count_before: int | None = None
    """For a rate: the samples it counts at the earlier checkpoint (shared problems)."""
    count_after: int | None = None
    """For a rate: the samples it counts at the later checkpoint (shared problems)."""
    delta: float
    """``value_after - value_before``."""
    ci: tuple[float, float] | None
    """95% paired bootstrap interval of ``delta``."""
    effect: float | None
    """Standardised mean difference."""
    p_value: float | None
    """Sign-flip permutation p-value, BH-adjusted across causes x pairs."""
    p_raw: float | None
    """The same before adjustment."""
    verdict: str
    """``up``, ``down`` or ``within noise``."""
    note: str | None = None
    """Why there is no test, when there is none."""


class VoteTransition(BaseModel):
    """How the full-n vote of the shared problems moved between two checkpoints."""

    before: str
    """Earlier checkpoint."""
    after: str
    """Later checkpoint."""
    right_right: int
    """Problems whose vote was right at both."""
    right_wrong: int
    """Problems whose vote went from right to wrong."""
    wrong_right: int
    """Problems whose vote went from wrong to right."""
    wrong_wrong: int
    """Problems whose vote was wrong at both."""
    went_wrong: list[str]
    """``dataset/problem_id`` of the problems that went from right to wrong."""
    went_right: list[str]
    """``dataset/problem_id`` of the problems that went from wrong to right."""


def _column(graded: pd.DataFrame, name: str) -> pd.Series:
    # A table built by hand (or by an older misstep) may lack a cause: it is left out (NaN).
    if name in graded.columns:
        return graded[name].astype(float)
    return pd.Series(np.nan, index=graded.index, dtype=float)


def cause_values(graded: pd.DataFrame) -> pd.DataFrame:
    """One row per problem: the key columns, the ``CAUSES`` (see the module docstring) and
    ``n``, its samples."""
    outcome = graded["outcome"].astype(str)
    frame = pd.DataFrame(
        {
            "checkpoint": graded["checkpoint"].astype(str),
            "dataset": graded["dataset"].astype(str),
            "problem_id": graded["problem_id"].astype(str),
            "response_chars": _column(graded, "response_chars"),
            "no_answer_rate": (outcome == "no_answer").astype(float),
            "truncated_rate": (outcome == "truncated").astype(float),
            "repetition": _column(graded, "repetition"),
            "n": 1.0,
        }
    )
    grouped = frame.groupby(PROBLEM_KEY, sort=False)
    out = grouped[list(CAUSES)].mean()
    out["n"] = grouped["n"].sum()
    return out.reset_index()


def _sign_flip_p(diff: np.ndarray, rng: np.random.Generator) -> float:
    observed = abs(float(diff.mean()))
    signs = rng.choice([-1.0, 1.0], size=(N_FLIPS, len(diff)))
    null = np.abs(signs @ diff / len(diff))
    return float((1 + int((null >= observed - 1e-12).sum())) / (1 + N_FLIPS))


def cause_shifts(values: pd.DataFrame, checkpoints: list[str], *, seed: int) -> list[CauseShift]:
    """Paired shifts of every cause between consecutive checkpoints (module docstring)."""
    by_ck = {
        ck: part.set_index(["dataset", "problem_id"])
        for ck, part in values.groupby("checkpoint", sort=False)
    }
    shifts: list[CauseShift] = []
    for before, after in itertools.pairwise(checkpoints):
        a, b = by_ck.get(before), by_ck.get(after)
        if a is None or b is None:
            continue
        shared = a.index.intersection(b.index)
        rng = np.random.default_rng([seed, zlib.crc32(f"{before}\x1f{after}".encode())])
        for cause in CAUSES:
            xa = a.loc[shared, cause].to_numpy(float)
            xb = b.loc[shared, cause].to_numpy(float)
            if np.isnan(xa).all() and np.isnan(xb).all():
                continue  # the table has no such column
            diff = xb - xa
            shift = CauseShift(
                cause=cause,
                before=before,
                after=after,
                n_shared=len(shared),
                value_before=float(xa.mean()) if len(xa) else 0.0,
                value_after=float(xb.mean()) if len(xb) else 0.0,
                delta=float(diff.mean()) if len(diff) else 0.0,
                ci=None,
                effect=None,
                p_value=None,
                p_raw=None,
                verdict="within noise",
            )
            if len(shared) < MIN_SHARED:
                shift.note = f"too few data: {len(shared)} shared problems (needs {MIN_SHARED})"
                shifts.append(shift)
                continue
            if cause.endswith("_rate"):
                shift.count_before = round(float((xa * a.loc[shared, "n"].to_numpy(float)).sum()))
                shift.count_after = round(float((xb * b.loc[shared, "n"].to_numpy(float)).sum()))
            shift.ci = mean_ci(diff, 1000, rng)
            spread = float(np.std(np.concatenate([xa, xb]), ddof=1))
            shift.effect = shift.delta / spread if spread > 0 else None
            shift.p_raw = shift.p_value = _sign_flip_p(diff, rng) if np.any(diff != 0) else 1.0
            shift.verdict = verdict(shift.ci)
            shifts.append(shift)
    for shift, adjusted in zip(shifts, bh_adjust([s.p_raw for s in shifts]), strict=True):
        shift.p_value = adjusted
    return shifts


def vote_transitions(graded: pd.DataFrame, checkpoints: list[str]) -> list[VoteTransition]:
    """Right/wrong full-n votes of the shared problems between consecutive checkpoints."""
    stats = problem_stats(graded)
    stats = stats.assign(
        key=stats["dataset"].astype(str) + "/" + stats["problem_id"].astype(str),
        right=stats["majority_correct"].astype(bool),
    )
    by_ck = {ck: part.set_index("key")["right"] for ck, part in stats.groupby("checkpoint")}
    out: list[VoteTransition] = []
    for before, after in itertools.pairwise(checkpoints):
        a, b = by_ck.get(before), by_ck.get(after)
        if a is None or b is None:
            continue
        shared = a.index.intersection(b.index)
        ra, rb = a.loc[shared], b.loc[shared]
        out.append(
            VoteTransition(
                before=before,
                after=after,
                right_right=int((ra & rb).sum()),
                right_wrong=int((ra & ~rb).sum()),
                wrong_right=int((~ra & rb).sum()),
                wrong_wrong=int((~ra & ~rb).sum()),
                went_wrong=sorted(shared[(ra & ~rb).to_numpy()].tolist()),
                went_right=sorted(shared[(~ra & rb).to_numpy()].tolist()),
            )
        )
    return out
