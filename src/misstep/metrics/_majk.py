"""maj@k: the expected score of a majority vote over a random k-subset of a problem's samples.

For one problem, draw a uniformly random k-subset S of its n samples. Samples without an
answer (truncated, no answer) never vote. Let T be the answer classes with the highest vote
count among the samples of S that have an answer and G the correct classes (usually one, the
gold class). Then::

    score(S) = |T ∩ G| / |T|        (a tie is broken uniformly at random)
    score(S) = 0                    when no sample of S has an answer
    maj@k    = E_S[score(S)]

A checkpoint's maj@k is the mean over its problems (``k <= n`` as for pass@k).

How it is computed, per distinct *signature* (the multiset of (class count, correct) pairs
plus the size of the no-answer bucket; problems with equal signatures share the value):

- ``k == 1``: the share of samples in a correct class; ``k == n``: the full vote, directly.
- otherwise **exactly** by a hypergeometric dynamic programme: for each correct class g and
  each vote count v it gets, count the subsets where every other class gets at most v votes
  while exactly t of them tie at v (a DP over the other classes on (subset size, ties), with
  the no-answer bucket as a class that never wins); such subsets score 1/(1+t). Summed with
  C(a_g, v) and divided by C(n, k), this is exact up to float rounding.
- when that DP would be too costly (many classes and a large k) or C(n, k) overflows a
  float: exact **enumeration** of all subsets if C(n, k) <= 100,000, else a seeded **Monte
  Carlo** estimate over ``mc_subsets`` (>= 2,000) random subsets, whose standard error is
  reported (``MajEstimate.se``). The seed is a pure function of (seed, k, signature).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from misstep.metrics._bootstrap import DEFAULT_SEED

__all__ = [
    "MAX_ENUMERATED_SUBSETS",
    "MIN_MC_SUBSETS",
    "MajEstimate",
    "MajMethod",
    "maj_at_k_one",
    "maj_at_k_signatures",
]

MAX_ENUMERATED_SUBSETS = 100_000
"""Subsets up to which enumeration is used when the DP is too costly."""
MIN_MC_SUBSETS = 2_000
"""The fewest random subsets a Monte Carlo estimate may use."""
MAX_DP_STEPS = 200_000
"""Above this many DP array operations for one signature, fall back (see module docstring)."""
_MAX_FLOAT_COMB = 1e300

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class MajMethod(StrEnum):
    """How one maj@k value was obtained."""

    CLOSED = "closed"
    DP = "dp"
    ENUMERATION = "enumeration"
    MONTE_CARLO = "monte_carlo"


@dataclass(frozen=True)
class MajEstimate:
    """maj@k of one problem, with its standard error (0 unless Monte Carlo)."""

    value: float
    se: float
    method: MajMethod


def _full_vote(counts: Sequence[int], correct: Sequence[bool]) -> float:
    top = max(counts, default=0)
    if top == 0:
        return 0.0
    winners = [g for a, g in zip(counts, correct, strict=True) if a == top]
    return sum(winners) / len(winners)


def _dp_steps(counts: Sequence[int], correct: Sequence[bool], k: int) -> int:
    others = sum(min(a, k) + 2 for a in counts)
    return sum(min(a, k) * others for a, g in zip(counts, correct, strict=True) if g)


def _maj_dp(counts: Sequence[int], correct: Sequence[bool], n_none: int, k: int) -> float:
    n = n_none + sum(counts)
    total = 0.0
    for j, (a, is_correct) in enumerate(zip(counts, correct, strict=True)):
        if not is_correct or a == 0:
            continue
        others = [b for i, b in enumerate(counts) if i != j and b > 0]
        for v in range(1, min(a, k) + 1):
            rest = k - v
            if rest > n - a:
                continue
            # Classes with fewer than v samples can neither tie nor win: together with the
            # no-answer bucket they contribute comb(small, s) subsets of size s (Vandermonde),
            # so only the larger classes need a step of the DP (most classes are singletons).
            small = n_none + sum(b for b in others if b < v)
            large = [b for b in others if b >= v]
            max_ties = min(len(large), rest // v)
            # table[s, t]: subsets of size s of the samples seen so far in which exactly t
            # other classes have v votes and none has more. Start from the small classes.
            table = np.zeros((rest + 1, max_ties + 1))
            table[: min(rest, small) + 1, 0] = [
                math.comb(small, s) for s in range(min(rest, small) + 1)
            ]
            for b in large:
                new = np.zeros_like(table)
                for x in range(min(b, v - 1, rest) + 1):
                    new[x:, :] += math.comb(b, x) * table[: rest + 1 - x, :]
                if b >= v and max_ties > 0:
                    new[v:, 1:] += math.comb(b, v) * table[: rest + 1 - v, :-1]
                table = new
            ties = np.arange(max_ties + 1)
            total += math.comb(a, v) * float(np.sum(table[rest, :] / (ties + 1)))
    return total / math.comb(n, k)


def _score_subsets(
    subsets: IntArray, labels: IntArray, correct: npt.NDArray[np.bool_], n_classes: int
) -> FloatArray:
    """Vote score of each row of ``subsets`` (sample indices); label -1 = no answer."""
    drawn = labels[subsets]
    rows = np.repeat(np.arange(len(subsets)), subsets.shape[1])
    flat = drawn.reshape(-1)
    keep = flat >= 0
    votes = np.zeros((len(subsets), n_classes), dtype=np.int64)
    np.add.at(votes, (rows[keep], flat[keep]), 1)
    top = votes.max(axis=1, initial=0)
    winners = (votes == top[:, None]) & (top[:, None] > 0)
    n_win = winners.sum(axis=1)
    hits = (winners & correct[None, :]).sum(axis=1)
    return np.where(n_win > 0, hits / np.maximum(n_win, 1), 0.0)


def _labels(counts: Sequence[int], n_none: int) -> IntArray:
    parts = [np.full(a, i, dtype=np.int64) for i, a in enumerate(counts)]
    parts.append(np.full(n_none, -1, dtype=np.int64))
    return np.concatenate(parts)


def _maj_enumerate(counts: Sequence[int], correct: Sequence[bool], n_none: int, k: int) -> float:
    labels = _labels(counts, n_none)
    flags = np.asarray(correct, dtype=bool)
    combos = itertools.combinations(range(len(labels)), k)
    total, seen = 0.0, 0
    while chunk := list(itertools.islice(combos, 10_000)):
        scores = _score_subsets(np.asarray(chunk, dtype=np.int64), labels, flags, len(counts))
        total += float(scores.sum())
        seen += len(chunk)
    return total / seen


def _maj_monte_carlo(
    counts: Sequence[int],
    correct: Sequence[bool],
    n_none: int,
    k: int,
    *,
    n_subsets: int,
    seed: int,
) -> tuple[float, float]:
    labels = _labels(counts, n_none)
    entropy = [seed, k, n_none, *counts, *(int(g) for g in correct)]
    rng = np.random.default_rng(np.random.SeedSequence(entropy))
    flags = np.asarray(correct, dtype=bool)
    scores = []
    for start in range(0, n_subsets, 500):
        size = min(500, n_subsets - start)
        subsets = np.argpartition(rng.random((size, len(labels))), k - 1, axis=1)[:, :k]
        scores.append(_score_subsets(subsets.astype(np.int64), labels, flags, len(counts)))
    drawn = np.concatenate(scores)
    return float(drawn.mean()), float(drawn.std(ddof=1) / math.sqrt(len(drawn)))


def maj_at_k_one(
    counts: Sequence[int],
    correct: Sequence[bool],
    n_none: int,
    k: int,
    *,
    seed: int = DEFAULT_SEED,
    mc_subsets: int = MIN_MC_SUBSETS,
    max_dp_steps: int | None = None,
) -> MajEstimate:
    """maj@k of one problem given its class counts, their correctness and the no-answer count.

    ``max_dp_steps`` bounds the exact DP's cost before falling back (default
    ``MAX_DP_STEPS``, read at call time; lower it to force the fallbacks). Raises ValueError
    for k outside 1..n or fewer than 2,000 Monte Carlo subsets.
    """
    if len(counts) != len(correct):
        raise ValueError("counts and correct must have the same length")
    if mc_subsets < MIN_MC_SUBSETS:
        raise ValueError(f"mc_subsets must be at least {MIN_MC_SUBSETS}, got {mc_subsets}")
    n = n_none + sum(counts)
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if not any(g and a > 0 for a, g in zip(counts, correct, strict=True)):
        return MajEstimate(0.0, 0.0, MajMethod.CLOSED)
    if k == 1:
        hits = sum(a for a, g in zip(counts, correct, strict=True) if g)
        return MajEstimate(hits / n, 0.0, MajMethod.CLOSED)
    if k == n:
        return MajEstimate(_full_vote(counts, correct), 0.0, MajMethod.CLOSED)
    n_subsets = math.comb(n, k)
    limit = MAX_DP_STEPS if max_dp_steps is None else max_dp_steps
    if n_subsets < _MAX_FLOAT_COMB and _dp_steps(counts, correct, k) <= limit:
        return MajEstimate(_maj_dp(counts, correct, n_none, k), 0.0, MajMethod.DP)
    if n_subsets <= MAX_ENUMERATED_SUBSETS:
        return MajEstimate(_maj_enumerate(counts, correct, n_none, k), 0.0, MajMethod.ENUMERATION)
    value, se = _maj_monte_carlo(counts, correct, n_none, k, n_subsets=mc_subsets, seed=seed)
    return MajEstimate(value, se, MajMethod.MONTE_CARLO)


def maj_at_k_signatures(
    signatures: IntArray,
    k: int,
    *,
    seed: int = DEFAULT_SEED,
    mc_subsets: int = MIN_MC_SUBSETS,
    max_dp_steps: int | None = None,
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_]]:
    """maj@k per signature row (see ``ProblemCounts.signatures``): values, standard errors
    and whether Monte Carlo was used. NaN where k exceeds the signature's n."""
    values = np.full(len(signatures), np.nan)
    errors = np.zeros(len(signatures))
    monte_carlo = np.zeros(len(signatures), dtype=bool)
    for row, signature in enumerate(signatures):
        codes = [int(x) for x in signature[:-1] if x > 0]
        counts = [x // 2 for x in codes]
        correct = [bool(x % 2) for x in codes]
        n_none = int(signature[-1])
        if k > n_none + sum(counts):
            continue
        estimate = maj_at_k_one(
            counts,
            correct,
            n_none,
            k,
            seed=seed,
            mc_subsets=mc_subsets,
            max_dp_steps=max_dp_steps,
        )
        values[row], errors[row] = estimate.value, estimate.se
        monte_carlo[row] = estimate.method is MajMethod.MONTE_CARLO
    return values, errors, monte_carlo
