"""Per-problem answer statistics over the full set of a problem's samples.

Only samples with an answer (``answer_class`` not None) count here; truncated and no-answer
samples never vote. With ``n_answered`` such samples split into classes of sizes a_i:

- ``entropy``: -sum p_i log2 p_i with p_i = a_i / n_answered, in bits (0 when all agree).
- ``top1_share``: max a_i / n_answered, the share of *answered* samples that give the most
  common answer (not / n, so truncations do not dilute agreement).
- ``wrong_consistency``: among the answered samples in wrong classes (classes holding no
  correct row), the share that give the most common wrong class.
- ``majority_class``: the full-n vote winner. Under a tie the winner shown is a wrong class
  when one is tied at the top (the one with the smallest key), else the smallest key;
  ``majority_tied`` says a tie happened.
- ``majority_correct``: the full-n vote scores 1, i.e. every class tied at the top is correct
  (score = |T ∩ G| / |T| as in maj@k).
- ``majority_failure``: at least one sample is correct (c >= 1) and the full-n vote does not
  score 1: a wrong class wins or ties for the top, or no sample has an answer at all.

The first three are undefined (NaN) for a problem with no answered (resp. no wrong) sample;
such problems are left out of those means, never counted as 0.

A checkpoint's mean of the first three (``agreement_means``) counts only the problems where
agreement can be observed: two or more answered samples (entropy, top-1 share), two or more
wrong answered samples (wrong consistency). One sample always "agrees" with itself (entropy 0,
shares 1), so counting such problems would report agreement that was never observed; where
no problem qualifies the mean is None (``n/a``), with ``UNDEFINED_NOTE`` saying why.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from misstep.metrics._counts import ProblemCounts

__all__ = ["UNDEFINED_NOTE", "agreement_means", "answer_stats"]

UNDEFINED_NOTE = (
    "answer entropy, top-1 share and wrong consistency count only problems with two or more "
    "answered (for wrong consistency: wrong answered) samples; n/a (null) where no problem has "
    "them: one sample always agrees with itself"
)


def _first_per_problem(pidx: np.ndarray, order: np.ndarray, n_problems: int) -> np.ndarray:
    """Row (into the unsorted arrays) of the first entry per problem in ``order``; -1 if none."""
    first = np.full(n_problems, -1, dtype=np.int64)
    sorted_pidx = pidx[order]
    is_first = np.ones(len(order), dtype=bool)
    is_first[1:] = sorted_pidx[1:] != sorted_pidx[:-1]
    first[sorted_pidx[is_first]] = order[is_first]
    return first


def answer_stats(counts: ProblemCounts) -> pd.DataFrame:
    """One row per problem (aligned with ``counts.problems``) with the statistics above."""
    problems, cls = counts.problems, counts.classes
    n_problems = len(problems)
    pidx = cls["pidx"].to_numpy(np.int64)
    size = cls["count"].to_numpy(np.int64)
    good = cls["correct"].to_numpy(bool)
    keys = cls["answer_class"].to_numpy(object)
    n_answered = problems["n_answered"].to_numpy(np.int64)
    c = problems["c"].to_numpy(np.int64)

    with np.errstate(divide="ignore", invalid="ignore"):
        share = size / n_answered[pidx]
        entropy = -np.bincount(pidx, weights=share * np.log2(share), minlength=n_problems)
        entropy = np.where(n_answered > 0, np.abs(entropy), np.nan)

        top = np.zeros(n_problems, dtype=np.int64)
        np.maximum.at(top, pidx, size)
        is_top = size == top[pidx]
        n_top = np.bincount(pidx, weights=is_top, minlength=n_problems)
        n_top_good = np.bincount(pidx, weights=is_top & good, minlength=n_problems)
        majority_correct = (n_top > 0) & (n_top_good == n_top)
        top1_share = np.where(n_answered > 0, top / n_answered, np.nan)

        wrong_size = np.where(good, 0, size)
        n_wrong_answered = np.bincount(pidx, weights=wrong_size, minlength=n_problems)
        top_wrong = np.zeros(n_problems, dtype=np.int64)
        np.maximum.at(top_wrong, pidx, wrong_size)
        consistency = np.where(n_wrong_answered > 0, top_wrong / n_wrong_answered, np.nan)

    key_rank = pd.factorize(pd.Series(keys, dtype=object).astype(str), sort=True)[0]
    # Majority winner: top classes first, wrong before correct, then the smallest key.
    winner = _first_per_problem(pidx, np.lexsort((key_rank, good, ~is_top, pidx)), n_problems)
    # Most common wrong class: wrong classes first, larger count first, then smallest key.
    top_wrong_row = _first_per_problem(pidx, np.lexsort((key_rank, -size, good, pidx)), n_problems)
    has_wrong = top_wrong > 0

    def pick(rows: np.ndarray, mask: np.ndarray) -> pd.Series:
        values = np.full(n_problems, None, dtype=object)
        values[mask] = keys[rows[mask]]
        return pd.Series(values, dtype=object)

    return pd.DataFrame(
        {
            "entropy": entropy,
            "top1_share": top1_share,
            "wrong_consistency": consistency,
            "majority_class": pick(winner, top > 0),
            "majority_correct": majority_correct,
            "majority_tied": n_top > 1,
            "majority_failure": (c >= 1) & ~majority_correct,
            "top_wrong_class": pick(top_wrong_row, has_wrong),
            "top_wrong_count": top_wrong,
            "n_wrong_answered": n_wrong_answered.astype(np.int64),
            "n_classes": np.bincount(pidx, minlength=n_problems).astype(np.int64),
        }
    )


def agreement_means(
    stats: pd.DataFrame, n_answered: np.ndarray
) -> tuple[dict[str, float | None], bool]:
    """``entropy``, ``top1_share`` and ``wrong_consistency`` averaged over the problems (rows
    of ``stats``, aligned with ``n_answered``) where each is observable (module docstring);
    and whether one of them is None only because its problems have a single sample."""
    answered = np.asarray(n_answered)
    wrong = stats["n_wrong_answered"].to_numpy(np.int64)
    counts = {"entropy": answered, "top1_share": answered, "wrong_consistency": wrong}
    out: dict[str, float | None] = {}
    single = False
    for name, count in counts.items():
        values = stats[name].to_numpy(float)[count >= 2]
        values = values[~np.isnan(values)]
        out[name] = float(values.mean()) if values.size else None
        single = single or (not values.size and bool((count == 1).any()))
    return out, single
