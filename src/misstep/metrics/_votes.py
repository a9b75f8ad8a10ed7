"""Per-checkpoint vote metrics and the per-problem table they are averaged from.

``vote_metrics(graded, ks)`` gives one :class:`CheckpointMetrics` per checkpoint (x dataset),
in checkpoint order (``order_checkpoints``), datasets sorted by name:

- ``pass@k`` and ``maj@k`` for each requested k (see ``_passk`` and ``_majk``), and
  ``sc_gain@k = maj@k - pass@1``. A k larger than the sample count of some problem of a
  checkpoint (x dataset) makes that checkpoint's pass@k / maj@k / sc_gain@k null, with a note
  in ``notes``; a k larger than every problem's sample count is an ``OptionError`` (the one
  rule: ``_ks``). sc_gain@1 is 0 by definition: it has no interval and no change (None).
- ``answer_entropy``, ``top1_share``, ``wrong_consistency``: means over the problems where
  they are observable (``_answer_stats.agreement_means``: two or more samples), None where
  none is; ``majority_failures``: the number of problems that
  are majority-vote failures (``majority_failure_rate``: their share of all problems).
- outcome counts ``n_correct``, ``n_wrong``, ``n_truncated``, ``n_no_answer`` (rows).

Grouping: ``by_dataset=None`` splits by dataset exactly when the table has more than one;
``by_dataset=False`` pools all datasets of a checkpoint under the dataset name ``"all"`` (or
the single dataset's name). No aggregate row is ever added.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from misstep.metrics._answer_stats import UNDEFINED_NOTE, agreement_means, answer_stats
from misstep.metrics._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, resample_counts
from misstep.metrics._counts import ProblemCounts, problem_counts
from misstep.metrics._intervals import mean_ci, share_ci, verdict
from misstep.metrics._ks import check_ks, k_fits
from misstep.metrics._majk import MIN_MC_SUBSETS, maj_at_k_signatures
from misstep.metrics._order import order_checkpoints
from misstep.metrics._passk import pass_at_k

__all__ = [
    "ALL_DATASETS",
    "Change",
    "CheckpointChange",
    "CheckpointMetrics",
    "iter_groups",
    "problem_stats",
    "vote_metrics",
]

ALL_DATASETS = "all"
"""Dataset name of a row that pools several datasets (``by_dataset=False``)."""

PROBLEM_STATS_COLUMNS = [
    "checkpoint",
    "step",
    "dataset",
    "problem_id",
    "n",
    "c",
    "n_answered",
    "pass@1",
    "entropy",
    "top1_share",
    "wrong_consistency",
    "majority_class",
    "majority_correct",
    "majority_tied",
    "majority_failure",
    "top_wrong_class",
    "top_wrong_count",
    "n_wrong_answered",
    "n_classes",
    "n_truncated",
    "n_no_answer",
]


CI = tuple[float, float] | None


class Change(BaseModel):
    """The change of one metric from the previous checkpoint, paired over shared problems."""

    model_config = ConfigDict(frozen=True)

    delta: float
    """This checkpoint's value minus the previous one's, over the problems both have."""
    ci: CI
    """95% paired bootstrap interval of ``delta`` (problems resampled)."""
    verdict: str
    """``up``, ``down`` or ``within noise`` (the interval covers 0)."""


class CheckpointChange(BaseModel):
    """What changed since the previous checkpoint (of the same dataset group)."""

    model_config = ConfigDict(frozen=True)

    previous: str
    """The previous checkpoint."""
    n_shared: int
    """Problems both checkpoints have: the pairs behind every interval here."""
    pass_at_1: Change | None
    """Change in pass@1."""
    sc_gain_at_k: dict[int, Change | None]
    """Change in sc_gain@k per k (None where either checkpoint has no value, and for k=1)."""


class CheckpointMetrics(BaseModel):
    """Vote metrics of one checkpoint (x dataset)."""

    model_config = ConfigDict(frozen=True)

    checkpoint: str
    """Checkpoint name."""
    step: int | None = None
    """Training step of the checkpoint, when known."""
    dataset: str
    """Dataset name, or ``"all"`` when several datasets are pooled."""
    n_problems: int
    """Problems with at least one sample at this checkpoint."""
    n_samples: int
    """Rows (samples) over those problems."""
    pass_at_k: dict[int, float | None]
    """pass@k per requested k; None where some problem has fewer than k samples."""
    maj_at_k: dict[int, float | None]
    """maj@k per requested k; None where some problem has fewer than k samples."""
    maj_at_k_se: dict[int, float] = Field(default_factory=dict)
    """Standard error of maj@k, only for the k where a Monte Carlo estimate was used."""
    sc_gain_at_k: dict[int, float | None]
    """maj@k - pass@1 per requested k."""
    pass_at_k_ci: dict[int, CI] = Field(default_factory=dict)
    """95% bootstrap interval of pass@k over problems (see ``_intervals``)."""
    maj_at_k_ci: dict[int, CI] = Field(default_factory=dict)
    """95% bootstrap interval of maj@k over problems."""
    sc_gain_at_k_ci: dict[int, CI] = Field(default_factory=dict)
    """95% bootstrap interval of sc_gain@k over problems (per-problem gains resampled); None
    for k=1, where the gain is 0 by definition."""
    change: CheckpointChange | None = None
    """Change from the previous checkpoint of the same group; None for the first."""
    answer_entropy: float | None
    """Mean answer entropy in bits over problems with two or more answered samples."""
    top1_share: float | None
    """Mean share of answered samples giving the most common answer (problems with two or
    more answered samples)."""
    wrong_consistency: float | None
    """Mean share of wrong answered samples giving the most common wrong answer (problems with
    two or more wrong answered samples)."""
    majority_failures: int
    """Problems whose full-n vote is not correct while a sample is (count)."""
    majority_failure_rate: float
    """``majority_failures / n_problems`` (share of all problems)."""
    n_correct: int
    """Rows with outcome ``correct``."""
    n_wrong: int
    """Rows with outcome ``wrong``."""
    n_truncated: int
    """Rows with outcome ``truncated``."""
    n_no_answer: int
    """Rows with outcome ``no_answer``."""
    notes: list[str] = Field(default_factory=list)
    """Why a value is missing (not part of ``to_json``)."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``misstep summary --format json`` (keys in a fixed order)."""
        out: dict[str, Any] = {
            "checkpoint": self.checkpoint,
            "dataset": self.dataset,
            "n_problems": self.n_problems,
            "n_samples": self.n_samples,
        }
        for k, value in self.pass_at_k.items():
            out[f"pass@{k}"] = value
            out[f"pass@{k}_ci"] = _ci_json(self.pass_at_k_ci.get(k))
        for k, value in self.maj_at_k.items():
            out[f"maj@{k}"] = value
            out[f"maj@{k}_ci"] = _ci_json(self.maj_at_k_ci.get(k))
            if k in self.maj_at_k_se:
                out[f"maj@{k}_se"] = self.maj_at_k_se[k]
        for k, value in self.sc_gain_at_k.items():
            out[f"sc_gain@{k}"] = value
            out[f"sc_gain@{k}_ci"] = _ci_json(self.sc_gain_at_k_ci.get(k))
        out.update(
            answer_entropy=self.answer_entropy,
            top1_share=self.top1_share,
            wrong_consistency=self.wrong_consistency,
            majority_failures=self.majority_failures,
            majority_failure_rate=self.majority_failure_rate,
            n_correct=self.n_correct,
            n_wrong=self.n_wrong,
            n_truncated=self.n_truncated,
            n_no_answer=self.n_no_answer,
        )
        change = self.change
        out["change"] = (
            None
            if change is None
            else {
                "from": change.previous,
                "n_shared": change.n_shared,
                "pass@1": _change_json(change.pass_at_1),
                **{f"sc_gain@{k}": _change_json(c) for k, c in change.sc_gain_at_k.items()},
            }
        )
        return out


