"""Other ways of aggregating the samples a run already has, against plain majority voting.

Per checkpoint (x dataset), every aggregator gets a per-problem expected score (1 when it
returns a correct answer; ties share the credit as in maj@k), averaged over the problems:

- ``maj@K``: the majority vote over a uniformly random K-subset of the problem's samples
  (``_majk``, exact).
- ``maj-answered@K``: the same over the samples that have an answer only (K capped at their
  number): what voting gains when unanswered samples are re-drawn instead of wasted.
- ``window{W}-maj@K``: the expectation over uniformly random K-subsets of the samples pooled
  over the last W checkpoints, this one included (answer classes are shared across
  checkpoints), at the same total budget K; only where W checkpoints exist.
- ``early-stop-{m}of{n}``: samples are drawn one at a time in a random order; drawing stops as
  soon as m of them agree (that answer is returned) or after n (the plurality of those n is
  returned). Seeded Monte Carlo over random orders (``EARLY_STOP_ORDERS`` per distinct
  problem signature), with its standard error; ``samples_used`` is the expected number drawn.
- ``pass@K`` (the share of problems a K-sample budget would solve at all), ``window{W}-pass@K``
  (the same budget drawn from the samples pooled over the last W checkpoints) and
  ``window{W}-best-single-pass@K`` (the best single checkpoint of the window at budget K): does
  sampling across checkpoints cover more problems than the best checkpoint alone?
- ``maj@all``: the plain vote over all of a problem's samples (the baseline of the next two);
- ``short-half-maj@all``: the vote over the samples no longer than the problem's median
  response (a length-aware vote: long responses of RL models are more often wrong);
- ``weighted-maj@all[FIELD]``, with per-trace ``weights``: the vote over all samples where each
  answered sample counts its weight (a reward-model score, a confidence, a mean token
  log-probability). When some weight of the run is negative the weights are read as
  log-scores and each problem's are exponentiated (``exp(w - max w)``), so that the order is
  kept and every weight is positive.

``failures_avoided`` is the expected number of the group's majority-vote failures (the full-n
vote of ``problem_stats``) that the aggregator answers correctly.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from misstep.metrics._bootstrap import DEFAULT_SEED
from misstep.metrics._counts import ProblemCounts, problem_counts
from misstep.metrics._ks import check_ks, k_fits
from misstep.metrics._majk import maj_at_k_one
from misstep.metrics._order import order_checkpoints
from misstep.metrics._passk import pass_at_k_one
from misstep.metrics._votes import iter_groups, problem_stats

__all__ = [
    "DEFAULT_EARLY_STOP",
    "DEFAULT_WINDOWS",
    "EARLY_STOP_ORDERS",
    "AggregatorScore",
    "VotingRow",
    "early_stop_one",
    "voting_table",
]

DEFAULT_WINDOWS = (2, 3, 5)
DEFAULT_EARLY_STOP = ((2, 4), (3, 8), (4, 16))
EARLY_STOP_ORDERS = 4000


class AggregatorScore(BaseModel):
    """One aggregator at one checkpoint (x dataset)."""

    model_config = ConfigDict(frozen=True)

    name: str
    """``maj@K``, ``maj-answered@K``, ``window{W}-maj@K`` or ``early-stop-{m}of{n}``."""
    score: float | None
    """Mean expected score over the problems (share); None where it is not defined."""
    score_se: float = 0.0
    """Standard error of ``score`` when it is a Monte Carlo estimate (else 0)."""
    samples_used: float | None
    """Expected samples used per problem."""
    failures_avoided: float | None
    """Expected number of the group's majority-vote failures it answers correctly."""


