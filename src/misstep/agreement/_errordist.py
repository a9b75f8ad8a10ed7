"""Per-checkpoint error-type distributions of wrong traces: the one definition that
``summary``, ``link`` and the report use.

A group (checkpoint x dataset, or a checkpoint with its datasets pooled) has ``n_wrong`` wrong
traces; ``n_labelled`` of them have a current ``ok`` label with a type. The judge's
distribution is the share of each type among those (``error_dist``); a group with no ``ok``
label has no distribution (None: "no labels", never 0%). A checkpoint that pools its datasets
is a stratified sample (the labelled traces of each dataset a random sample of its wrong
traces, as ``misstep label --per-checkpoint`` draws them): its shares are the stratified
estimate, each dataset weighing by its number of wrong traces, with a bootstrap within each
dataset (the same as the plain shares when every dataset is labelled at the same rate).

With people's labels (the human consensus of ``misstep.labels``) the distribution is corrected
by one of two estimators (``estimator``):

- ``ppi`` (default): prediction-powered inference (PPI++, ``_ppi``) per group, from the
  group's own human labels with their sampling weights; valid whatever the judge's confusion
  does between checkpoints. A group with fewer than ``MIN_PPI_HUMAN`` human labels has no
  corrected share (``note`` says so).
- ``pooled``: one confusion matrix over every human-labelled trace, inverted at every group
  (``_correction``). It assumes the judge errs the same way at every checkpoint; that
  assumption is tested on the human labels (``_homogeneity``, ``homogeneity``). A type the
  confusion does not identify has no corrected share (None), listed in ``not_identified``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from misstep.agreement._config import AnalysisConfig, Estimator
from misstep.agreement._confusion import confusion_counts
from misstep.agreement._correction import CorrectedDistribution, correct_distribution
from misstep.agreement._homogeneity import Homogeneity, confusion_homogeneity
from misstep.agreement._ppi import ppi_shares, simultaneous_z
from misstep.labels import HumanLabel, LabelRow, LabelStatus, StoredLabel, human_consensus
from misstep.metrics import stratify

__all__ = [
    "ALL_DATASETS",
    "MIN_PPI_HUMAN",
    "ErrorDistribution",
    "error_distributions",
    "ok_types",
    "plot_confusion",
]

ALL_DATASETS = "all"
"""Dataset name of a group that pools a checkpoint's datasets."""


class ErrorDistribution(BaseModel):
    """One (checkpoint, dataset) group's error types among its wrong traces."""

    checkpoint: str
    """Checkpoint."""
    dataset: str
    """Dataset (``"all"`` when pooled)."""
    n_wrong: int
    """Wrong traces in the group (count)."""
    n_labelled: int = 0
    """Wrong traces with a current ``ok`` label (count)."""
    labelled_share: float | None = None
    """``n_labelled / n_wrong`` (share); None without wrong traces."""
    status_counts: dict[str, int] = Field(default_factory=dict)
    """Current label status of the wrong traces (``unlabelled`` for none)."""
    error_dist: dict[str, float] | None = None
    """Share per type among ``ok`` labels, as the judge gives it; None: no labels."""
    error_dist_raw_ci: dict[str, tuple[float, float] | None] | None = None
    """Bootstrap 95% interval of ``error_dist``: problems resampled within each dataset."""
    error_dist_corrected: dict[str, float | None] | None = None
    """Share per type corrected for the judge's confusion (None without human labels; a type
    that is not identified maps to None)."""
    error_dist_ci: dict[str, tuple[float, float] | None] | None = None
    """Bootstrap 95% interval of the corrected share (confusion uncertainty included)."""
    not_identified: list[str] = Field(default_factory=list)
    """Types without a corrected share: the confusion matrix does not identify them."""
    n_human: int = 0
    """Human-labelled traces behind the corrected shares: this group's own (``ppi``), or
    every one with a judge type (``pooled``: the confusion is pooled over all groups)."""
    estimator: Estimator = Estimator.JUDGE
    """What made ``error_dist_corrected``: ``ppi``, ``pooled`` (see ``ESTIMATORS``), or
    ``judge`` when there is no correction."""
    error_dist_se: dict[str, float] | None = None
    """Standard error of each corrected share."""
    error_dist_sim_ci: dict[str, tuple[float, float] | None] | None = None
    """Simultaneous 95% intervals over the types (on request): ``ppi`` the Gaussian max-|z|
    band of its covariance, ``pooled`` Bonferroni over its bootstrap."""
    error_dist_cov: list[list[float]] | None = Field(default=None, exclude=True)
    """Covariance of the corrected shares, types in the run's order (``ppi``: analytic;
    ``pooled``: bootstrap); the shift tests use it; not shown."""
    homogeneity: Homogeneity | None = None
    """``pooled``: the test of its assumption (one confusion at every checkpoint)."""
    note: str | None = None
    """Why a group has no corrected shares though people labelled traces."""

    @property
    def source(self) -> str:
        """``corrected`` when corrected shares exist, else ``judge``."""
        return "corrected" if self.error_dist_corrected is not None else "judge"

    @property
    def made_by(self) -> str:
        """Which estimator made the shown shares and from how many human labels, in words."""
        if self.error_dist_corrected is None:
            return "judge (uncorrected)"
        return f"{self.estimator} ({self.n_human})"

    @property
    def used(self) -> dict[str, float | None] | None:
        """The distribution an analysis should use: corrected when there is one."""
        if self.error_dist_corrected is not None:
            return self.error_dist_corrected
        return dict(self.error_dist) if self.error_dist is not None else None