def _ci_json(ci: CI) -> list[float] | None:
    return None if ci is None else [ci[0], ci[1]]


def _change_json(change: Change | None) -> dict[str, Any] | None:
    if change is None:
        return None
    return {"delta": change.delta, "ci": _ci_json(change.ci), "verdict": change.verdict}


def _counts(graded: pd.DataFrame | ProblemCounts) -> ProblemCounts:
    return graded if isinstance(graded, ProblemCounts) else problem_counts(graded)


def problem_stats(graded: pd.DataFrame | ProblemCounts) -> pd.DataFrame:
    """One row per (checkpoint, dataset, problem_id) with the columns ``PROBLEM_STATS_COLUMNS``
    (see ``_answer_stats`` for their definitions); ``pass@1`` = c / n."""
    counts = _counts(graded)
    problems = counts.problems
    stats = answer_stats(counts)
    table = pd.concat([problems.reset_index(drop=True), stats], axis=1)
    table["pass@1"] = problems["c"].to_numpy() / problems["n"].to_numpy()
    return table[PROBLEM_STATS_COLUMNS]


def vote_metrics(
    graded: pd.DataFrame | ProblemCounts,
    ks: Iterable[int],
    *,
    by_dataset: bool | None = None,
    seed: int = DEFAULT_SEED,
    mc_subsets: int = MIN_MC_SUBSETS,
    n_boot: int = DEFAULT_N_BOOT,
) -> list[CheckpointMetrics]:
    """Vote metrics per checkpoint (x dataset), in checkpoint order (see module docstring),
    with bootstrap intervals over problems and the paired change from the previous checkpoint
    (``_intervals``); every bootstrap is seeded by ``seed`` and the group's name."""
    counts = _counts(graded)
    problems = counts.problems
    if problems.empty:
        return []
    n = problems["n"].to_numpy(np.int64)
    c = problems["c"].to_numpy(np.int64)
    wanted = check_ks(ks, int(n.max()))
    stats = answer_stats(counts)
    unique, inverse = counts.signatures()

    pass1 = pass_at_k(n, c, 1)
    per_k: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
    for k in wanted:
        values, errors, monte_carlo = maj_at_k_signatures(
            unique, k, seed=seed, mc_subsets=mc_subsets
        )
        majority = values[inverse]
        cls = counts.classes
        if k == 1 and bool(((cls["n_correct"] == 0) | (cls["n_correct"] == cls["count"])).all()):
            # Every class is uniformly correct or wrong (grading splits mixed ones), so a vote of
            # one sample is right exactly when the sample is: maj@1 = c/n = pass@1. Use the same
            # numbers so that sc_gain@1 is exactly 0, not a rounding residue.
            majority = pass1.copy()
        per_k[k] = (pass_at_k(n, c, k), majority, errors[inverse], monte_carlo[inverse])

    steps = problems.groupby("checkpoint")["step"].min()
    keys = (
        problems["dataset"].astype(str) + "\x1f" + problems["problem_id"].astype(str)
    ).to_numpy()
    out: list[CheckpointMetrics] = []
    previous: dict[str, tuple[str, np.ndarray]] = {}
    for checkpoint, name, index in iter_groups(problems, by_dataset):
        rng = np.random.default_rng([seed, zlib.crc32(f"{checkpoint}\x1f{name}".encode())])
        row = _one_group(
            checkpoint, name, steps.get(checkpoint), index, problems, stats, pass1, per_k
        )
        update: dict[str, Any] = _group_cis(row, index, pass1, per_k, n_boot, rng)
        if name in previous:
            before_name, before = previous[name]
            update["change"] = _change(
                before_name, before, index, keys, pass1, per_k, row, n_boot, rng
            )
        previous[name] = (checkpoint, index)
        out.append(row.model_copy(update=update))
    return out


