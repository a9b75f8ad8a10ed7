"""Per-checkpoint error-type distributions of wrong traces: the one definition that
``summary``, ``link`` and the report use.

``error_distributions`` composes the estimators (``_shares``: one protocol, ``ShareEstimator``)
over the run's groups and shows what they return; every ``ErrorDistribution`` keeps the
estimates (``judge_estimate``, ``corrected_estimate``: shares, covariance, replicates) that
``misstep.link`` tests shifts with.

A group (checkpoint x dataset, or a checkpoint with its datasets pooled) has ``n_wrong`` wrong
traces; ``n_labelled`` of them have a current ``ok`` label with a type. The judge's
distribution (``JudgeOnly``, ``_judge_only``) is the share of each type among those
(``error_dist``); a group with no ``ok`` label has no distribution (None: "no labels", never
0%). A checkpoint that pools its datasets is a stratified sample (the labelled traces of each
dataset a random sample of its wrong traces, as ``misstep label --per-checkpoint`` draws
them): its shares are the stratified estimate, each dataset weighing by its number of wrong
traces, with a bootstrap within each dataset (the same as the plain shares when every dataset
is labelled at the same rate).

With people's labels (the human consensus of ``misstep.labels``) the distribution is corrected
by one of two estimators (``AnalysisConfig.estimator``; ``judge``: none):

- ``ppi`` (default, ``PPI``): prediction-powered inference (PPI++, ``_ppi``) per group, from the
  group's own human labels with their sampling weights; valid whatever the judge's confusion
  does between checkpoints. A group with fewer than ``MIN_PPI_HUMAN`` human labels has no
  corrected share (``note`` says so).
- ``pooled`` (``Pooled``): one confusion matrix over every human-labelled trace, inverted at
  every group (``_correction``). It assumes the judge errs the same way at every checkpoint; that
  assumption is tested on the human labels (``_homogeneity``, ``homogeneity``). A type the
  confusion does not identify has no corrected share (None), listed in ``not_identified``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field, PrivateAttr

from misstep.agreement._config import AnalysisConfig, Estimator
from misstep.agreement._confusion import confusion_counts
from misstep.agreement._estimators import correction_for
from misstep.agreement._homogeneity import Homogeneity, confusion_homogeneity
from misstep.agreement._judge_only import JudgeOnly
from misstep.agreement._shares import Group, NoEstimate, ShareEstimate, ShareInputs
from misstep.labels import HumanLabel, LabelRow, LabelStatus, StoredLabel, human_consensus

__all__ = [
    "ALL_DATASETS",
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
    _judge: ShareEstimate | None = PrivateAttr(default=None)
    _corrected: ShareEstimate | None = PrivateAttr(default=None)

    def set_estimates(
        self, *, judge: ShareEstimate | None = None, corrected: ShareEstimate | None = None
    ) -> None:
        """Keep the estimates the fields were filled from (not shown, not stored)."""
        if judge is not None:
            self._judge = judge
        if corrected is not None:
            self._corrected = corrected

    @property
    def judge_estimate(self) -> ShareEstimate | None:
        """``JudgeOnly``'s estimate (shares, covariance, replicates); None: no labels."""
        return self._judge

    @property
    def corrected_estimate(self) -> ShareEstimate | None:
        """The correction's estimate; None: no corrected shares."""
        return self._corrected

    @property
    def estimate(self) -> ShareEstimate | None:
        """The estimate an analysis uses (``used``): corrected when there is one."""
        return self._corrected if self._corrected is not None else self._judge

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


def _inputs(
    labels: Mapping[str, StoredLabel | LabelRow],
    categories: Sequence[str],
    human: Sequence[HumanLabel] | None,
) -> ShareInputs:
    cats = list(categories)
    agreed = human_consensus(human) if human else None
    judged = ok_types(labels)
    people = dict(agreed.items()) if agreed is not None else {}
    extra = sorted(
        {k for k in judged.values() if k not in cats} | {k for k, _ in people.values()} - set(cats)
    )
    return ShareInputs(
        categories=cats + extra, judged=judged, people=people, has_human=agreed is not None
    )


