"""Per-checkpoint error-type distributions of wrong traces: the one definition that
``summary``, ``link`` and the report use.

A group (checkpoint x dataset, or a checkpoint with its datasets pooled) has ``n_wrong`` wrong
traces; ``n_labelled`` of them have a current ``ok`` label with a type. The judge's
distribution is the share of each type among those (``error_dist``); a group with no ``ok``
label has no distribution (None: "no labels", never 0%). A checkpoint that pools its datasets
is a stratified sample (the labelled traces of each dataset a random sample of its wrong
traces, as ``misstep label --per-checkpoint`` draws them): its shares are the stratified
estimate, each dataset weighing by its number of wrong traces, with a bootstrap within each
dataset (the same as the plain shares when every dataset is labelled at the same rate). With
people's labels the distribution is corrected for the judge's confusion (``_correction``),
pooled over every human-labelled trace the judge typed (the human consensus of
``misstep.labels``); a type the confusion does not identify has no corrected share (None) and
is listed in ``not_identified``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from misstep.agreement._confusion import confusion_counts
from misstep.agreement._correction import correct_distribution
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
    """Bootstrap 95% interval of ``error_dist``."""
    error_dist_corrected: dict[str, float | None] | None = None
    """Share per type corrected for the judge's confusion (None without human labels; a type
    that is not identified maps to None)."""
    error_dist_ci: dict[str, tuple[float, float] | None] | None = None
    """Bootstrap 95% interval of the corrected share (confusion uncertainty included)."""
    not_identified: list[str] = Field(default_factory=list)
    """Types without a corrected share: the confusion matrix does not identify them."""
    n_human: int = 0
    """Human-labelled traces with a consensus type behind the (pooled) confusion matrix."""

    @property
    def source(self) -> str:
        """``corrected`` when corrected shares exist, else ``judge``."""
        return "corrected" if self.error_dist_corrected is not None else "judge"

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


def error_distributions(
    graded: pd.DataFrame,
    labels: Mapping[str, StoredLabel | LabelRow],
    categories: Sequence[str],
    *,
    human: Sequence[HumanLabel] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    pool_datasets: bool = False,
) -> list[ErrorDistribution]:
    """Per (checkpoint, dataset) of ``graded`` (``GRADED_COLUMNS``), in the table's order of
    first appearance: the judge's type shares among wrong traces with an ``ok`` label, and with
    ``human`` the corrected shares. With ``pool_datasets`` the groups are checkpoints, with
    dataset ``"all"``."""
    cats = list(categories)
    wrong = graded.loc[graded["outcome"] == "wrong", ["trace_id", "checkpoint", "dataset"]]
    wrong = wrong.assign(stratum=wrong["dataset"].astype(str))
    if pool_datasets:
        wrong = wrong.assign(dataset=ALL_DATASETS)
    agreed = human_consensus(human) if human else None
    judged = ok_types(labels)
    people = dict(agreed.items()) if agreed is not None else {}
    extra = sorted(
        {k for k in judged.values() if k not in cats} | {k for k, _ in people.values()} - set(cats)
    )
    cats += extra
    shared = sorted(set(people) & set(judged))
    pairs = [(people[t][0], judged[t]) for t in shared]
    weights = [people[t][1] for t in shared]
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
            n_human=len(pairs),
        )
        if not types:
            out.append(base)
            continue
        # A pooled checkpoint is a stratified sample of its datasets (labelled at different
        # rates with --per-checkpoint, or after failures): each dataset weighs by its size.
        strata = [of[t] for t in ids if t in judged] if pool_datasets else None
        sizes = dict(Counter(of.values())) if pool_datasets else None
        result = correct_distribution(
            types,
            pairs if agreed is not None else [],
            cats,
            weights=weights,
            group=f"{checkpoint}/{dataset}",
            n_boot=n_boot,
            seed=seed,
            strata=strata,
            stratum_sizes=sizes,
        )
        base.error_dist = result.raw
        base.error_dist_raw_ci = result.raw_ci
        if agreed is not None and pairs:
            base.error_dist_corrected = result.corrected
            base.error_dist_ci = result.corrected_ci
            base.not_identified = result.not_identified
        out.append(base)
    return out


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