def iter_groups(
    problems: pd.DataFrame, by_dataset: bool | None
) -> Iterator[tuple[str, str, npt.NDArray[np.int64]]]:
    """The groups every per-checkpoint table reports, as (checkpoint, dataset name, rows of
    ``problems``): checkpoints in ``order_checkpoints`` order, datasets sorted by name. Split
    by dataset exactly when ``by_dataset`` is True, or None with several datasets; pooled
    groups are named after the one dataset, or ``"all"``."""
    datasets = sorted(problems["dataset"].unique())
    split = len(datasets) > 1 if by_dataset is None else by_dataset
    group_keys = ["checkpoint", "dataset"] if split else ["checkpoint"]
    rows = problems.groupby(group_keys, sort=False).indices
    pooled = datasets[0] if len(datasets) == 1 else ALL_DATASETS
    for checkpoint in order_checkpoints(problems):
        for dataset in datasets if split else [None]:
            found = rows.get((checkpoint, dataset) if split else checkpoint)
            if found is not None:
                name = str(dataset) if dataset is not None else pooled
                yield str(checkpoint), name, np.asarray(found, dtype=np.int64)


def _gains(pass1: np.ndarray, values: np.ndarray) -> np.ndarray:
    return np.asarray(values - pass1, dtype=np.float64)


