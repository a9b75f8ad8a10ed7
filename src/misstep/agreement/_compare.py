"""Judges against people, as ``misstep agree`` compares them: every rater gathered from loaded
label runs and people's labels (``gather_raters``), then the agreement report with, per judge
run, the test of one confusion at every checkpoint (``compare_raters``). Nothing is read here:
the caller loads the runs and the people's labels."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from misstep.agreement._agreement import AgreementReport, Rating, agreement_report
from misstep.agreement._errordist import ok_types
from misstep.agreement._homogeneity import confusion_homogeneity
from misstep.agreement._labelled import LabelledRun
from misstep.agreement._raters import human_raters, judge_raters
from misstep.errors import AnalysisError
from misstep.labels import ADJUDICATOR, HumanLabel, human_consensus

__all__ = ["Raters", "compare_raters", "gather_raters"]


@dataclass
class Raters:
    """Every rater of one comparison: people by annotator, each judge run's judge."""

    ratings: dict[str, dict[str, Rating]]
    """rater -> trace_id -> rating; people first, then the judges."""
    judge_runs: dict[str, LabelledRun]
    """The raters that are judges (a judge id, with ``@RUN`` when a person has that name),
    each with the run its labels come from."""
    people: list[HumanLabel]
    """People's labels, adjudications included."""
    groups: dict[str, str] = field(default_factory=dict)
    """trace_id -> its group under ``by`` (from the judges' labels; the caller may add more,
    from the traces)."""
    left_out: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    """Per judge run with labels that are not ok (they rate nothing): (run, status -> count)."""

    @property
    def judges(self) -> list[str]:
        """The raters that are judges, in the order of their runs."""
        return list(self.judge_runs)


def gather_raters(
    people: Sequence[HumanLabel], runs: Sequence[LabelledRun], *, by: str | None = None
) -> Raters:
    """People's ratings ({annotator: {trace_id: rating}}, a later label of a trace replacing an
    earlier one) and each run's ok labels as its judge's (a name people use too gets
    ``@RUN``); with ``by`` (``checkpoint`` or ``dataset``) each judged trace's group from its
    label."""
    ratings = human_raters(people)
    raters = Raters(ratings=ratings, judge_runs={}, people=list(people))
    for labelled in runs:
        stored = labelled.records
        found, status = judge_raters(stored)
        not_ok = {s: c for s, c in status.items() if s != "ok" and c}
        if not_ok:
            raters.left_out.append((str(labelled.labels_path), not_ok))
        for name, rated in found.items():
            unique = name if name not in ratings else f"{name}@{labelled.labels_path}"
            ratings[unique] = rated
            raters.judge_runs[unique] = labelled
        if by is not None:
            for trace_id, label in stored.items():
                value = label.checkpoint if by == "checkpoint" else label.dataset
                if value is not None:
                    raters.groups[trace_id] = value
    return raters


def compare_raters(
    raters: Raters,
    *,
    categories: Sequence[str],
    by: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> AgreementReport:
    """The agreement report of ``raters`` (repeated per group of ``raters.groups`` with
    ``by``), with how many traces have a human consensus type and, per judge run, the test of
    one confusion at every checkpoint (what ``--estimator pooled`` assumes). AnalysisError with
    fewer than two raters, or no trace rated by two."""
    names = list(raters.ratings)
    if len(names) < 2:
        raise AnalysisError(
            f"agreement needs at least two raters; found {len(names)}: "
            + (", ".join(names) or "none"),
            hint="pass labels of two or more annotators, or add --labels RUN_DIR",
        )
    report = agreement_report(
        raters.ratings,
        judges=raters.judges,
        categories=categories,
        by=by,
        groups=raters.groups if by is not None else None,
        n_boot=n_boot,
        seed=seed,
    )
    if not report.pairs and not report.steps:
        raise AnalysisError(
            "no trace is labelled by two raters: nothing to compare",
            hint="check that the files' trace_id values match",
        )
    _add_homogeneity(report, raters, raters.groups if by == "checkpoint" else {})
    return report


def _add_homogeneity(report: AgreementReport, raters: Raters, checkpoints: dict[str, str]) -> None:
    """How many human labels the figures rest on, and per judge run the test of one
    confusion at every checkpoint."""
    # agree reports agreement as it was before adjudication: its figures and this count rest on
    # people's own labels alone.
    own = [p for p in raters.people if p.role != ADJUDICATOR]
    agreed = human_consensus(own) if own else None
    report.n_human = len(agreed.types) if agreed is not None else 0
    if agreed is None:
        return
    for name, labelled in raters.judge_runs.items():
        stored = labelled.records
        judged = ok_types(stored)
        ck = {t: lab.checkpoint for t, lab in stored.items() if lab.checkpoint is not None}
        ck.update(checkpoints)
        shared = sorted(t for t in agreed.types if t in judged and t in ck)
        if shared:
            report.confusion_homogeneity[name] = confusion_homogeneity(
                [ck[t] for t in shared],
                [agreed.types[t] for t in shared],
                [judged[t] for t in shared],
            )
