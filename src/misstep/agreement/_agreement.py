"""The agreement report: every pair of raters, all raters together, per category against the
human consensus, first-error steps, disagreeing items, and all of it again per group.

Items pair up by trace id. Type metrics use the items a rater gave an ``error_type``; step
metrics use the items whose first error step is known (a step, or "no error"). Agreement is
unweighted: it describes the labelled sample itself, sampling weights are not applied.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import numpy.typing as npt
import orjson
from pydantic import BaseModel, Field

from misstep.agreement._cohen import cohen_kappa, kappa_from_confusions
from misstep.agreement._confusion import confusion_counts, consensus, per_category_scores
from misstep.agreement._fleiss import fleiss_kappa_of
from misstep.agreement._homogeneity import Homogeneity
from misstep.agreement._krippendorff import (
    alpha_from_coincidences,
    item_coincidences,
    krippendorff_alpha,
)
from misstep.agreement._steps import step_scores
from misstep.labels import majority_labels
from misstep.metrics import DEFAULT_N_BOOT, DEFAULT_SEED, LEVEL, percentile_ci, resample_counts

__all__ = [
    "AgreementReport",
    "CategoryRow",
    "ConfusionEntry",
    "Disagreement",
    "OverallAgreement",
    "PairAgreement",
    "Rating",
    "StepAgreement",
    "agreement_report",
]

_NO_ERROR = "no error"

CI = tuple[float, float] | None


@dataclass(frozen=True)
class Rating:
    """One rater's label of one item."""

    error_type: str | None = None
    """A taxonomy key; None when the rater gave no type."""
    first_error_step: int | None = None
    """0-based first wrong step; None for none or unknown (see ``has_error``)."""
    has_error: bool | None = None
    """False: the rater says the trace has no error; None: not said."""

    @property
    def step(self) -> int | str | None:
        """The step for step agreement: an index, ``"no error"``, or None when unknown."""
        if self.has_error is False:
            return _NO_ERROR
        return self.first_error_step


def _num(value: float | np.floating | None) -> float | None:
    if value is None:
        return None
    out = float(value)
    return None if math.isnan(out) else out


def _ci(replicates: npt.NDArray[np.float64], level: float) -> CI:
    return percentile_ci(replicates, level) if replicates.size else None


class PairAgreement(BaseModel):
    """Agreement on error types between two raters on the items both typed."""

    a: str
    """First rater."""
    b: str
    """Second rater."""
    n: int
    """Items both raters gave an error type."""
    agreement: float | None
    """Share of those items with the same type."""
    agreement_ci: CI
    """Bootstrap 95% interval of ``agreement``."""
    cohen_kappa: float | None
    """Cohen's kappa; None when undefined."""
    cohen_kappa_ci: CI
    """Bootstrap 95% interval of ``cohen_kappa``."""
    krippendorff_alpha: float | None = None
    """Krippendorff's alpha (nominal) of the two on the same items. Kappa takes chance
    agreement from each rater's own type shares, alpha from the two pooled: when their shares
    differ a lot the two figures part (a note says so)."""


class OverallAgreement(BaseModel):
    """All raters together."""

    raters: list[str]
    """Every rater, in report order."""
    n_items: int
    """Items with at least two type ratings (the ones alpha can use)."""
    krippendorff_alpha: float | None
    """Nominal Krippendorff's alpha, missing ratings allowed."""
    krippendorff_alpha_ci: CI
    """Bootstrap 95% interval of alpha (items resampled)."""
    fleiss_kappa: float | None
    """Fleiss' kappa over the ``fleiss_items`` items typed by ``fleiss_ratings`` raters each
    (Fleiss' kappa needs the same number of ratings per item, not the same raters); None when
    no item has two ratings."""
    fleiss_items: int = 0
    """Items behind Fleiss' kappa."""
    fleiss_ratings: int = 0
    """Ratings per item behind Fleiss' kappa: the most common number (>= 2) among the items
    (ties: more items, then more ratings)."""