class VotingRow(BaseModel):
    """Every aggregator at one checkpoint (x dataset)."""

    checkpoint: str
    """Checkpoint."""
    dataset: str
    """Dataset, or ``"all"`` when pooled."""
    n_problems: int
    """Problems."""
    majority_failures: int
    """Majority-vote failures of the full-n vote (count)."""
    aggregators: list[AggregatorScore]
    """In a fixed order: maj, maj-answered, windows, early stops."""
    notes: list[str] = Field(default_factory=list)
    """Why a value is missing (not part of ``to_json``)."""

    def to_json(self) -> dict[str, object]:
        """The object of ``misstep voting --format json``."""
        return self.model_dump(mode="json", exclude={"notes"})


def _rng(seed: int, *parts: object) -> np.random.Generator:
    text = "\x1f".join(str(p) for p in parts).encode()
    return np.random.default_rng([seed, zlib.crc32(text)])


def early_stop_one(
    counts: Sequence[int],
    correct: Sequence[bool],
    n_none: int,
    m: int,
    budget: int,
    *,
    orders: int = EARLY_STOP_ORDERS,
    rng: np.random.Generator,
) -> tuple[float, float, float]:
    """(expected score, its standard error, expected samples drawn) of early stopping for one
    problem, by ``orders`` random orders of its samples (the last bucket never votes)."""
    labels = np.repeat(np.arange(len(counts) + 1), [*counts, n_none])
    n = len(labels)
    draws = min(budget, n)
    keys = rng.random((orders, n))
    seq = labels[np.argsort(keys, axis=1)[:, :draws]]  # orders x draws
    onehot = seq[:, :, None] == np.arange(len(counts))[None, None, :]
    running = np.cumsum(onehot, axis=1)  # orders x draws x classes
    hit = running.max(axis=2) >= m
    stopped = hit.any(axis=1)
    stop_at = np.where(stopped, hit.argmax(axis=1), draws - 1)
    final = running[np.arange(orders), stop_at]  # counts when drawing stops
    good = np.asarray(correct, dtype=bool)
    top = final.max(axis=1, keepdims=True)
    is_top = (final == top) & (top > 0)
    n_top = is_top.sum(axis=1)
    score = np.where(n_top > 0, (is_top & good).sum(axis=1) / np.maximum(n_top, 1), 0.0)
    se = float(score.std(ddof=1) / math.sqrt(orders)) if orders > 1 else 0.0
    return float(score.mean()), se, float((stop_at + 1).mean())


@dataclass
class _Tally:
    """Per-problem values of each aggregator in one group."""

    scores: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, list[float]] = field(default_factory=dict)
    used: dict[str, list[float]] = field(default_factory=dict)
    single: dict[tuple[int, int], list[float]] = field(default_factory=dict)
    """(window, position in it) -> per-problem pass@k of that checkpoint."""
    group_level: set[str] = field(default_factory=set)
    """Aggregators whose one value is the group's, not a mean of per-problem values."""

    def add(self, name: str, value: float, se: float, samples: float) -> None:
        self.scores.setdefault(name, []).append(value)
        self.errors.setdefault(name, []).append(se)
        self.used.setdefault(name, []).append(samples)


def _classes_of(counts: ProblemCounts) -> dict[int, list[tuple[str, int, bool]]]:
    cls = counts.classes
    out: dict[int, list[tuple[str, int, bool]]] = {}
    for pidx, key, count, good in zip(
        cls["pidx"], cls["answer_class"], cls["count"], cls["correct"], strict=True
    ):
        out.setdefault(int(pidx), []).append((str(key), int(count), bool(good)))
    return out


