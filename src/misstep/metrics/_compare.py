"""Two evaluations side by side: is the difference larger than sampling noise?

Two runs (two seeds of one checkpoint, two submissions, two checkpoints) are compared on the
problems both have (dataset x problem_id). Per problem and run: samples, pass@1, the majority
answer and its vote margin (its votes minus the runner-up's, over answered samples).

The compared metric (``metric``) is per problem, averaged over the shared problems:

- ``maj`` (the default): the full vote over all of a problem's samples, scored 1 when the
  winning class is correct (ties share the credit), the score a competition that takes the
  majority of n samples reports;
- ``pass@1``: the share of correct samples.

``delta`` is b minus a; ``delta_ci`` a paired percentile bootstrap over problems; ``p_value`` a
permutation test that, within each problem, pools the two runs' samples and splits them again
at random into groups of the runs' sizes (``n_perm`` times, seeded), two-sided on the mean
difference: under "both runs sample the same model", every such split is as likely as the
observed one.

``expected_spread`` says how much the score moves from sampling alone: per run and problem, the
probability that a fresh set of n samples gives a correct majority is estimated by resampling
the problem's samples (``n_resample`` times); the number of problems solved is then a sum of
independent Bernoullis whose distribution is computed exactly, and its mean and central 95%
range are reported beside the number observed.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from pydantic import BaseModel, Field

from misstep.errors import AnalysisError, OptionError
from misstep.metrics._answer_stats import agreement_means
from misstep.metrics._bootstrap import DEFAULT_SEED
from misstep.metrics._intervals import mean_ci
from misstep.metrics._ks import k_fits

__all__ = ["COMPARE_METRICS", "Comparison", "compare_runs"]

COMPARE_METRICS = ("maj", "pass@1")
IntArray = npt.NDArray[np.int64]


class Comparison(BaseModel):
    """The result of ``misstep compare`` (see the module docstring)."""

    metric: str
    """``maj`` or ``pass@1``."""
    n_shared: int
    """Problems both runs have."""
    a: float
    """Run A's metric over the shared problems (share)."""
    b: float
    """Run B's metric over the shared problems (share)."""
    delta: float
    """``b - a``."""
    delta_ci: tuple[float, float] | None
    """95% paired bootstrap interval of ``delta``."""
    p_value: float
    """Permutation p-value (samples permuted between the runs within each problem)."""
    verdict: str
    """``b better``, ``a better`` or ``within noise`` (p >= 0.05)."""
    flipped: list[dict[str, Any]]
    """Problems whose majority went from right to wrong or back, with both runs' details."""
    expected_spread: dict[str, dict[str, float] | None]
    """Per run: ``observed`` problems solved by the majority, the ``mean`` and the 95% range
    (``low``, ``high``) of that number from sampling alone; None for a run with one sample per
    problem (resampling one sample shows no spread: it is not measured, not zero)."""
    differences: dict[str, dict[str, float | None]]
    """What else differs, per run: mean samples per problem, truncated and unanswered rates,
    mean response length (characters), mean answer entropy (bits)."""
    problems: list[dict[str, Any]]
    """Per shared problem: both runs' samples, pass@1, majority answer, margin, score."""
    notes: list[str] = Field(default_factory=list)
    """Why a value is missing or what it reduces to (not part of ``to_json``)."""

    def to_json(self) -> dict[str, Any]:
        """The object of ``misstep compare --format json``."""
        return self.model_dump(mode="json", exclude={"notes"})


def _class_matrix(graded: pd.DataFrame, keys: list[str]) -> tuple[IntArray, list[str]]:
    """Per problem key, counts per answer class (columns shared by both runs), no-answer last."""
    classes = sorted(graded["answer_class"].dropna().astype(str).unique().tolist())
    index = {c: i for i, c in enumerate(classes)}
    position = {k: i for i, k in enumerate(keys)}
    counts = np.zeros((len(keys), len(classes) + 1), dtype=np.int64)
    key = graded["dataset"].astype(str) + "/" + graded["problem_id"].astype(str)
    cls = graded["answer_class"]
    for k, c in zip(key, cls, strict=True):
        row = position.get(k)
        if row is None:
            continue
        column = len(classes) if pd.isna(c) else index[str(c)]
        counts[row, column] += 1
    return counts, classes