def _corrected(base: ErrorDistribution, est: ShareEstimate) -> None:
    """Fill the corrected fields of ``base`` from a correction's estimate, in place."""
    cats = est.categories
    base.n_human = est.n
    base.error_dist_corrected = est.as_dict()
    base.error_dist_ci = est.ci_dict()
    base.not_identified = list(est.not_identified)
    base.error_dist_se = {c: float(v) for c, v in zip(cats, est.se, strict=True) if np.isfinite(v)}
    base.error_dist_cov = est.cov.tolist()
    if est.sim_ci is not None:
        base.error_dist_sim_ci = dict(zip(cats, est.sim_ci, strict=True))
    base.set_estimates(corrected=est)


def _group(
    checkpoint: str, dataset: str, rows: pd.DataFrame, judged: Mapping[str, str]
) -> Group | None:
    """The judged wrong traces of one group as the estimators read them (None: none)."""
    ids = rows["trace_id"].tolist()
    of = dict(zip(ids, rows["stratum"].tolist(), strict=True))
    cluster_of = dict(zip(ids, rows["cluster"].tolist(), strict=True))
    mine = [t for t in ids if t in judged]
    if not mine:
        return None
    return Group(
        checkpoint=checkpoint,
        dataset=dataset,
        trace_ids=mine,
        types=[judged[t] for t in mine],
        # a pooled checkpoint is a stratified sample of its datasets (labelled at different
        # rates with --per-checkpoint, or after failures): each dataset weighs by its size
        strata=[of[t] for t in mine],
        sizes=dict(Counter(of.values())),
        # the samples of one problem err alike: every variance resamples problems
        clusters=[cluster_of[t] for t in mine],
    )


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
    first appearance: the judge's type shares among wrong traces with an ``ok`` label
    (``JudgeOnly``), and with ``human`` the corrected shares by ``config.estimator``
    (``PPI``: each group from its own human labels; ``Pooled``: one confusion over all,
    inverted; ``judge``: none), with the resamples, seed and level of ``config``
    (``AnalysisConfig``, its defaults when None). With ``pool_datasets`` the groups are
    checkpoints, with dataset ``"all"``. ``config.simultaneous`` adds intervals that hold for
    every type of a group at once (``error_dist_sim_ci``)."""
    config = config or AnalysisConfig()
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
    judge = JudgeOnly(inputs.categories, config)
    correction = correction_for(config.estimator, inputs, config, judge)
    homogeneity = None
    if correction is not None and correction.name is Estimator.POOLED:
        homogeneity = _homogeneity(graded, inputs)
    out: list[ErrorDistribution] = []
    for (checkpoint, dataset), rows in wrong.groupby(["checkpoint", "dataset"], sort=False):
        ids = rows["trace_id"].tolist()
        status = Counter(str(labels[t].status) if t in labels else "unlabelled" for t in ids)
        group = _group(str(checkpoint), str(dataset), rows, inputs.judged)
        n_labelled = 0 if group is None else len(group.trace_ids)
        base = ErrorDistribution(
            checkpoint=str(checkpoint),
            dataset=str(dataset),
            n_wrong=len(ids),
            n_labelled=n_labelled,
            labelled_share=n_labelled / len(ids) if ids else None,
            status_counts=dict(status),
            n_human=len(inputs.pairs),
        )
        out.append(base)
        if group is None:
            continue
        raw = judge.estimate(group)
        base.error_dist = dict(zip(inputs.categories, raw.shares.tolist(), strict=True))
        base.error_dist_raw_ci = raw.ci_dict()
        base.set_estimates(judge=raw)
        if correction is None:
            continue
        base.estimator = correction.name
        base.homogeneity = homogeneity
        result = correction.estimate(group)
        if isinstance(result, NoEstimate):
            base.n_human = result.n
            base.note = result.reason
        else:
            _corrected(base, result)
    return out


def _homogeneity(graded: pd.DataFrame, inputs: ShareInputs) -> Homogeneity:
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