@dataclass
class _Run:
    """What every group of one ``voting_table`` call reads: the run's problems and classes,
    and the cache of per-signature vote values (problems with equal counts share them)."""

    counts: ProblemCounts
    seed: int
    cache: dict[tuple[object, ...], tuple[float, float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        problems = self.counts.problems
        self.problems = problems
        self.classes = _classes_of(self.counts)
        self.order = order_checkpoints(problems)
        self.rank = {ck: i for i, ck in enumerate(self.order)}
        keys = zip(problems["checkpoint"], problems["dataset"], problems["problem_id"], strict=True)
        self.where = {(str(ck), str(ds), str(pid)): i for i, (ck, ds, pid) in enumerate(keys)}
        self.n_none = (problems["n"] - problems["n_answered"]).to_numpy(np.int64)
        self.n_all = problems["n"].to_numpy(np.int64)
        self.c_all = problems["c"].to_numpy(np.int64)
        self.failed = problem_stats(self.counts)["majority_failure"].to_numpy(bool)

    def maj(self, cls: list[tuple[str, int, bool]], none: int, kk: int) -> float:
        """maj@kk of one problem's classes (exact, ``_majk``); 0 without an answer."""
        total = none + sum(c for _, c, _ in cls)
        if total == 0 or not cls:
            return 0.0
        signature = ("maj", tuple(sorted((c, g) for _, c, g in cls)), none, min(kk, total))
        if signature not in self.cache:
            est = maj_at_k_one(
                [c for _, c, _ in cls], [g for _, _, g in cls], none, min(kk, total), seed=self.seed
            )
            self.cache[signature] = (est.value, est.se, float(min(kk, total)))
        return self.cache[signature][0]

    def early(
        self, cls: list[tuple[str, int, bool]], none: int, m: int, n: int
    ) -> tuple[float, float, float]:
        """(score, its standard error, samples drawn) of early stopping, per signature."""
        signature = ("early", tuple(sorted((c, g) for _, c, g in cls)), none, m, n)
        if signature not in self.cache:
            if not cls:
                self.cache[signature] = (0.0, 0.0, float(min(n, none)))
            else:
                ordered = sorted((c, g) for _, c, g in cls)
                self.cache[signature] = early_stop_one(
                    [c for c, _ in ordered],
                    [g for _, g in ordered],
                    none,
                    m,
                    n,
                    rng=_rng(self.seed, *signature),
                )
        return self.cache[signature]

    def window(self, tally: _Tally, p: int, checkpoint: str, k: int, w: int) -> None:
        """The window-W aggregators of problem ``p``: its samples pooled over the last W
        checkpoints (this one included); nothing where fewer than W checkpoints came before."""
        pos = self.rank[checkpoint]
        if pos + 1 < w:
            return
        ds, pid = str(self.problems["dataset"].iat[p]), str(self.problems["problem_id"].iat[p])
        pooled: dict[str, tuple[int, bool]] = {}
        pooled_none = 0
        for j, ck in enumerate(self.order[pos + 1 - w : pos + 1]):
            q = self.where.get((ck, ds, pid))
            if q is None:
                continue
            pooled_none += int(self.n_none[q])
            for key, c, g in self.classes.get(q, []):
                c0, g0 = pooled.get(key, (0, False))
                pooled[key] = (c0 + c, g0 or g)
            n_q, c_q = int(self.n_all[q]), int(self.c_all[q])
            tally.single.setdefault((w, j), []).append(pass_at_k_one(n_q, c_q, min(k, n_q)))
        merged = [(key, c, g) for key, (c, g) in pooled.items()]
        tally.add(f"window{w}-maj@{k}", self.maj(merged, pooled_none, k), 0.0, float(k))
        pooled_n = pooled_none + sum(c for c, _ in pooled.values())
        pooled_c = sum(c for c, g in pooled.values() if g)
        score = pass_at_k_one(pooled_n, pooled_c, min(k, pooled_n))
        tally.add(f"window{w}-pass@{k}", score, 0.0, float(k))


def _names(
    k: int,
    windows: list[int],
    early_stops: list[tuple[int, int]],
    *,
    plain: bool,
    short: bool,
    weighted: str | None,
) -> list[str]:
    """The aggregators of one call, in the table's column order."""
    names = [
        f"maj@{k}",
        f"maj-answered@{k}",
        *(f"window{w}-maj@{k}" for w in windows),
        *(f"early-stop-{m}of{n}" for m, n in early_stops),
        f"pass@{k}",
        *(f"window{w}-pass@{k}" for w in windows),
        *(f"window{w}-best-single-pass@{k}" for w in windows),
    ]
    if plain:
        names.append("maj@all")
    if short:
        names.append("short-half-maj@all")
    if weighted is not None:
        names.append(f"weighted-maj@all[{weighted}]")
    return names


def _scores(
    tally: _Tally,
    names: list[str],
    fails: np.ndarray,
    windows: list[int],
    k: int,
    left_out: set[str],
) -> list[AggregatorScore]:
    """Each aggregator's group value from the tally; None where it has none (a window longer
    than the checkpoints so far, or a budget k that a problem's samples do not allow)."""
    for w in windows:
        means = [float(np.mean(v)) for (ww, _), v in tally.single.items() if ww == w and v]
        if means:  # the best single checkpoint of the window, at the same budget k
            name = f"window{w}-best-single-pass@{k}"
            tally.scores[name] = [max(means)]
            tally.errors[name] = [0.0]
            tally.used[name] = [float(k)]
            tally.group_level.add(name)
    out = []
    for name in names:
        if name not in tally.scores or name in left_out:
            out.append(
                AggregatorScore(name=name, score=None, samples_used=None, failures_avoided=None)
            )
            continue
        arr = np.asarray(tally.scores[name])
        se = math.sqrt(float(np.sum(np.square(tally.errors[name])))) / len(arr)
        out.append(
            AggregatorScore(
                name=name,
                score=float(arr.mean()),
                score_se=se,
                samples_used=float(np.mean(tally.used[name])),
                failures_avoided=None if name in tally.group_level else float(arr[fails].sum()),
            )
        )
    return out


def voting_table(
    graded: pd.DataFrame,
    k: int,
    *,
    windows: Iterable[int] = DEFAULT_WINDOWS,
    early_stops: Iterable[tuple[int, int]] = DEFAULT_EARLY_STOP,
    by_dataset: bool | None = None,
    seed: int = DEFAULT_SEED,
    weights: pd.Series | None = None,
    weight_name: str = "weight",
) -> list[VotingRow]:
    """Every aggregator per checkpoint (x dataset), in checkpoint order (module docstring).
    ``weights`` (aligned with ``graded``'s rows; NaN for none) adds the weighted vote. ``k``
    follows the one rule of ``_ks``: above every problem's samples it is an ``OptionError``;
    a group with a problem of fewer samples has no value at budget k (None, with a note)."""
    run = _Run(problem_counts(graded), seed)
    check_ks([k], int(run.n_all.max()) if len(run.n_all) else 0)
    windows, early_stops = list(windows), list(early_stops)
    full = _full_votes(graded, weights) if weights is not None else None
    short = _full_votes(graded, _shorter_half(graded)) if "response_chars" in graded else None
    votes = full or short
    names = _names(
        k,
        windows,
        early_stops,
        plain=votes is not None,
        short=short is not None,
        weighted=weight_name if full is not None else None,
    )
    at_k = {name for name in names if name.endswith(f"@{k}") and name != f"maj-answered@{k}"}
    out: list[VotingRow] = []
    for checkpoint, dataset, index in iter_groups(run.problems, by_dataset):
        tally = _Tally()
        for p in index:
            cls = run.classes.get(int(p), [])
            none = int(run.n_none[p])
            answered = sum(c for _, c, _ in cls)
            n_p, c_p = int(run.n_all[p]), int(run.c_all[p])
            tally.add(f"maj@{k}", run.maj(cls, none, k), 0.0, float(min(k, n_p)))
            budget = min(k, answered)
            value = run.maj(cls, 0, budget) if answered else 0.0
            tally.add(f"maj-answered@{k}", value, 0.0, float(budget))
            for w in windows:
                run.window(tally, int(p), checkpoint, k, w)
            for m, n in early_stops:
                tally.add(f"early-stop-{m}of{n}", *run.early(cls, none, m, n))
            tally.add(f"pass@{k}", pass_at_k_one(n_p, c_p, min(k, n_p)), 0.0, float(min(k, n_p)))
            if votes is not None:
                ds, pid = run.problems["dataset"].iat[p], run.problems["problem_id"].iat[p]
                problem = (checkpoint, str(ds), str(pid))
                tally.add("maj@all", votes.get(problem, (0.0, 0.0))[0], 0.0, float(n_p))
                if short is not None:
                    value = short.get(problem, (0.0, 0.0))[1]
                    tally.add("short-half-maj@all", value, 0.0, float(n_p))
                if full is not None:
                    value = full.get(problem, (0.0, 0.0))[1]
                    tally.add(f"weighted-maj@all[{weight_name}]", value, 0.0, float(n_p))
        fewest = int(run.n_all[index].min())
        fits = k_fits(k, fewest)
        notes = [] if fits else [_k_note(checkpoint, dataset, k, fewest)]
        fails = run.failed[index]
        out.append(
            VotingRow(
                checkpoint=checkpoint,
                dataset=dataset,
                n_problems=len(index),
                majority_failures=int(fails.sum()),
                aggregators=_scores(tally, names, fails, windows, k, set() if fits else at_k),
                notes=notes,
            )
        )
    return out


def _k_note(checkpoint: str, dataset: str, k: int, fewest: int) -> str:
    return (
        f"{checkpoint}/{dataset}: the aggregators at budget {k} are n/a, "
        f"a problem has only {fewest} sample(s)"
    )


def _credit(frame: pd.DataFrame, column: str) -> pd.Series:
    """Per problem: the share of the top classes (by ``column``) that are correct."""
    top = frame.groupby(["checkpoint", "dataset", "problem_id"])[column].transform("max")
    is_top = (frame[column] == top) & (top > 0)
    tops = frame[is_top]
    keys = ["checkpoint", "dataset", "problem_id"]
    return tops.groupby(keys)["correct"].mean()


def _full_votes(
    graded: pd.DataFrame, weights: pd.Series
) -> dict[tuple[str, str, str], tuple[float, float]]:
    """(plain, weighted) full-vote score per (checkpoint, dataset, problem_id)."""
    keys = ["checkpoint", "dataset", "problem_id"]
    frame = graded[[*keys, "answer_class", "correct"]].copy()
    for key in keys:
        frame[key] = frame[key].astype(str)
    w = pd.to_numeric(weights, errors="coerce").to_numpy(float)
    frame["w"] = w
    frame = frame[frame["answer_class"].notna() & np.isfinite(frame["w"])]
    if (frame["w"] < 0).any():
        frame["w"] = np.exp(frame["w"] - frame.groupby(keys)["w"].transform("max"))
    frame["answer_class"] = frame["answer_class"].astype(str)
    classes = frame.groupby([*keys, "answer_class"]).agg(
        votes=("w", "size"), weight=("w", "sum"), correct=("correct", "any")
    )
    classes = classes.reset_index()
    plain = _credit(classes, "votes")
    weighted = _credit(classes, "weight")
    out: dict[tuple[str, str, str], tuple[float, float]] = {}
    for problem, value in plain.items():
        ck, ds, pid = (str(part) for part in problem)  # type: ignore[attr-defined]
        out[(ck, ds, pid)] = (float(value), float(weighted.get(problem, 0.0)))
    return out


def _shorter_half(graded: pd.DataFrame) -> pd.Series:
    """Weight 1 for a sample no longer than its problem's median response, else 0."""
    keys = [graded[k].astype(str) for k in ("checkpoint", "dataset", "problem_id")]
    length = graded["response_chars"].astype(float)
    median = length.groupby(keys).transform("median")
    return (length <= median).astype(float)
