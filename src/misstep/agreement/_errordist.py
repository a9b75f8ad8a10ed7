"""Per-checkpoint error-type distributions of wrong traces, for ``misstep summary``: as the
judge gives them and, with human labels, corrected for the judge's confusion (see
``_correction``). Only ``ok`` labels count; the other statuses are counted apart."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from misstep.agreement._confusion import confusion_counts, consensus
from misstep.agreement._correction import correct_distribution
from misstep.labels import HumanLabel, LabelStatus, StoredLabel

__all__ = ["ErrorDistribution", "error_distributions", "human_consensus", "plot_confusion"]


class ErrorDistribution(BaseModel):
    """One (checkpoint, dataset) group's error types among its wrong traces."""

    checkpoint: str
    """Checkpoint."""
    dataset: str
    """Dataset."""
    n_wrong: int
    """Wrong traces in the group."""
    status_counts: dict[str, int] = Field(default_factory=dict)
    """Current label status of the wrong traces (``unlabelled`` for none)."""
    error_dist: dict[str, float]
    """Share per type among ``ok`` labels, as the judge gives it (uncorrected)."""
    error_dist_raw_ci: dict[str, tuple[float, float] | None]
    """Bootstrap 95% interval of ``error_dist``."""
    error_dist_corrected: dict[str, float] | None = None
    """Share per type corrected for the judge's confusion (None without human labels)."""
    error_dist_ci: dict[str, tuple[float, float] | None] | None = None
    """Bootstrap 95% interval of the corrected share (confusion uncertainty included)."""
    n_human: int = 0
    """Human-labelled traces behind the (pooled) confusion matrix."""


def human_consensus(labels: Sequence[HumanLabel]) -> dict[str, tuple[str, float]]:
    """{trace_id: (majority type, weight)} over the people who typed it; ties left out."""
    typed: dict[str, dict[str, str]] = {}
    weights: dict[str, list[float]] = {}
    for label in labels:
        if label.error_type is None:
            continue
        typed.setdefault(label.annotator, {})[label.trace_id] = label.error_type
        weights.setdefault(label.trace_id, []).append(label.weight)
    agreed, _ = consensus(typed)
    return {t: (k, float(np.mean(weights[t]))) for t, k in agreed.items()}


def error_distributions(
    graded: pd.DataFrame,
    labels: Mapping[str, StoredLabel],
    categories: Sequence[str],
    *,
    human: Sequence[HumanLabel] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    pool_datasets: bool = False,
) -> list[ErrorDistribution]:
    """Per (checkpoint, dataset) of ``graded`` (``GRADED_COLUMNS``): the judge's type shares
    among wrong traces with an ``ok`` label, and with ``human`` the corrected shares; the
    confusion matrix is pooled over every human-labelled trace the judge typed. With
    ``pool_datasets`` the groups are checkpoints, with dataset ``"all"``."""
    cats = list(categories)
    wrong = graded[graded["outcome"] == "wrong"]
    if pool_datasets:
        wrong = wrong.assign(dataset="all")
    agreed = human_consensus(human) if human else {}
    judged = {
        t: lab.error_type
        for t, lab in labels.items()
        if lab.status == LabelStatus.OK and lab.error_type is not None
    }
    extra = sorted(
        {k for k in judged.values() if k not in cats}
        | {k for k, _ in agreed.values() if k not in cats}
    )
    cats += extra
    shared = sorted(set(agreed) & set(judged))
    pairs = [(agreed[t][0], str(judged[t])) for t in shared]
    weights = [agreed[t][1] for t in shared]
    out: list[ErrorDistribution] = []
    for (checkpoint, dataset), group in wrong.groupby(["checkpoint", "dataset"], sort=False):
        ids = group["trace_id"].tolist()
        status = Counter(str(labels[t].status) if t in labels else "unlabelled" for t in ids)
        types = [str(judged[t]) for t in ids if t in judged]
        if not types:
            out.append(
                ErrorDistribution(
                    checkpoint=str(checkpoint),
                    dataset=str(dataset),
                    n_wrong=len(ids),
                    status_counts=dict(status),
                    error_dist={},
                    error_dist_raw_ci={},
                )
            )
            continue
        result = correct_distribution(
            types,
            pairs,
            cats,
            weights=weights,
            group=f"{checkpoint}/{dataset}",
            n_boot=n_boot,
            seed=seed,
        )
        out.append(
            ErrorDistribution(
                checkpoint=str(checkpoint),
                dataset=str(dataset),
                n_wrong=len(ids),
                status_counts=dict(status),
                error_dist=result.raw,
                error_dist_raw_ci=result.raw_ci,
                error_dist_corrected=result.corrected or None,
                error_dist_ci=result.corrected_ci or None,
                n_human=len(pairs),
            )
        )
    return out


def plot_confusion(
    labels: Mapping[str, StoredLabel],
    human: Sequence[HumanLabel],
    categories: Sequence[str],
    path: str | Path,
) -> Path:
    """A PNG of the row-normalised confusion matrix (rows: human consensus, columns: judge)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agreed = human_consensus(human)
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
