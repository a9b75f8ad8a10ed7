"""What every estimator of error-type shares reads and returns, and the protocol they share.

A *group* (``Group``) is one checkpoint x dataset, or a checkpoint with its datasets pooled:
its wrong traces with the judge's type, their strata (datasets) and problems. An estimator
(``ShareEstimator``: ``JudgeOnly``, ``PPI``, ``Pooled``) turns a group into a
``ShareEstimate``: the shares, their covariance and, where it bootstraps, its replicates. Every
interval and every shift test is computed from these: the tables' intervals here, the shift
tests of ``misstep.link`` from ``shares`` and ``cov``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from misstep.agreement._config import Estimator
from misstep.metrics import Strata, stratify

__all__ = ["Group", "NoEstimate", "ShareEstimate", "ShareEstimator", "ShareInputs"]

FloatArray = npt.NDArray[np.float64]
Interval = tuple[float, float]


@dataclass(frozen=True)
class ShareInputs:
    """What a run gives every estimator: the categories, the judge's types, people's
    consensus types with their sampling weights."""

    categories: list[str]
    """The run's taxonomy keys, then any other type seen, in order."""
    judged: dict[str, str]
    """trace_id -> the judge's type (current ``ok`` labels with a type)."""
    people: dict[str, tuple[str, float]]
    """trace_id -> people's consensus type and its sampling weight."""
    has_human: bool = False
    """Whether people's labels were given at all."""

    @property
    def shared(self) -> list[str]:
        """Traces with both a judge type and a consensus, sorted."""
        return sorted(set(self.people) & set(self.judged))

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """(people's type, judge's type) of each shared trace."""
        return [(self.people[t][0], self.judged[t]) for t in self.shared]

    @property
    def weights(self) -> list[float]:
        """The sampling weight of each of ``pairs``."""
        return [self.people[t][1] for t in self.shared]


@dataclass(frozen=True)
class Group:
    """One group's wrong traces with a judge type, as every estimator reads them."""

    checkpoint: str
    """Checkpoint."""
    dataset: str
    """Dataset (``"all"`` when its checkpoint's datasets are pooled)."""
    trace_ids: Sequence[str]
    """The judged wrong traces, in the table's order."""
    types: Sequence[str]
    """The judge's type of each."""
    strata: Sequence[str]
    """The stratum (dataset) of each: a label budget samples within it."""
    sizes: Mapping[str, int]
    """Wrong traces per stratum, judged or not."""
    clusters: Sequence[str] | None = None
    """The problem of each (its samples err alike): the unit every variance resamples; None:
    every trace its own."""
    design: Strata = field(init=False)
    """The stratified design of the judged traces (``metrics.stratify``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "design", stratify(self.strata, self.sizes))

    @property
    def name(self) -> str:
        """``checkpoint/dataset``."""
        return f"{self.checkpoint}/{self.dataset}"

    @property
    def n_units(self) -> int:
        """Independent units: problems among the judged traces (traces without clusters)."""
        return len(self.trace_ids) if self.clusters is None else len(set(self.clusters))


@dataclass(frozen=True)
class ShareEstimate:
    """One group's error-type shares as one estimator gives them, types in ``categories``
    order: what every interval and shift test is computed from."""

    estimator: Estimator
    """Which estimator made it."""
    categories: list[str]
    """The types, in order."""
    shares: FloatArray
    """(K,) the shares shown; NaN for a type the estimator does not identify."""
    cov: FloatArray
    """(K, K) their covariance: ``JudgeOnly`` by linearisation over problems, ``PPI``
    analytic, ``Pooled`` over its bootstrap; NaN where it cannot be had (one problem)."""
    se: FloatArray
    """(K,) standard errors shown beside the shares (NaN where not identified)."""
    ci: list[Interval | None]
    """The interval of each share at the config's level, by the estimator's rule."""
    n: int
    """Labels behind it: the group's judge labels (``JudgeOnly``), the human labels used
    (``PPI``: the group's own, ``Pooled``: every one)."""
    n_units: int
    """Independent units (problems) among the group's judge labels."""
    draws: FloatArray | None = None
    """(n_boot, K) bootstrap replicates of ``shares`` (None: an analytic estimator)."""
    sim_ci: list[Interval | None] | None = None
    """Intervals that hold for every type at once (on request)."""
    not_identified: list[str] = field(default_factory=list)
    """Types without a share (NaN in ``shares``)."""

    @property
    def identified(self) -> npt.NDArray[np.bool_]:
        """(K,) which types have a share."""
        return np.isfinite(self.shares)

    def as_dict(self) -> dict[str, float | None]:
        """Type -> share (None where not identified)."""
        return {
            c: (float(v) if np.isfinite(v) else None)
            for c, v in zip(self.categories, self.shares, strict=True)
        }

    def ci_dict(self) -> dict[str, Interval | None]:
        """Type -> interval."""
        return dict(zip(self.categories, self.ci, strict=True))


@dataclass(frozen=True)
class NoEstimate:
    """Why an estimator gives a group no shares."""

    reason: str
    """In words, with what to do about it."""
    n: int
    """The labels it had (human labels for a correction)."""


class ShareEstimator(Protocol):
    """An estimator of a group's error-type shares; ``name`` is its ``Estimator``."""

    @property
    def name(self) -> Estimator:
        """Which estimator it is."""
        ...

    def estimate(self, group: Group) -> ShareEstimate | NoEstimate:
        """The group's shares, their covariance and replicates, or why there are none."""
        ...