def _scores(counts: np.ndarray, good: np.ndarray, metric: str) -> np.ndarray:
    """Per row of class counts (..., C+1; last: no answer): the metric's score."""
    answered = counts[..., :-1]
    n = counts.sum(axis=-1)
    if metric == "pass@1":
        return np.where(n > 0, (answered * good).sum(axis=-1) / np.maximum(n, 1), 0.0)
    top = answered.max(axis=-1, keepdims=True)
    is_top = (answered == top) & (top > 0)
    n_top = is_top.sum(axis=-1)
    hits = (is_top & good).sum(axis=-1)
    return np.where(n_top > 0, hits / np.maximum(n_top, 1), 0.0)


def _own_classes(row: np.ndarray, good: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One problem's counts and correctness restricted to the classes it has (plus the
    no-answer bucket, last): the class columns are shared by every problem of both runs, so
    most are 0 for any one problem, and resampling them costs time for nothing."""
    cols = np.flatnonzero(row[:-1])
    if cols.size == 0:  # no sample answered: one empty class keeps the arrays' shape
        return np.array([0, row[-1]], dtype=row.dtype), np.zeros(1, dtype=bool)
    return np.append(row[cols], row[-1]), good[cols]


def _poisson_binomial(p: np.ndarray) -> np.ndarray:
    dist = np.zeros(len(p) + 1)
    dist[0] = 1.0
    for q in p:
        dist[1:] = dist[1:] * (1 - q) + dist[:-1] * q
        dist[0] *= 1 - q
    return dist


def _spread(
    counts: np.ndarray, good: np.ndarray, rng: np.random.Generator, n_resample: int
) -> dict[str, float] | None:
    if not k_fits(2, int(counts.sum(axis=1).max(initial=0))):
        return None  # one sample per problem: a resample of it is itself, no spread to see
    probs = []
    for full_row, full_right in zip(counts, good, strict=True):
        n = int(full_row.sum())
        if n == 0:
            probs.append(0.0)
            continue
        row, right = _own_classes(full_row, full_right)
        draws = rng.multinomial(n, row / n, size=n_resample)
        probs.append(float(_scores(draws, right, "maj").mean()))
    dist = _poisson_binomial(np.asarray(probs))
    cdf = np.cumsum(dist)
    return {
        "observed": float(_scores(counts, good, "maj").sum()),
        "mean": float(np.sum(np.arange(len(dist)) * dist)),
        "low": float(np.searchsorted(cdf, 0.025)),
        "high": float(np.searchsorted(cdf, 0.975)),
    }


def _others(graded: pd.DataFrame, keys: set[str]) -> dict[str, float | None]:
    key = graded["dataset"].astype(str) + "/" + graded["problem_id"].astype(str)
    part = graded[key.isin(keys)]
    outcome = part["outcome"].astype(str)
    out: dict[str, float | None] = {
        "samples_per_problem": float(len(part) / max(len(keys), 1)),
        "truncated_rate": float((outcome == "truncated").mean()),
        "unanswered_rate": float((outcome == "no_answer").mean()),
    }
    if "response_chars" in part.columns:
        out["response_chars"] = float(part["response_chars"].mean())
    from misstep.metrics._votes import problem_stats

    stats = problem_stats(part)
    entropy = agreement_means(stats, stats["n_answered"].to_numpy(np.int64))[0]["entropy"]
    out["answer_entropy_bits"] = entropy  # None: n/a (no problem with two answered samples)
    return out


def _permutation_p(
    ca: np.ndarray,
    cb: np.ndarray,
    good: np.ndarray,
    metric: str,
    n_perm: int,
    rng: np.random.Generator,
    observed: float,
) -> float:
    """Two-sided permutation p-value of the mean per-problem difference: each problem's pooled
    samples are dealt again to the two runs (as many to a as it had), over its own classes."""
    null = np.zeros(n_perm)
    pooled = ca + cb
    n_a = ca.sum(axis=1)
    for i in range(len(pooled)):
        own, own_good = _own_classes(pooled[i], good[i])
        draws = rng.multivariate_hypergeometric(own, int(n_a[i]), size=n_perm)
        null += _scores(own - draws, own_good, metric) - _scores(draws, own_good, metric)
    null /= len(pooled)
    return float((1 + int((np.abs(null) >= abs(observed) - 1e-12).sum())) / (1 + n_perm))


def _majority(row: np.ndarray, classes: list[str]) -> tuple[str | None, int]:
    """A problem's majority class (ties: the first class) and its margin over the runner-up;
    the row's last column counts samples without an answer, which never vote."""
    answered = row[:-1]
    if answered.sum() == 0:
        return None, 0
    order = np.argsort(-answered, kind="stable")
    top = int(answered[order[0]])
    second = int(answered[order[1]]) if len(order) > 1 else 0
    return classes[int(order[0])], top - second