class CategoryRow(BaseModel):
    """One category's scores of a rater against the reference (the human consensus)."""

    rater: str
    """The rater scored (a judge, or a person against the other people)."""
    reference: str
    """Whose consensus is the reference."""
    category: str
    """Taxonomy key."""
    support: int
    """Items the reference puts in this category."""
    precision: float | None
    """Of the rater's items in this category, the share the reference agrees with."""
    recall: float | None
    """Of the reference's items in this category, the share the rater finds."""
    f1: float | None
    """Harmonic mean of precision and recall."""
    f1_ci: CI
    """Bootstrap 95% interval of ``f1``."""
    prevalence_reference: float | None
    """Share of items the reference puts in this category."""
    prevalence_rater: float | None
    """Share of items the rater puts in this category."""


class ConfusionEntry(BaseModel):
    """Confusion matrix of a rater against the reference: rows reference, columns rater."""

    rater: str
    """The rater scored."""
    reference: str
    """Whose consensus is the reference."""
    categories: list[str]
    """Row and column order."""
    counts: list[list[int]]
    """Item counts."""
    row_normalised: list[list[float | None]]
    """Each row divided by its sum (None for an empty row): P(rater says j | reference t)."""
    n: int
    """Items with both a consensus and a rating."""
    accuracy: float | None
    """Share of items on the diagonal."""
    accuracy_ci: CI
    """Bootstrap 95% interval of ``accuracy``."""
    ties_dropped: int
    """Items left out because the reference's labels tied (no majority)."""


class StepAgreement(BaseModel):
    """Agreement on the first error step between two raters (None = no error)."""

    a: str
    """Reference rater."""
    b: str
    """Rater compared with it."""
    n: int
    """Items where both give a step or say "no error"."""
    exact_agreement: float | None
    """Share with the same step (both "no error" agrees)."""
    exact_agreement_ci: CI
    """Bootstrap 95% interval."""
    n_erroneous: int
    """Items ``a`` says have an error."""
    n_error_free: int
    """Items ``a`` says are error-free."""
    acc_erroneous: float | None
    """On ``a``'s erroneous items, share where ``b`` gives the same step."""
    acc_error_free: float | None
    """On ``a``'s error-free items, share where ``b`` also says error-free."""
    processbench_f1: float | None
    """Harmonic mean of the two accuracies; None without both kinds of item."""
    processbench_f1_ci: CI
    """Bootstrap 95% interval."""


class Disagreement(BaseModel):
    """An item two raters typed differently."""

    trace_id: str
    """The item."""
    a: str
    """First rater."""
    b: str
    """Second rater."""
    label_a: str
    """First rater's type."""
    label_b: str
    """Second rater's type."""


class AgreementReport(BaseModel):
    """Everything ``misstep agree`` reports; ``to_json`` is its ``--format json``."""

    pairs: list[PairAgreement]
    """Every pair of raters."""
    overall: OverallAgreement
    """All raters together."""
    per_category: list[CategoryRow]
    """Per category, each judge (or, with no judge, each person) against the consensus."""
    confusion: list[ConfusionEntry]
    """Confusion matrices behind ``per_category``."""
    steps: list[StepAgreement] = Field(default_factory=list)
    """First-error-step agreement for every pair with shared step labels."""
    disagreements: list[Disagreement] = Field(default_factory=list)
    """Items typed differently, per pair (left out inside ``groups``)."""
    groups: dict[str, AgreementReport] = Field(default_factory=dict)
    """The same report per ``by`` group."""
    by: str | None = None
    """What ``groups`` splits by (e.g. ``checkpoint``)."""
    n_boot: int = DEFAULT_N_BOOT
    """Bootstrap resamples behind every interval."""
    seed: int = DEFAULT_SEED
    """Seed of the bootstrap."""
    notes: list[str] = Field(default_factory=list)
    """What was left out and why."""
    n_human: int | None = None
    """Traces with a human consensus type behind the figures (set by ``misstep agree``)."""
    confusion_homogeneity: dict[str, Homogeneity] = Field(default_factory=dict)
    """Per judge: the test of one confusion at every checkpoint (the ``pooled`` estimator's
    assumption) on the human-labelled traces (set by ``misstep agree``)."""

    def to_json(self) -> str:
        """The report as one JSON object."""
        return orjson.dumps(self.model_dump(mode="json"), option=orjson.OPT_INDENT_2).decode()