def ok_types(labels: Mapping[str, StoredLabel | LabelRow]) -> dict[str, str]:
    """{trace_id: error_type} of the current ``ok`` labels with a type."""
    return {
        t: str(lab.error_type)
        for t, lab in labels.items()
        if lab.status == LabelStatus.OK and lab.error_type is not None
    }


MIN_PPI_HUMAN = 10
"""Fewest human-labelled traces a group needs for a ``ppi`` share (its interval is a normal
approximation); fewer: no corrected share, and a note says to label more or use ``pooled``."""


@dataclass
class _Inputs:
    """What every group shares: the categories, judge types, people's consensus."""

    cats: list[str]
    judged: dict[str, str]
    people: dict[str, tuple[str, float]]
    pairs: list[tuple[str, str]]
    weights: list[float]
    has_human: bool


def _inputs(
    labels: Mapping[str, StoredLabel | LabelRow],
    categories: Sequence[str],
    human: Sequence[HumanLabel] | None,
) -> _Inputs:
    cats = list(categories)
    agreed = human_consensus(human) if human else None
    judged = ok_types(labels)
    people = dict(agreed.items()) if agreed is not None else {}
    extra = sorted(
        {k for k in judged.values() if k not in cats} | {k for k, _ in people.values()} - set(cats)
    )
    cats += extra
    shared = sorted(set(people) & set(judged))
    return _Inputs(
        cats=cats,
        judged=judged,
        people=people,
        pairs=[(people[t][0], judged[t]) for t in shared],
        weights=[people[t][1] for t in shared],
        has_human=agreed is not None,
    )