def compare_runs(
    a: pd.DataFrame,
    b: pd.DataFrame,
    *,
    metric: str = "maj",
    n_perm: int = 2000,
    n_resample: int = 500,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Compare two graded tables (one checkpoint each, datasets pooled) on their shared
    problems (module docstring). Answer classes are matched by their canonical keys."""
    if metric not in COMPARE_METRICS:
        raise OptionError(option="metric", value=metric, allowed=" or ".join(COMPARE_METRICS))
    key_a = set((a["dataset"].astype(str) + "/" + a["problem_id"].astype(str)).tolist())
    key_b = set((b["dataset"].astype(str) + "/" + b["problem_id"].astype(str)).tolist())
    keys = sorted(key_a & key_b)
    if not keys:
        raise AnalysisError(
            "the two runs share no problem (dataset and problem_id)",
            hint="compare evaluations of the same benchmark",
        )
    both = pd.concat([a, b], ignore_index=True)
    # one class index for both runs: the union's classes, then each run's counts
    union_counts, classes = _class_matrix(both, keys)
    index = {c: i for i, c in enumerate(classes)}

    def counts_of(frame: pd.DataFrame) -> np.ndarray:
        out = np.zeros_like(union_counts)
        key = frame["dataset"].astype(str) + "/" + frame["problem_id"].astype(str)
        position = {k: i for i, k in enumerate(keys)}
        for k, c in zip(key, frame["answer_class"], strict=True):
            row = position.get(k)
            if row is None:
                continue
            out[row, len(classes) if pd.isna(c) else index[str(c)]] += 1
        return out

    ca, cb = counts_of(a), counts_of(b)
    # A class is right for its own problem only: the same key (say "7") can be right for one
    # problem and wrong for another.
    good = np.zeros((len(keys), len(classes)), dtype=bool)
    position = {k: i for i, k in enumerate(keys)}
    right = both[both["correct"].astype(bool) & both["answer_class"].notna()]
    right_keys = right["dataset"].astype(str) + "/" + right["problem_id"].astype(str)
    for k, c in zip(right_keys, right["answer_class"].astype(str), strict=True):
        if k in position:
            good[position[k], index[c]] = True
    sa, sb = _scores(ca, good, metric), _scores(cb, good, metric)
    diff = sb - sa
    rng = np.random.default_rng([seed, zlib.crc32(metric.encode())])
    ci = mean_ci(diff, 1000, rng)
    observed = float(diff.mean())
    p_value = _permutation_p(ca, cb, good, metric, n_perm, rng, observed)
    verdict = "within noise" if p_value >= 0.05 else ("b better" if observed > 0 else "a better")

    answers = both.dropna(subset=["answer_class"]).drop_duplicates("answer_class")
    shown = dict(zip(answers["answer_class"].astype(str), answers["answer"], strict=True))
    problems, flipped = [], []
    for i, k in enumerate(keys):
        ma, margin_a = _majority(ca[i], classes)
        mb, margin_b = _majority(cb[i], classes)
        record = {
            "problem": k,
            "a": {
                "samples": int(ca[i].sum()),
                "pass@1": float(_scores(ca[i], good[i], "pass@1")),
                "majority": None if ma is None else str(shown.get(ma, ma)),
                "margin": margin_a,
                "score": float(sa[i]),
            },
            "b": {
                "samples": int(cb[i].sum()),
                "pass@1": float(_scores(cb[i], good[i], "pass@1")),
                "majority": None if mb is None else str(shown.get(mb, mb)),
                "margin": margin_b,
                "score": float(sb[i]),
            },
        }
        problems.append(record)
        right_a = _scores(ca[i], good[i], "maj") == 1.0
        right_b = _scores(cb[i], good[i], "maj") == 1.0
        if right_a != right_b:
            flipped.append({**record, "change": "right -> wrong" if right_a else "wrong -> right"})
    spread_rng = np.random.default_rng([seed, 7])
    spread = {
        "a": _spread(ca, good, spread_rng, n_resample),
        "b": _spread(cb, good, spread_rng, n_resample),
    }
    notes = []
    if None in spread.values():
        notes.append(
            "with one sample per problem the majority is that sample (maj = pass@1), and "
            "resampling it shows no spread: the expected range is n/a"
        )
    return Comparison(
        metric=metric,
        n_shared=len(keys),
        a=float(sa.mean()),
        b=float(sb.mean()),
        delta=observed,
        delta_ci=ci,
        p_value=p_value,
        verdict=verdict,
        flipped=flipped,
        expected_spread=spread,
        differences={"a": _others(a, set(keys)), "b": _others(b, set(keys))},
        problems=problems,
        notes=notes,
    )