def _types(ratings: Mapping[str, Rating]) -> dict[str, str]:
    return {t: r.error_type for t, r in ratings.items() if r.error_type is not None}


def _pair(
    a: str,
    b: str,
    la: dict[str, str],
    lb: dict[str, str],
    n_boot: int,
    seed: int,
    cats: list[str],
    level: float,
) -> tuple[PairAgreement, list[Disagreement], str | None]:
    items = sorted(set(la) & set(lb))
    xa = [la[t] for t in items]
    xb = [lb[t] for t in items]
    diffs = [
        Disagreement(trace_id=t, a=a, b=b, label_a=x, label_b=y)
        for t, x, y in zip(items, xa, xb, strict=True)
        if x != y
    ]
    if not items:
        empty = PairAgreement(
            a=a,
            b=b,
            n=0,
            agreement=None,
            agreement_ci=None,
            cohen_kappa=None,
            cohen_kappa_ci=None,
        )
        return empty, diffs, None
    same = np.array([x == y for x, y in zip(xa, xb, strict=True)], dtype=np.float64)
    counts = resample_counts(len(items), n_boot, np.random.default_rng(seed))
    index = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    cells = np.array([index[x] * k + index[y] for x, y in zip(xa, xb, strict=True)])
    onehot = np.zeros((len(items), k * k))
    onehot[np.arange(len(items)), cells] = 1.0
    boot_conf = (counts @ onehot).reshape(n_boot, k, k)
    pair = PairAgreement(
        a=a,
        b=b,
        n=len(items),
        agreement=float(same.mean()),
        agreement_ci=_ci(counts @ same / len(items), level),
        cohen_kappa=cohen_kappa(xa, xb),
        cohen_kappa_ci=_ci(kappa_from_confusions(boot_conf), level),
        krippendorff_alpha=krippendorff_alpha([xa, xb]),
    )
    return pair, diffs, _kappa_alpha_note(pair, xa, xb)


KAPPA_ALPHA_GAP = 0.1
"""A pair's kappa and alpha this far apart or more get a note saying why."""


def _kappa_alpha_note(pair: PairAgreement, xa: list[str], xb: list[str]) -> str | None:
    """Why a pair's Cohen's kappa and Krippendorff's alpha differ, when they are
    ``KAPPA_ALPHA_GAP`` or more apart and their chance agreements (each rater's own shares
    against the pooled ones) set them so: kappa against Scott's pi, which is alpha without its
    small-sample correction (on a handful of items that correction alone moves alpha, and
    says nothing of the shares)."""
    kappa, alpha = pair.cohen_kappa, pair.krippendorff_alpha
    if kappa is None or alpha is None or abs(kappa - alpha) < KAPPA_ALPHA_GAP:
        return None
    ca, cb = Counter(xa), Counter(xb)
    n = len(xa)
    observed = sum(x == y for x, y in zip(xa, xb, strict=True)) / n
    pooled = sum(((ca[c] + cb[c]) / (2 * n)) ** 2 for c in set(ca) | set(cb))
    if pooled >= 1 or abs(kappa - (observed - pooled) / (1 - pooled)) < KAPPA_ALPHA_GAP:
        return None
    widest = max(sorted(set(ca) | set(cb)), key=lambda c: abs(ca[c] - cb[c]))
    return (
        f"{pair.a} vs {pair.b}: Cohen's kappa {kappa:.3f} but Krippendorff's alpha "
        f"{alpha:.3f} on the same {n} items: their type shares differ ({widest}: "
        f"{ca[widest] / n:.0%} for {pair.a}, {cb[widest] / n:.0%} for {pair.b})"
    )


