"""How many traces people must label for a given precision: ``misstep plan``.

For one checkpoint with N judged wrong traces and n human labels drawn at random among them,
the ``ppi`` share of type t (``_ppi``, power tuning lam = C / V_f) has variance

    V_t(n) = C^2 / (V_f N) + V_y (1 - rho^2) / n

with V_y = Var(y_t), V_f = Var(f_t), C = Cov(y_t, f_t), rho their correlation (y: the human
type is t, f: the judge's type is t), all estimated on the pilot: the checkpoint's human
labels (weighted by their sampling weights), or every checkpoint's when the checkpoint has
fewer than ``MIN_PILOT`` (and they have that many). The half-width is z * sqrt(V_t(n)); the
plan takes, per checkpoint, the smallest n that brings every type's half-width to at most H:

    n = max_t V_y (1 - rho^2) / ((H / z)^2 - C^2 / (V_f N)),

capped at N, and at least the labels held. Its expected half-width is the largest
z * sqrt(V_t(n)) at that n: what the held and planned labels give, so with more held than H
needs it is narrower than H. Without a pilot it is the human-only worst case, V_y = 1/4 (a
share of one half): n = z^2 / (4 H^2), and the expected half-width is then an upper bound (the
judge's labels can only narrow it; ``tests/agreement/test_plan_sweep.py`` measures by how
much). The plan ignores clustering by problem (the estimate's variance
counts it, so a run whose problems hold many traces of one type comes out somewhat wider);
``benchmarks/bench_estimators.py`` draws planned samples and measures the half-width they give.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel
from scipy import stats

from misstep.agreement._config import Estimator
from misstep.agreement._errordist import ok_types
from misstep.errors import OptionError
from misstep.metrics import LEVEL

if TYPE_CHECKING:
    from misstep.agreement._labelled import LabelledRun

__all__ = ["MIN_PILOT", "PLAN_VERSION", "LabelPlan", "PlanRow", "labels_needed", "plan_labels"]

Array = npt.NDArray[np.float64]

MIN_PILOT = 30
"""Fewest human labels of a checkpoint for its own pilot; fewer: every checkpoint's pooled,
when they are at least as many; else no pilot (the worst case)."""


class PlanRow(BaseModel):
    """The label plan of one checkpoint."""

    checkpoint: str
    """Checkpoint."""
    human_labels_needed: int
    """Human labels needed in all (those already held included) for the half-width."""
    human_labels_held: int
    """Human-labelled traces of this checkpoint already held (with a judge type)."""
    expected_halfwidth: float
    """Largest expected half-width over the types with ``human_labels_needed`` labels (with
    more held than the half-width needs: what the held ones give)."""
    n_judged: int
    """Judged wrong traces of the checkpoint (the most people can label)."""
    pilot: str
    """Where the agreement came from: ``checkpoint``, ``pooled`` (every checkpoint's human
    labels) or ``none`` (the human-only worst case)."""


def _moments(y: Array, f: Array, w: Array) -> tuple[Array, Array, Array]:
    """Weighted variances of y and f and their covariance, per type."""
    w = w / w.sum()
    yc = y - w @ y
    fc = f - w @ f
    return w @ (yc * yc), w @ (fc * fc), w @ (yc * fc)


def _halfwidth(n: int, vy: Array, vf: Array, c: Array, big_n: int, z: float) -> float:
    floor = np.divide(c * c, vf * big_n, out=np.zeros_like(c), where=vf > 0)
    resid = vy - np.divide(c * c, vf, out=np.zeros_like(c), where=vf > 0)
    return float(z * np.sqrt(floor + np.clip(resid, 0.0, None) / max(n, 1)).max())


def labels_needed(
    halfwidth: float,
    n_judged: int,
    *,
    y: Array | None = None,
    f: Array | None = None,
    weights: Array | None = None,
    level: float = LEVEL,
    held: int = 0,
) -> tuple[int, float]:
    """(labels needed in all, expected largest half-width with them) for one checkpoint of
    ``n_judged`` judged traces, from the pilot's one-hot human types ``y`` and judge types
    ``f`` (None: no pilot, the worst case). ``held`` labels are already there: with more than
    the half-width needs, the need is what is held and the half-width what those give, not
    the one asked for."""
    z = float(stats.norm.ppf(0.5 + level / 2))
    if y is None or f is None or len(y) == 0:
        n = max(held, min(n_judged, math.ceil(z * z / (4 * halfwidth * halfwidth))))
        return n, z * 0.5 / math.sqrt(max(n, 1))
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    vy, vf, c = _moments(y, f, w)
    floor = np.divide(c * c, vf * n_judged, out=np.zeros_like(c), where=vf > 0)
    resid = np.clip(vy - np.divide(c * c, vf, out=np.zeros_like(c), where=vf > 0), 0.0, None)
    room = (halfwidth / z) ** 2 - floor
    if (room <= 0).any():
        n = n_judged  # the judge's own sampling noise alone exceeds H
    else:
        n = min(n_judged, max(2, math.ceil(float((resid / room).max()))))
    n = max(n, held)
    return n, _halfwidth(n, vy, vf, c, n_judged, z)


PLAN_VERSION = 1
"""Version of the stored plan (``misstep plan --format json`` / ``misstep sample --plan``)."""


class LabelPlan(BaseModel):
    """A label plan of a run: what ``misstep plan`` prints and ``misstep sample --plan``
    draws."""

    version: int = PLAN_VERSION
    """Format version."""
    halfwidth: float
    """The half-width asked for (share)."""
    level: float
    """Confidence level of the intervals."""
    estimator: Estimator = Estimator.PPI
    """The estimator the plan is for."""
    note: str
    """Where the judge-human agreement came from, in words."""
    checkpoints: list[PlanRow]
    """One row per checkpoint, in checkpoint order."""


def _pilot_pairs(
    labelled: LabelledRun,
) -> tuple[dict[str, list[str]], dict[str, list[tuple[str, str, float]]], list[str]]:
    """Per checkpoint: its judged wrong traces (ok, typed) and its human-labelled ones as
    (human type, judge type, weight); checkpoints in order."""
    from misstep.labels import human_consensus
    from misstep.metrics import order_checkpoints

    table = labelled.table
    judged = ok_types(labelled.labels)
    people = dict(human_consensus(labelled.human).items()) if labelled.human else {}
    wrong = table.loc[table["outcome"] == "wrong", ["trace_id", "checkpoint"]]
    ids: dict[str, list[str]] = {}
    pairs: dict[str, list[tuple[str, str, float]]] = {}
    for t, ck in zip(wrong["trace_id"].astype(str), wrong["checkpoint"].astype(str), strict=True):
        if t in judged:
            ids.setdefault(ck, []).append(t)
            if t in people:
                pairs.setdefault(ck, []).append((people[t][0], judged[t], people[t][1]))
    return ids, pairs, [str(c) for c in order_checkpoints(table)]


def _onehots(pairs: list[tuple[str, str, float]], cats: list[str]) -> tuple[Array, Array, Array]:
    index = {c: i for i, c in enumerate(cats)}
    eye = np.eye(len(cats))
    return (
        eye[[index[h] for h, _, _ in pairs]],
        eye[[index[j] for _, j, _ in pairs]],
        np.array([w for _, _, w in pairs]),
    )


def plan_labels(
    labelled: LabelledRun, halfwidth: float, *, level: float | None = None
) -> LabelPlan:
    """The plan for ``halfwidth`` of every type's share at every checkpoint (``ppi``): the
    pilot is each checkpoint's own human labels when it has ``MIN_PILOT``, else every
    checkpoint's pooled, else none (the human-only worst case). ``level``: the run's
    (``labelled.config.level``) when None."""
    if not 0 < halfwidth < 0.5:
        raise OptionError(option="halfwidth", value=halfwidth, allowed="a share between 0 and 0.5")
    level = labelled.config.level if level is None else level
    ids, pairs, order = _pilot_pairs(labelled)
    cats = sorted(
        set(labelled.categories) | {x for ps in pairs.values() for h, j, _ in ps for x in (h, j)}
    )
    pooled = [p for ck in order for p in pairs.get(ck, [])]
    rows: list[PlanRow] = []
    sources: set[str] = set()
    for ck in order:
        mine = pairs.get(ck, [])
        # A pilot of a few labels says little of the agreement (with 10 labels the planned
        # half-width was off by up to half): below MIN_PILOT, pooled too, the worst case.
        pilot = mine if len(mine) >= MIN_PILOT else pooled if len(pooled) >= MIN_PILOT else []
        source = "checkpoint" if pilot is mine and mine else "pooled" if pilot else "none"
        n_judged = len(ids.get(ck, []))
        if not n_judged:
            continue
        held = len(mine)
        if pilot:
            y, f, w = _onehots(pilot, cats)
            need, width = labels_needed(
                halfwidth, n_judged, y=y, f=f, weights=w, level=level, held=held
            )
        else:
            need, width = labels_needed(halfwidth, n_judged, level=level, held=held)
        sources.add(source)
        rows.append(
            PlanRow(
                checkpoint=ck,
                human_labels_needed=need,
                human_labels_held=len(mine),
                expected_halfwidth=width,
                n_judged=n_judged,
                pilot=source,
            )
        )
    note = (
        f"no pilot: fewer than {MIN_PILOT} human labels share a trace with the judge's labels, "
        "so this is the human-only worst case (a share of one half), an upper bound that the "
        "judge's labels can only improve; label a pilot, then plan again"
        if sources <= {"none"}
        else "from the pilot's judge-human agreement (each checkpoint's own with at least "
        f"{MIN_PILOT} human labels, else all checkpoints' pooled); label, then plan again"
    )
    return LabelPlan(halfwidth=halfwidth, level=level, note=note, checkpoints=rows)
