"""PPI with traces the judge could not type (``abstained``): they are judged traces predicted
as no type (a zero row), so their human labels enter through the rectifier alone, and the
estimate stays valid for people's shares over every wrong trace the judge answered. A
hand-worked case, then a simulation with a known truth whose every interval is checked."""

from __future__ import annotations

import numpy as np
import pytest

from misstep.agreement import PPI, AnalysisConfig, Group, ShareInputs, ppi_shares

CATS = ["a", "b", "c"]
TRUTH = np.array([0.5, 0.3, 0.2])
ABSTAIN = np.array([0.1, 0.6, 0.3])
"""P(the judge cannot tell | true type): it abstains most on b, so the typed traces hold too
few b's (an estimator over typed traces alone would miss the truth)."""


def test_hand_worked_abstained_trace_enters_through_the_rectifier_alone() -> None:
    # 4 judged traces: the judge says a, a, b and cannot tell the 4th (a zero row). People
    # label the 4th (b) and the 1st (a). lam = 1:
    # theta = mean_all f + mean_L (y - f) = (2/4, 1/4) + ((0, 1) - (0, 0) + (1, 0) - (1, 0)) / 2
    #       = (0.5, 0.25) + (0, 0.5) = (0.5, 0.75)
    eye = np.eye(2)
    f_all = np.vstack([eye[[0, 0, 1]], np.zeros((1, 2))])
    y = eye[[1, 0]]
    est = ppi_shares(y, f_all[[3, 0]], f_all, labelled_index=np.array([3, 0]), lam=1.0)
    assert est.estimate == pytest.approx([0.5, 0.75])
    # with lam = 0 it is people's shares alone: (1/2, 1/2)
    alone = ppi_shares(y, f_all[[3, 0]], f_all, labelled_index=np.array([3, 0]), lam=0.0)
    assert alone.estimate == pytest.approx([0.5, 0.5])


def _one_run(
    rng: np.random.Generator, n: int, n_human: int, *, with_abstained: bool
) -> tuple[np.ndarray, list[tuple[float, float] | None]]:
    """One checkpoint: ``n`` wrong traces of true types drawn from TRUTH; the judge abstains
    with ABSTAIN[type], else says the true type with probability 0.7 (else another at
    random); people label ``n_human`` of them at random. The PPI shares and intervals."""
    true = rng.choice(3, size=n, p=TRUTH)
    abstains = rng.random(n) < ABSTAIN[true]
    other = (true + rng.integers(1, 3, size=n)) % 3
    said = np.where(rng.random(n) < 0.7, true, other)
    ids = [f"t{i}" for i in range(n)]
    typed = [i for i in range(n) if not abstains[i]]
    untyped = [i for i in range(n) if abstains[i]] if with_abstained else []
    labelled = rng.choice(n, size=n_human, replace=False)
    if not with_abstained:
        labelled = np.array([i for i in labelled if not abstains[i]])
    inputs = ShareInputs(
        categories=CATS,
        judged={ids[i]: CATS[said[i]] for i in typed},
        people={ids[i]: (CATS[true[i]], 1.0) for i in labelled},
        has_human=True,
        abstained=frozenset(ids[i] for i in untyped),
    )
    group = Group(
        checkpoint="c",
        dataset="d",
        trace_ids=[ids[i] for i in typed],
        types=[CATS[said[i]] for i in typed],
        strata=["d"] * len(typed),
        sizes={"d": n},
        abstained_ids=[ids[i] for i in untyped],
        abstained_strata=["d"] * len(untyped),
    )
    est = PPI(inputs, AnalysisConfig()).estimate(group)
    assert not isinstance(est, type(None))
    return est.shares, est.ci  # type: ignore[union-attr]


def _coverage(with_abstained: bool, reps: int = 400) -> np.ndarray:
    rng = np.random.default_rng(20240633)
    hits = np.zeros(3)
    for _ in range(reps):
        _, cis = _one_run(rng, 300, 90, with_abstained=with_abstained)
        for k, ci in enumerate(cis):
            assert ci is not None
            hits[k] += ci[0] <= TRUTH[k] <= ci[1]
    return hits / reps


def test_every_interval_covers_the_truth_with_abstentions_counted() -> None:
    # 400 replicates: a 95% interval's coverage has a standard error of about 0.011, so
    # [0.91, 0.985] is the nominal level within 3.5 standard errors
    coverage = _coverage(with_abstained=True)
    assert all(0.91 <= c <= 0.985 for c in coverage), coverage


def test_leaving_the_abstentions_out_misses_the_truth() -> None:
    # the same runs with the not-typed traces dropped: the typed traces hold b at
    # 0.3 * 0.4 / (0.5 * 0.9 + 0.3 * 0.4 + 0.2 * 0.7) = 0.12 / 0.71 = 0.17, not 0.3
    coverage = _coverage(with_abstained=False, reps=100)
    assert coverage[1] < 0.5, coverage  # 0.20 at this seed, against 0.95