KAPPA_ALPHA_WHY = (
    "why kappa and alpha differ: Cohen's kappa takes the agreement expected by chance from "
    "each rater's own type shares, Krippendorff's alpha from the two pooled; where two raters' "
    "shares differ a lot, kappa credits agreement that alpha counts as chance. Read kappa as "
    "agreement given each rater's habits, alpha as agreement on the types themselves"
)
"""Said once after the notes of the pairs whose kappa and alpha part."""


def _overall(
    raters: list[str],
    typed: dict[str, dict[str, str]],
    cats: list[str],
    n_boot: int,
    seed: int,
    level: float,
) -> OverallAgreement:
    items = sorted({t for labels in typed.values() for t in labels})
    matrix = [[typed[r].get(t) for t in items] for r in raters]
    index = {c: i for i, c in enumerate(cats)}
    codes = np.array(
        [[index[typed[r][t]] if t in typed[r] else -1 for r in raters] for t in items],
        dtype=np.int64,
    ).reshape(len(items), len(raters))
    per_item = item_coincidences(codes, len(cats))
    pairable = (codes >= 0).sum(axis=1) >= 2
    per_item = per_item[pairable]
    alpha_ci: CI = None
    if per_item.shape[0]:
        counts = resample_counts(per_item.shape[0], n_boot, np.random.default_rng(seed))
        boot = (counts @ per_item.reshape(per_item.shape[0], -1)).reshape(
            n_boot, *per_item.shape[1:]
        )
        alpha_ci = _ci(alpha_from_coincidences(boot), level)
    # Fleiss' kappa needs the same number of ratings on every item (the raters may differ):
    # the items with the most common number of ratings, two or more.
    all_rows = [[typed[r][t] for r in raters if t in typed[r]] for t in items]
    sizes = Counter(len(row) for row in all_rows if len(row) >= 2)
    width = max(sizes, key=lambda m: (sizes[m], m)) if sizes else 0
    rows = [row for row in all_rows if len(row) == width]
    return OverallAgreement(
        raters=raters,
        n_items=int(pairable.sum()),
        krippendorff_alpha=krippendorff_alpha(matrix),
        krippendorff_alpha_ci=alpha_ci,
        fleiss_kappa=fleiss_kappa_of(rows),
        fleiss_items=len(rows),
        fleiss_ratings=width,
    )


def _against_consensus(
    rater: str,
    reference: str,
    labels: dict[str, str],
    agreed: dict[str, str],
    ties: int,
    cats: list[str],
    n_boot: int,
    seed: int,
    level: float,
) -> tuple[ConfusionEntry, list[CategoryRow]]:
    items = sorted(set(labels) & set(agreed))
    ref = [agreed[t] for t in items]
    got = [labels[t] for t in items]
    k = len(cats)
    conf = confusion_counts(ref, got, cats)
    scores = per_category_scores(conf)
    acc_ci: CI = None
    f1_cis: list[CI] = [None] * k
    if items:
        index = {c: i for i, c in enumerate(cats)}
        onehot = np.zeros((len(items), k * k))
        onehot[
            np.arange(len(items)), [index[x] * k + index[y] for x, y in zip(ref, got, strict=True)]
        ] = 1.0
        counts = resample_counts(len(items), n_boot, np.random.default_rng(seed))
        boot = per_category_scores((counts @ onehot).reshape(n_boot, k, k))
        acc_ci = _ci(boot.accuracy, level)
        f1_cis = [_ci(boot.f1[:, i], level) for i in range(k)]
    row_sums = conf.sum(axis=1)
    entry = ConfusionEntry(
        rater=rater,
        reference=reference,
        categories=cats,
        counts=conf.astype(int).tolist(),
        row_normalised=[
            [float(v / s) for v in row] if s > 0 else [None] * k
            for row, s in zip(conf, row_sums, strict=True)
        ],
        n=len(items),
        accuracy=_num(scores.accuracy) if items else None,
        accuracy_ci=acc_ci,
        ties_dropped=ties,
    )
    rows = [
        CategoryRow(
            rater=rater,
            reference=reference,
            category=c,
            support=int(row_sums[i]),
            precision=_num(scores.precision[i]),
            recall=_num(scores.recall[i]),
            f1=_num(scores.f1[i]),
            f1_ci=f1_cis[i],
            prevalence_reference=_num(scores.prevalence_reference[i]),
            prevalence_rater=_num(scores.prevalence_rater[i]),
        )
        for i, c in enumerate(cats)
    ]
    return entry, rows