def _ppi_group(
    base: ErrorDistribution,
    group: pd.DataFrame,
    inputs: _Inputs,
    *,
    level: float,
    simultaneous: bool,
) -> None:
    """The group's PPI++ shares from its own human labels, in place (``base.note`` says why
    not when it has too few). Judged traces weigh by their stratum's wrong / judged (a label
    budget), human-labelled ones by their sampling weight; problems are the clusters."""
    ids = [t for t in group["trace_id"].tolist() if t in inputs.judged]
    strata = dict(zip(group["trace_id"], group["stratum"], strict=True))
    problems = dict(zip(group["trace_id"], group["cluster"], strict=True))
    human_ids = [t for t in ids if t in inputs.people]
    base.n_human = len(human_ids)
    if len(human_ids) < MIN_PPI_HUMAN:
        base.note = (
            f"{len(human_ids)} human-labelled trace(s) here, ppi needs {MIN_PPI_HUMAN}: label "
            "more (misstep plan) or use --estimator pooled"
        )
        return
    cats = inputs.cats
    index = {c: i for i, c in enumerate(cats)}
    eye = np.eye(len(cats))
    design = stratify([strata[t] for t in ids], Counter(strata.values()))
    f_all = eye[[index[inputs.judged[t]] for t in ids]]
    w_all = design.weights
    _, clusters = np.unique([problems[t] for t in ids], return_inverse=True)
    row = {t: i for i, t in enumerate(ids)}
    est = ppi_shares(
        eye[[index[inputs.people[t][0]] for t in human_ids]],
        eye[[index[inputs.judged[t]] for t in human_ids]],
        f_all,
        labelled_index=np.array([row[t] for t in human_ids], dtype=np.int64),
        w_labelled=np.array([inputs.people[t][1] for t in human_ids]),
        w_judged=w_all,
        clusters=clusters.astype(np.int64),
    )
    ci = est.intervals(level)
    base.error_dist_corrected = {
        c: float(min(max(v, 0.0), 1.0)) for c, v in zip(cats, est.estimate, strict=True)
    }
    base.error_dist_ci = {c: (float(lo), float(hi)) for c, (lo, hi) in zip(cats, ci, strict=True)}
    base.error_dist_se = {c: float(v) for c, v in zip(cats, est.se, strict=True)}
    base.error_dist_cov = est.cov.tolist()
    if simultaneous:
        z = simultaneous_z(est.cov, level)
        sim = est.intervals(level, z=z)
        base.error_dist_sim_ci = {
            c: (float(lo), float(hi)) for c, (lo, hi) in zip(cats, sim, strict=True)
        }


def _pooled_group(
    base: ErrorDistribution,
    result: CorrectedDistribution,
    level: float,
    simultaneous: bool,
) -> None:
    """The pooled inversion's shares, in place; Bonferroni simultaneous intervals from its
    bootstrap when asked for."""
    base.error_dist_corrected = result.corrected
    base.error_dist_ci = result.corrected_ci
    base.not_identified = result.not_identified
    base.error_dist_se = {c: v for c, v in result.corrected_se.items() if v is not None}
    base.error_dist_cov = result.corrected_cov
    if simultaneous:
        base.error_dist_sim_ci = result.simultaneous_ci


def error_distributions(
    graded: pd.DataFrame,
    labels: Mapping[str, StoredLabel | LabelRow],
    categories: Sequence[str],
    *,
    human: Sequence[HumanLabel] | None = None,
    config: AnalysisConfig | None = None,
    pool_datasets: bool = False,
) -> list[ErrorDistribution]:
    """Per (checkpoint, dataset) of ``graded`` (``GRADED_COLUMNS``), in the table's order of
    first appearance: the judge's type shares among wrong traces with an ``ok`` label, and with
    ``human`` the corrected shares by ``estimator`` (``ppi``: each group from its own human
    labels; ``pooled``: one confusion over all, inverted; ``judge``: none), with the
    resamples, seed and level of ``config`` (``AnalysisConfig``, its defaults when None).
    With ``pool_datasets`` the groups are checkpoints, with dataset ``"all"``.
    ``config.simultaneous`` adds intervals that hold for every type of a group at once
    (``error_dist_sim_ci``)."""
    config = config or AnalysisConfig()
    estimator, level, simultaneous = config.estimator, config.level, config.simultaneous
    cols = ["trace_id", "checkpoint", "dataset", "problem_id"]
    wrong = graded.loc[graded["outcome"] == "wrong", [c for c in cols if c in graded.columns]]
    problem = wrong["problem_id"] if "problem_id" in wrong.columns else wrong["trace_id"]
    wrong = wrong.assign(
        stratum=wrong["dataset"].astype(str),
        cluster=wrong["dataset"].astype(str) + "\x1f" + problem.astype(str),
    )
    if pool_datasets:
        wrong = wrong.assign(dataset=ALL_DATASETS)
    inputs = _inputs(labels, categories, human)
    judged = inputs.judged
    pooled = estimator is Estimator.POOLED
    homogeneity = _homogeneity(graded, inputs) if inputs.pairs and pooled else None
    out: list[ErrorDistribution] = []
    for (checkpoint, dataset), group in wrong.groupby(["checkpoint", "dataset"], sort=False):
        ids = group["trace_id"].tolist()
        of = dict(zip(ids, group["stratum"].tolist(), strict=True))
        status = Counter(str(labels[t].status) if t in labels else "unlabelled" for t in ids)
        types = [judged[t] for t in ids if t in judged]
        base = ErrorDistribution(
            checkpoint=str(checkpoint),
            dataset=str(dataset),
            n_wrong=len(ids),
            n_labelled=len(types),
            labelled_share=len(types) / len(ids) if ids else None,
            status_counts=dict(status),
            n_human=len(inputs.pairs),
        )
        out.append(base)
        if not types:
            continue
        # A pooled checkpoint is a stratified sample of its datasets (labelled at different
        # rates with --per-checkpoint, or after failures): each dataset weighs by its size.
        strata = [of[t] for t in ids if t in judged] if pool_datasets else None
        sizes = dict(Counter(of.values())) if pool_datasets else None
        # the samples of one problem err alike: the interval resamples problems
        cluster_of = dict(zip(ids, group["cluster"].tolist(), strict=True))
        clusters = [cluster_of[t] for t in ids if t in judged]
        result = correct_distribution(
            types,
            inputs.pairs if estimator is Estimator.POOLED else [],
            inputs.cats,
            weights=inputs.weights,
            group=f"{checkpoint}/{dataset}",
            n_boot=config.n_boot,
            seed=config.seed,
            level=level,
            strata=strata,
            stratum_sizes=sizes,
            clusters=clusters,
        )
        base.error_dist = result.raw
        base.error_dist_raw_ci = result.raw_ci
        if not (inputs.has_human and inputs.pairs) or estimator is Estimator.JUDGE:
            continue
        base.estimator = estimator
        if estimator is Estimator.PPI:
            _ppi_group(base, group, inputs, level=level, simultaneous=simultaneous)
        else:
            base.homogeneity = homogeneity
            _pooled_group(base, result, level, simultaneous)
    return out