def _group_cis(
    row: CheckpointMetrics,
    index: np.ndarray,
    pass1: np.ndarray,
    per_k: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    n_boot: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    pass_ci: dict[int, CI] = {}
    maj_ci: dict[int, CI] = {}
    gain_ci: dict[int, CI] = {}
    # One resample of the group's problems serves every metric (and keeps them coherent).
    counts = resample_counts(len(index), n_boot, rng) if len(index) >= 2 else None
    for k, (passes, values, _, _) in per_k.items():
        if row.pass_at_k.get(k) is None:
            pass_ci[k] = maj_ci[k] = gain_ci[k] = None
            continue
        pass_ci[k] = share_ci(passes[index].astype(np.float64), n_boot, rng, counts=counts)
        maj_ci[k] = share_ci(values[index].astype(np.float64), n_boot, rng, counts=counts)
        gain = mean_ci(_gains(pass1[index], values[index]), n_boot, rng, counts=counts)
        gain_ci[k] = None if k == 1 else gain  # drawn anyway: the other ks keep their streams
    return {"pass_at_k_ci": pass_ci, "maj_at_k_ci": maj_ci, "sc_gain_at_k_ci": gain_ci}


def _change(
    before_name: str,
    before: np.ndarray,
    after: np.ndarray,
    keys: np.ndarray,
    pass1: np.ndarray,
    per_k: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    row: CheckpointMetrics,
    n_boot: int,
    rng: np.random.Generator,
) -> CheckpointChange:
    """Paired change over the problems both checkpoints have."""
    position = {key: i for i, key in zip(before, keys[before], strict=True)}
    pairs = [
        (position[key], i) for i, key in zip(after, keys[after], strict=True) if key in position
    ]
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)

    counts = resample_counts(len(pairs), n_boot, rng) if len(pairs) >= 2 else None

    def paired(x_before: np.ndarray, x_after: np.ndarray) -> Change | None:
        if len(pairs) == 0:
            return None
        diff = np.asarray(x_after - x_before, dtype=np.float64)
        ci = mean_ci(diff, n_boot, rng, counts=counts)
        return Change(delta=float(diff.mean()), ci=ci, verdict=verdict(ci))

    gains: dict[int, Change | None] = {}
    for k, (_, values, _, _) in per_k.items():
        if row.sc_gain_at_k.get(k) is None:
            gains[k] = None
            continue
        change = paired(_gains(pass1[a], values[a]), _gains(pass1[b], values[b]))
        # sc_gain@1 is 0 by definition (a vote of one sample is that sample); drawn anyway so
        # that the other ks keep their random streams.
        gains[k] = None if k == 1 else change
    return CheckpointChange(
        previous=before_name,
        n_shared=len(pairs),
        pass_at_1=paired(pass1[a], pass1[b]),
        sc_gain_at_k=gains,
    )


def _one_group(
    checkpoint: str,
    dataset: str,
    step: Any,
    index: np.ndarray,
    problems: pd.DataFrame,
    stats: pd.DataFrame,
    pass1: np.ndarray,
    per_k: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
) -> CheckpointMetrics:
    sub = problems.iloc[index]
    min_n = int(sub["n"].min())
    base = float(pass1[index].mean())
    pass_k: dict[int, float | None] = {}
    maj_k: dict[int, float | None] = {}
    maj_se: dict[int, float] = {}
    gain: dict[int, float | None] = {}
    notes: list[str] = []
    for k, (passes, values, errors, monte_carlo) in per_k.items():
        if not k_fits(k, min_n):
            pass_k[k] = maj_k[k] = gain[k] = None
            notes.append(
                f"{checkpoint}/{dataset}: pass@{k} and maj@{k} left out, "
                f"a problem has only {min_n} sample{'s' if min_n != 1 else ''}"
            )
            continue
        pass_k[k] = float(passes[index].mean())
        maj = float(values[index].mean())
        maj_k[k] = maj
        gain[k] = maj - base
        if monte_carlo[index].any():
            # Problems are independent estimates: the mean's variance is sum(se^2) / P^2.
            maj_se[k] = math.sqrt(float(np.sum(errors[index] ** 2))) / len(index)
    stat = stats.iloc[index]
    agree, single = agreement_means(stat, sub["n_answered"].to_numpy(np.int64))
    if single:
        notes.append(UNDEFINED_NOTE)
    return CheckpointMetrics(
        checkpoint=checkpoint,
        step=None if step is None or pd.isna(step) else int(step),
        dataset=dataset,
        n_problems=len(index),
        n_samples=int(sub["n"].sum()),
        pass_at_k=pass_k,
        maj_at_k=maj_k,
        maj_at_k_se=maj_se,
        sc_gain_at_k=gain,
        answer_entropy=agree["entropy"],
        top1_share=agree["top1_share"],
        wrong_consistency=agree["wrong_consistency"],
        majority_failures=int(stat["majority_failure"].to_numpy(bool).sum()),
        majority_failure_rate=float(stat["majority_failure"].to_numpy(bool).mean()),
        n_correct=int(sub["n_correct"].sum()),
        n_wrong=int(sub["n_wrong"].sum()),
        n_truncated=int(sub["n_truncated"].sum()),
        n_no_answer=int(sub["n_no_answer"].sum()),
        notes=notes,
    )