def _steps(
    a: str,
    b: str,
    ra: Mapping[str, Rating],
    rb: Mapping[str, Rating],
    n_boot: int,
    seed: int,
    level: float,
) -> StepAgreement | None:
    sa = {t: r.step for t, r in ra.items() if r.step is not None}
    sb = {t: r.step for t, r in rb.items() if r.step is not None}
    items = sorted(set(sa) & set(sb))
    if not items:
        return None
    ref = [None if sa[t] == _NO_ERROR else sa[t] for t in items]
    got = [None if sb[t] == _NO_ERROR else sb[t] for t in items]
    point = step_scores(ref, got)  # type: ignore[arg-type]
    counts = resample_counts(len(items), n_boot, np.random.default_rng(seed))
    boot = step_scores(ref, got, counts)  # type: ignore[arg-type]
    has_both = point.n_erroneous > 0 and point.n_correct > 0
    return StepAgreement(
        a=a,
        b=b,
        n=len(items),
        exact_agreement=_num(point.exact[0]),
        exact_agreement_ci=_ci(boot.exact, level),
        n_erroneous=point.n_erroneous,
        n_error_free=point.n_correct,
        acc_erroneous=_num(point.acc_erroneous[0]),
        acc_error_free=_num(point.acc_correct[0]),
        processbench_f1=_num(point.f1[0]) if has_both else None,
        processbench_f1_ci=_ci(boot.f1, level) if has_both else None,
    )


def _consensus_steps(
    raters: Mapping[str, Mapping[str, Rating]], people: Sequence[str]
) -> tuple[dict[str, Rating], list[str]]:
    """Per trace, the first error step most of ``people`` give (a step, or "no error"; a
    person who gives neither does not vote), as a Rating; traces whose most frequent answers
    tie are listed instead."""
    votes = {
        p: {t: str(r.step) for t, r in raters[p].items() if r.step is not None} for p in people
    }
    agreed, tied = majority_labels(votes)
    ratings = {
        t: Rating(has_error=False)
        if step == _NO_ERROR
        else Rating(first_error_step=int(step), has_error=True)
        for t, step in agreed.items()
    }
    return ratings, tied


def _steps_against_consensus(
    raters: Mapping[str, Mapping[str, Rating]],
    humans: list[str],
    judges: list[str],
    n_boot: int,
    seed: int,
    level: float,
    notes: list[str],
) -> list[StepAgreement]:
    """Each judge's first-step agreement with the people's consensus step when there are
    several people: ProcessBench's F1 needs erroneous and error-free traces together, and
    they often come from different annotators (Mr-Ben's error-free traces carry another id
    than its two annotators'), so no single pair has both."""
    if len(humans) < 2:
        return []  # the one person's pair row is the consensus already
    agreed, tied = _consensus_steps(raters, humans)
    reference = "consensus(" + ",".join(humans) + ")"
    out: list[StepAgreement] = []
    for judge in judges:
        row = _steps(reference, judge, agreed, raters[judge], n_boot, seed, level)
        if row is not None:
            out.append(row)
            if tied:
                notes.append(
                    f"{len(tied)} item(s) whose people give different first error steps, as "
                    f"many each, were left out of {judge}'s step scores against {reference}"
                )
    return out


