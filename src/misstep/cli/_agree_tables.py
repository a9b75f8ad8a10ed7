"""The tables ``misstep agree`` prints: agreement pair by pair, over all raters, per
category and on the first error step; the disagreeing items; and, on stderr, the human-label
count and the homogeneity tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

from misstep.cli._errors import data, err_console

if TYPE_CHECKING:
    from rich.console import Console

    from misstep.agreement import AgreementReport

__all__ = ["print_homogeneity", "print_report"]

_MAX_SHOWN_DISAGREEMENTS = 20


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def print_report(console: Console, report: AgreementReport, title: str = "") -> None:
    from rich.table import Table

    pairs = Table(title=data(f"{title}agreement on error types, pair by pair"))
    for column in ("a", "b", "n", "agreement", "95% CI", "Cohen's kappa", "95% CI "):
        if column in ("a", "b"):
            pairs.add_column(column, overflow="fold")  # rater names are never cut
        else:
            pairs.add_column(column, justify="right")
    for p in report.pairs:
        pairs.add_row(
            data(p.a),
            data(p.b),
            str(p.n),
            _f(p.agreement),
            _ci(p.agreement_ci),
            _f(p.cohen_kappa),
            _ci(p.cohen_kappa_ci),
        )
    console.print(pairs)
    o = report.overall
    console.print(
        f"all {len(o.raters)} raters, {o.n_items} items: Krippendorff's alpha "
        f"{_f(o.krippendorff_alpha)} {_ci(o.krippendorff_alpha_ci)}, Fleiss' kappa "
        f"{_f(o.fleiss_kappa)} on the {o.fleiss_items} items with {o.fleiss_ratings} ratings each",
        markup=False,
    )
    for entry in report.confusion:
        table = Table(
            title=data(
                f"{title}{entry.rater} against {entry.reference}: accuracy "
                f"{_f(entry.accuracy)} {_ci(entry.accuracy_ci)} on {entry.n} items "
                "(rows: reference, columns: rater)"
            )
        )
        table.add_column("reference \\ rater")
        for category in entry.categories:
            table.add_column(data(category), justify="right")
        for category, row in zip(entry.categories, entry.counts, strict=True):
            table.add_row(data(category), *(str(v) for v in row))
        console.print(table)
        cats = Table(title=data(f"{title}{entry.rater} per category"))
        for column in ("category", "support", "precision", "recall", "F1", "95% CI", "prev ref"):
            cats.add_column(column, justify="left" if column == "category" else "right")
        cats.add_column("prev rater", justify="right")
        for row_ in report.per_category:
            if row_.rater != entry.rater:
                continue
            cats.add_row(
                data(row_.category),
                str(row_.support),
                _f(row_.precision),
                _f(row_.recall),
                _f(row_.f1),
                _ci(row_.f1_ci),
                _f(row_.prevalence_reference),
                _f(row_.prevalence_rater),
            )
        console.print(cats)
    if report.steps:
        steps = Table(title=data(f"{title}first error step"))
        for column in ("a", "b", "n", "exact", "95% CI", "acc. erroneous", "acc. error-free"):
            if column in ("a", "b"):
                steps.add_column(column, overflow="fold")  # rater names are never cut
            else:
                steps.add_column(column, justify="right")
        steps.add_column("ProcessBench F1", justify="right")
        steps.add_column("95% CI ", justify="right")
        for s in report.steps:
            steps.add_row(
                data(s.a),
                data(s.b),
                str(s.n),
                _f(s.exact_agreement),
                _ci(s.exact_agreement_ci),
                f"{_f(s.acc_erroneous)} ({s.n_erroneous})",
                f"{_f(s.acc_error_free)} ({s.n_error_free})",
                _f(s.processbench_f1),
                _ci(s.processbench_f1_ci),
            )
        console.print(steps)
    if report.disagreements:
        shown = report.disagreements[:_MAX_SHOWN_DISAGREEMENTS]
        table = Table(
            title=data(
                f"{len(report.disagreements)} disagreeing item(s)"
                + (
                    f", first {len(shown)} (all with --format json)"
                    if len(shown) < len(report.disagreements)
                    else ""
                )
            )
        )
        for column in ("trace_id", "a", "label a", "b", "label b"):
            table.add_column(column)
        for d in shown:
            table.add_row(*(data(v) for v in (d.trace_id, d.a, d.label_a, d.b, d.label_b)))
        console.print(table)
    for note in report.notes:
        console.print(f"note: {note}", markup=False)
    for group, sub in report.groups.items():
        console.rule(data(f"{report.by} = {group}"))
        print_report(console, sub, title=f"[{group}] ")


def print_homogeneity(report: AgreementReport) -> None:
    """The human-label count and the homogeneity tests, on stderr (notes, not data)."""
    if report.n_human is not None:
        err_console.print(
            f"human labels: {report.n_human} trace(s) with a consensus type", markup=False
        )
    for name, test in report.confusion_homogeneity.items():
        stat = "-" if test.statistic is None else f"G = {test.statistic:.1f}, df {test.dof}"
        err_console.print(
            f"{name}: one confusion at every checkpoint? {test.n} human labels over "
            f"{test.n_checkpoints} checkpoint(s) ({stat}): {test.meaning}",
            soft_wrap=True,
            markup=False,
        )
