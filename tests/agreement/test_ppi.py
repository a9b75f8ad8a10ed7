"""PPI++ shares (``_ppi``), the confusion homogeneity test, the label plan and the shift
tests on the corrected shares: hand-worked values, ppi-python as an independent
implementation, and small simulations with known truth (the big coverage study is
``benchmarks/bench_estimators.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from misstep.agreement import (
    ErrorDistribution,
    confusion_homogeneity,
    labels_needed,
    ppi_shares,
    simultaneous_z,
)
from misstep.link._shifts import estimator_shifts

EYE = np.eye(3)


def _draw(rng: np.random.Generator, p: list[float], acc: float, n: int) -> tuple[np.ndarray, ...]:
    """True types and a judge right with probability ``acc`` (else uniform)."""
    y = rng.choice(len(p), size=n, p=p)
    f = np.where(rng.random(n) < acc, y, rng.integers(len(p), size=n))
    return y, f


def test_hand_worked_shares_and_variance() -> None:
    # disjoint design, lam = 1: people a, a, b on traces the judge called a, b, b; the judge
    # alone calls 4 more traces a, a, b, b.
    y = EYE[[0, 0, 1]]
    f = EYE[[0, 1, 1]]
    f_all = EYE[[0, 0, 1, 1]]
    est = ppi_shares(y, f, f_all, lam=1.0)
    # share of a: mean judge a over the 4 (0.5) + mean(y_a - f_a) = (0 + 1 + 0) / 3
    assert est.estimate[0] == pytest.approx(0.5 + 1 / 3)
    # variance: Var0(f_a)/4 + Var0(y_a - f_a)/3 = 0.25/4 + (2/9)/3
    assert est.cov[0, 0] == pytest.approx(0.25 / 4 + (2 / 9) / 3)
    # lam = 0 is the people alone: 2/3 with variance (2/9) / 3
    alone = ppi_shares(y, f, f_all, lam=0.0)
    assert alone.estimate[0] == pytest.approx(2 / 3)
    assert alone.cov[0, 0] == pytest.approx((2 / 9) / 3)


def test_matches_ppi_python_on_the_disjoint_design() -> None:
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(1)
    y, f = _draw(rng, [0.5, 0.3, 0.2], 0.7, 1500)
    args = (EYE[y[:150]], EYE[f[:150]], EYE[f[150:]])
    for lam in (1.0, 0.5):
        mine = ppi_shares(*args, lam=lam)
        lo, hi = ppi_py.ppi_mean_ci(*args, alpha=0.05, lam=lam)
        assert mine.intervals() == pytest.approx(np.stack([lo, hi], axis=1), abs=1e-12)
        point = ppi_py.ppi_mean_pointestimate(*args, lam=lam)
        assert mine.estimate == pytest.approx(point, abs=1e-12)
    # tuned per type: ppi-python's "element" lam uses the pooled judge variance (ddof 1);
    # ours minimises the estimated variance: the same up to terms of order 1/n
    lo, hi = ppi_py.ppi_mean_ci(*args, alpha=0.05, lam_optim_mode="element")
    assert ppi_shares(*args).intervals() == pytest.approx(np.stack([lo, hi], axis=1), abs=0.01)


def test_clusters_of_copies_count_once() -> None:
    # every trace copied 4 times into one cluster: the clustered variance is the one of the
    # traces without copies, times C/(C-1)
    rng = np.random.default_rng(2)
    y, f = _draw(rng, [0.5, 0.3, 0.2], 0.8, 200)
    idx = np.arange(40)
    one = ppi_shares(EYE[y[idx]], EYE[f[idx]], EYE[f], labelled_index=idx, lam=0.6)
    rep_f = np.repeat(f, 4)
    rep_idx = np.repeat(idx * 4, 1)  # the first copy of each labelled trace
    w_lab = np.full(40, 1.0)
    copies = ppi_shares(
        EYE[y[idx]],
        EYE[f[idx]],
        EYE[rep_f],
        labelled_index=rep_idx,
        w_labelled=w_lab,
        clusters=np.repeat(np.arange(200), 4),
        lam=0.6,
    )
    assert copies.estimate == pytest.approx(one.estimate)
    assert copies.cov == pytest.approx(one.cov * 200 / 199)


def test_never_wider_than_the_human_labels_alone() -> None:
    rng = np.random.default_rng(3)
    for acc in (0.0, 0.4, 0.9):
        y, f = _draw(rng, [0.6, 0.3, 0.1], acc, 800)
        idx = rng.choice(800, size=80, replace=False)
        args = (EYE[y[idx]], EYE[f[idx]], EYE[f])
        tuned = ppi_shares(*args, labelled_index=idx)
        alone = ppi_shares(*args, labelled_index=idx, lam=0.0)
        assert (tuned.se <= alone.se + 1e-12).all()


@pytest.mark.parametrize("drift", [False, True])
def test_coverage_with_known_truth(drift: bool) -> None:
    # 3 checkpoints x 60 runs x 3 types; the judge's accuracy drifts 0.9 -> 0.5 or stays 0.75
    rng = np.random.default_rng(4 + drift)
    p = [0.5, 0.3, 0.2]
    hits = []
    for _ in range(60):
        for acc in (0.9, 0.7, 0.5) if drift else (0.75,) * 3:
            y, f = _draw(rng, p, acc, 1000)
            idx = rng.choice(1000, size=150, replace=False)
            ci = ppi_shares(EYE[y[idx]], EYE[f[idx]], EYE[f], labelled_index=idx).intervals()
            hits += ((ci[:, 0] <= p) & (np.array(p) <= ci[:, 1])).tolist()
    # 540 intervals at 95%: a binomial sd of 0.94 pp; 3 sd either side
    assert 0.92 <= np.mean(hits) <= 0.98


def test_zero_variance_types_get_an_exact_interval() -> None:
    # nobody and no judge says type 2: Clopper-Pearson of 0 of 60, 1 - 0.025^(1/60)
    y = EYE[[0] * 30 + [1] * 30]
    est = ppi_shares(y, y.copy(), EYE[[0] * 300 + [1] * 300])
    assert est.intervals()[2] == pytest.approx((0.0, 1 - 0.025 ** (1 / 60)))


def test_simultaneous_critical_value() -> None:
    # independent types: the max-|z| value is Sidak's, just under Bonferroni's
    z = simultaneous_z(np.eye(5) * 0.01)
    sidak = stats.norm.ppf(1 - (1 - 0.95 ** (1 / 5)) / 2)
    assert z == pytest.approx(sidak, abs=0.02)
    assert z <= stats.norm.ppf(1 - 0.05 / 10)
    # perfectly correlated: one type, 1.96
    assert simultaneous_z(np.ones((3, 3))) == pytest.approx(1.96, abs=0.02)


def test_homogeneity_test_finds_drift_and_keeps_its_level() -> None:
    rng = np.random.default_rng(5)
    rejections = 0
    for _ in range(20):
        cks, hs, js = [], [], []
        for ck in ("a", "b", "c"):
            y, f = _draw(rng, [0.5, 0.3, 0.2], 0.7, 100)
            cks += [ck] * 100
            hs += y.tolist()
            js += f.tolist()
        rejections += (confusion_homogeneity(cks, hs, js, n_perm=200).p_value or 1) < 0.05
    # 20 null runs at 5%: P(more than 4 rejections) < 2%
    assert rejections <= 4
    cks, hs, js = [], [], []
    for ck, acc in (("a", 0.95), ("b", 0.6), ("c", 0.2)):
        y, f = _draw(rng, [0.5, 0.3, 0.2], acc, 100)
        cks += [ck] * 100
        hs += y.tolist()
        js += f.tolist()
    drifted = confusion_homogeneity(cks, hs, js, n_perm=200)
    assert drifted.p_value is not None and drifted.p_value < 0.01
    assert "differs" in drifted.meaning
    alone = confusion_homogeneity(["a"] * 5, ["x"] * 5, ["y"] * 5)
    assert alone.p_value is None and "not testable" in alone.meaning


def test_labels_needed_by_hand() -> None:
    z = stats.norm.ppf(0.975)
    # no pilot: z^2 / (4 H^2) = 3.8415 / 0.01 = 384.1 -> 385
    assert labels_needed(0.05, 10_000)[0] == 385
    # a judge that says nothing (f constant): V_f = 0, every share from people:
    # V_y of a 50/50 type is 0.25, the same 385
    y = EYE[[0, 1] * 50]
    f = EYE[[2] * 100]
    assert labels_needed(0.05, 10_000, y=y, f=f)[0] == 385
    # a perfect judge (f = y): rho = 1, people add nothing but the judge's own noise
    # C^2 / (V_f N) = V / N: half-width z sqrt(0.25 / 10000) = 0.0098 < 0.05 -> 2 labels
    need, width = labels_needed(0.05, 10_000, y=y, f=y.copy())
    assert need == 2 and width == pytest.approx(z * math.sqrt(0.25 / 10_000))
    # capped at the traces there are
    assert labels_needed(0.01, 300)[0] == 300


def _dist(ck: str, shares: list[float], var: float) -> ErrorDistribution:
    d = ErrorDistribution(checkpoint=ck, dataset="all", n_wrong=100, n_labelled=100)
    d.error_dist = dict(zip("ab", shares, strict=True))
    d.error_dist_corrected = dict(zip("ab", shares, strict=True))
    d.error_dist_cov = (np.eye(2) * var).tolist()
    d.estimator = "ppi"
    return d


def test_shift_tests_from_the_corrected_shares() -> None:
    # a: 0.3 -> 0.4 with variance 0.0025 at each: z = 0.1 / sqrt(0.005) = 1.414, p = 0.157
    (shift,) = estimator_shifts(
        [_dist("c1", [0.3, 0.7], 0.0025), _dist("c2", [0.4, 0.6], 0.0025)], ["c1", "c2"], ["a", "b"]
    )
    a = shift.changes[0]
    assert a.delta == pytest.approx(0.1)
    assert a.p_raw == pytest.approx(2 * stats.norm.sf(0.1 / math.sqrt(0.005)))
    z = stats.norm.ppf(0.975)  # the interval's level, 95%
    assert a.ci == pytest.approx((0.1 - z * math.sqrt(0.005), 0.1 + z * math.sqrt(0.005)))
    # Wald: (0.1^2 + 0.1^2) / 0.005 = 4 on 2 dof
    assert shift.chi2 == pytest.approx(4.0) and shift.dof == 2
    assert shift.p_raw == pytest.approx(stats.chi2.sf(4.0, 2))
    (missing,) = estimator_shifts([_dist("c1", [0.3, 0.7], 0.0025), None], ["c1", "c2"], ["a", "b"])
    assert missing.p_value is None and "c2" in (missing.note or "")


def test_error_distributions_ppi_holds_under_drift_where_pooled_does_not() -> None:
    # End to end: two checkpoints of 1,000 wrong traces (200 problems of 5), true shares
    # misread 0.4 / arithmetic 0.6 at both; the judge calls misread right 95% of the time at
    # c1 and 30% at c2 (else arithmetic). People label 100 per checkpoint with the truth.
    import pandas as pd

    from misstep.agreement import AnalysisConfig, Estimator, error_distributions
    from misstep.labels import HumanLabel, LabelStatus, StoredLabel

    rng = np.random.default_rng(7)
    rows, labels, human = [], {}, []
    for ck, acc in (("c1", 0.95), ("c2", 0.30)):
        truth = np.where(rng.random(1000) < 0.4, "misread", "arithmetic")
        said = np.where((truth == "misread") & (rng.random(1000) > acc), "arithmetic", truth)
        for i in range(1000):
            tid = f"{ck}/{i}"
            rows.append(
                {"trace_id": tid, "checkpoint": ck, "dataset": "d", "problem_id": f"p{i // 5}",
                 "outcome": "wrong"}
            )  # fmt: skip
            labels[tid] = StoredLabel(
                trace_id=tid, judge="j", status=LabelStatus.OK, error_type=str(said[i])
            )
            if i % 10 == 0:
                human.append(HumanLabel(trace_id=tid, annotator="a", error_type=str(truth[i])))
    graded = pd.DataFrame(rows)
    cats = ["misread", "arithmetic"]
    ppi = {d.checkpoint: d for d in error_distributions(graded, labels, cats, human=human)}
    pooled = {
        d.checkpoint: d
        for d in error_distributions(
            graded,
            labels,
            cats,
            human=human,
            config=AnalysisConfig(estimator=Estimator.POOLED, n_boot=200),
        )
    }
    for ck in ("c1", "c2"):
        d = ppi[ck]
        assert d.estimator == "ppi" and d.n_human == 100
        lo, hi = (d.error_dist_ci or {})["misread"] or (0.0, 0.0)
        assert lo <= 0.4 <= hi
    # the pooled confusion (misread right ~62% of the time) inverts c2's 12% judge share to
    # far below 0.4: its interval misses the truth
    lo, hi = (pooled["c2"].error_dist_ci or {})["misread"] or (0.0, 0.0)
    assert hi < 0.4
    assert pooled["c2"].homogeneity is not None
    assert (pooled["c2"].homogeneity.p_value or 1.0) < 0.01  # the drift is detected


def test_ppi_weights_from_the_budget_and_the_sample_keep_it_unbiased() -> None:
    # One checkpoint, two datasets of 1,000 wrong traces: misread 20% in A, 60% in B (truth
    # over the checkpoint: 40%). The budget judges all of A and a quarter of B; the judge is
    # right 90% of the time on A and 50% on B. People label 150 judged traces of A (weight
    # 1000 / 150) and 50 of B (weight 250 / 50 / 0.25 = 20). Over 40 runs the mean estimate is
    # within 3 standard errors of 0.4 and the intervals cover it.
    import pandas as pd

    from misstep.agreement import error_distributions
    from misstep.labels import HumanLabel, LabelRow

    rng = np.random.default_rng(8)
    estimates, hits = [], 0
    for _ in range(40):
        rows, labels, human = [], {}, []
        for ds, share, acc, judged_n, people_n in (
            ("A", 0.2, 0.9, 1000, 150),
            ("B", 0.6, 0.5, 250, 50),
        ):
            truth = np.where(rng.random(1000) < share, "misread", "other")
            wrong_call = {"misread": "other", "other": "misread"}
            said = [t if rng.random() < acc else wrong_call[t] for t in truth]
            judged = rng.choice(1000, size=judged_n, replace=False)
            for i in range(1000):
                rows.append(
                    {"trace_id": f"{ds}{i}", "checkpoint": "c", "dataset": ds,
                     "problem_id": f"{ds}{i}", "outcome": "wrong"}
                )  # fmt: skip
            for i in judged:
                labels[f"{ds}{i}"] = LabelRow("ok", said[i], judged_n / 1000)
            for i in rng.choice(judged, size=people_n, replace=False):
                weight = judged_n / people_n / (judged_n / 1000)
                human.append(
                    HumanLabel(trace_id=f"{ds}{i}", annotator="a", error_type=str(truth[i]),
                               weight=weight)
                )  # fmt: skip
        (d,) = error_distributions(
            pd.DataFrame(rows), labels, ["misread", "other"], human=human, pool_datasets=True
        )
        estimates.append((d.error_dist_corrected or {})["misread"])
        lo, hi = (d.error_dist_ci or {})["misread"] or (0.0, 0.0)
        hits += lo <= 0.4 <= hi
    est = np.array(estimates)
    assert abs(est.mean() - 0.4) < 3 * est.std(ddof=1) / math.sqrt(len(est))
    assert hits >= 34  # 40 intervals at 95%: P(fewer than 34) < 1%