def _homogeneity(graded: pd.DataFrame, inputs: _Inputs) -> Homogeneity:
    """The pooled inversion's assumption tested on the human-labelled wrong traces."""
    ck = dict(zip(graded["trace_id"].astype(str), graded["checkpoint"].astype(str), strict=True))
    shared = [t for t in sorted(set(inputs.people) & set(inputs.judged)) if t in ck]
    return confusion_homogeneity(
        [ck[t] for t in shared],
        [inputs.people[t][0] for t in shared],
        [inputs.judged[t] for t in shared],
    )


def plot_confusion(
    labels: Mapping[str, StoredLabel | LabelRow],
    human: Sequence[HumanLabel],
    categories: Sequence[str],
    path: str | Path,
) -> Path:
    """A PNG of the row-normalised confusion matrix (rows: human consensus, columns: judge)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agreed = dict(human_consensus(human).items())
    cats = list(categories)
    shared = [
        t
        for t in sorted(agreed)
        if t in labels
        and labels[t].status == LabelStatus.OK
        and labels[t].error_type in cats
        and agreed[t][0] in cats
    ]
    counts = confusion_counts(
        [agreed[t][0] for t in shared], [str(labels[t].error_type) for t in shared], cats
    )
    sums = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, sums, out=np.zeros_like(counts), where=sums > 0)
    plt.rcParams["text.parse_math"] = False  # category names are data, never mathtext
    fig, ax = plt.subplots(figsize=(1.2 * len(cats) + 2, 1.0 * len(cats) + 1.5))
    ax.imshow(shares, vmin=0.0, vmax=1.0, cmap="Blues")
    ax.set_xticks(range(len(cats)), cats, rotation=30, ha="right")
    ax.set_yticks(range(len(cats)), cats)
    ax.set_xlabel("judge")
    ax.set_ylabel("people (consensus)")
    ax.set_title(f"P(judge | people), {len(shared)} traces")
    for i in range(len(cats)):
        for j in range(len(cats)):
            ax.text(
                j,
                i,
                f"{shares[i, j]:.2f}\n({int(counts[i, j])})",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if shares[i, j] > 0.5 else "black",
            )
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