def _report(
    raters: dict[str, dict[str, Rating]],
    judges: list[str],
    cats: list[str],
    n_boot: int,
    seed: int,
    level: float,
    with_disagreements: bool,
) -> AgreementReport:
    names = list(raters)
    typed = {r: _types(raters[r]) for r in names}
    pairs: list[PairAgreement] = []
    diffs: list[Disagreement] = []
    steps: list[StepAgreement] = []
    notes: list[str] = []
    for a, b in combinations(names, 2):
        pair, d, note = _pair(a, b, typed[a], typed[b], n_boot, seed, cats, level)
        if pair.n:  # a pair with no shared item says nothing: left out
            pairs.append(pair)
        if note is not None:
            notes.append(note)
        if with_disagreements:
            diffs.extend(d)
        # The human side is the reference for step accuracies when one side is a judge.
        ref, other = (b, a) if a in judges and b not in judges else (a, b)
        step = _steps(ref, other, raters[ref], raters[other], n_boot, seed, level)
        if step is not None:
            steps.append(step)
    if notes:
        notes.append(KAPPA_ALPHA_WHY)
    humans = [r for r in names if r not in judges]
    evaluated = judges if judges else humans
    steps.extend(_steps_against_consensus(raters, humans, judges, n_boot, seed, level, notes))
    confusion: list[ConfusionEntry] = []
    per_category: list[CategoryRow] = []
    for rater in evaluated:
        refs = [h for h in humans if h != rater]
        if not refs:
            continue
        agreed, tied = consensus({h: typed[h] for h in refs})
        reference = refs[0] if len(refs) == 1 else "consensus(" + ",".join(refs) + ")"
        entry, rows = _against_consensus(
            rater, reference, typed[rater], agreed, len(tied), cats, n_boot, seed, level
        )
        confusion.append(entry)
        per_category.extend(rows)
        if tied:
            notes.append(
                f"{len(tied)} item(s) without a majority among {reference} were left out of "
                f"{rater}'s per-category scores"
            )
    return AgreementReport(
        pairs=pairs,
        overall=_overall(names, typed, cats, n_boot, seed, level),
        per_category=per_category,
        confusion=confusion,
        steps=steps,
        disagreements=diffs,
        n_boot=n_boot,
        seed=seed,
        notes=notes,
    )


def agreement_report(
    raters: Mapping[str, Mapping[str, Rating | str]],
    *,
    judges: Collection[str] = (),
    categories: Sequence[str] | None = None,
    by: str | None = None,
    groups: Mapping[str, str] | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    level: float = LEVEL,
) -> AgreementReport:
    """Agreement among raters ({rater: {trace_id: Rating or error type}}).

    ``judges`` names the raters that are judges: they are scored per category against the
    majority of the others (the people); with no judge, each person is scored against the
    others. ``categories`` fixes the confusion matrices' order (the taxonomy's keys); labels
    outside it are appended. ``groups`` maps trace ids to a group (e.g. their checkpoint) and
    repeats the report per group under ``by``. Intervals are seeded percentile bootstraps
    over items with ``n_boot`` resamples.
    """
    norm: dict[str, dict[str, Rating]] = {
        name: {
            t: (r if isinstance(r, Rating) else Rating(error_type=r)) for t, r in ratings.items()
        }
        for name, ratings in raters.items()
    }
    seen = sorted({r.error_type for rs in norm.values() for r in rs.values() if r.error_type})
    cats = list(categories or []) + [c for c in seen if c not in (categories or [])]
    judge_list = [j for j in norm if j in set(judges)]
    report = _report(norm, judge_list, cats, n_boot, seed, level, with_disagreements=True)
    if groups is not None:
        report.by = by
        for group in sorted({groups[t] for rs in norm.values() for t in rs if t in groups}):
            sub = {
                name: {t: r for t, r in rs.items() if groups.get(t) == group}
                for name, rs in norm.items()
            }
            report.groups[group] = _report(
                sub, judge_list, cats, n_boot, seed, level, with_disagreements=False
            )
    return report
