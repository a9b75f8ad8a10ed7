"""The error-type table of ``misstep summary --labels`` and its notes on stderr: every type of
the run's taxonomy in its order, the judge's share and interval, and the corrected one where
people's labels correct it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from misstep.cli._errors import data, err_console

if TYPE_CHECKING:
    from rich.table import Table

    from misstep.agreement import ErrorDistribution

__all__ = ["ci_text", "error_type_table"]


def ci_text(ci: tuple[float, float] | None, signed: bool = False) -> str:
    """An interval as ` [low, high]` after a figure (3 decimals; ``signed``: with signs)."""
    if ci is None:
        return ""
    return f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if signed else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


def error_type_table(
    categories: list[str], dists: list[ErrorDistribution], *, corrected: bool
) -> Table:
    """The error-type table of ``summary --labels``: every category of the run's taxonomy in
    its order; notes go to stderr."""
    from collections import Counter

    from rich.table import Table

    title = (
        "error types of wrong traces: judge's share [95% CI] → corrected share [95% CI] (shares)"
        if corrected
        else "error types of wrong traces as the judge gives them [95% CI] (shares; uncorrected: "
        "no people's labels)"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("checkpoint", overflow="fold")
    table.add_column("dataset", overflow="fold")
    # fold, never cut: a long checkpoint name or a wide taxonomy keeps every character
    table.add_column("wrong (count)", justify="right", overflow="fold")
    table.add_column("labelled (share)", justify="right", overflow="fold")
    # the judge's "cannot tell" beside the shares, which are over the typed traces only
    abstained = any(d.n_abstained for d in dists)
    if abstained:
        table.add_column("not typed (count)", justify="right", overflow="fold")
    if corrected:
        table.add_column("corrected by (human labels)", overflow="fold")
    cats = list(categories)
    for key in cats:
        table.add_column(key, justify="right", overflow="fold")
    for d in dists:
        cells: list[str] = []
        for key in cats:
            if d.error_dist is None:
                cells.append("no labels")
                continue
            raw = d.error_dist.get(key)
            raw_ci = (d.error_dist_raw_ci or {}).get(key)
            cell = "-" if raw is None else f"{raw:.2f}{ci_text(raw_ci)}"
            if d.error_dist_corrected is not None and d.error_dist_ci is not None:
                value = d.error_dist_corrected.get(key)
                ci = d.error_dist_ci.get(key)
                cell += " → n/i" if value is None else f" → {value:.2f}{ci_text(ci)}"
                sim = (d.error_dist_sim_ci or {}).get(key)
                cell += "" if sim is None else f" sim{ci_text(sim)}"
            cells.append(cell)
        share = "-" if d.labelled_share is None else f"{d.labelled_share:.2f}"
        by = [d.made_by if d.error_dist_corrected is not None else f"none ({d.n_human})"]
        table.add_row(
            data(d.checkpoint),
            data(d.dataset),
            str(d.n_wrong),
            f"{share} ({d.n_labelled})",
            *([str(d.n_abstained)] if abstained else []),
            *(by if corrected else []),
            *cells,
        )
    not_ok = Counter[str]()
    for d in dists:
        not_ok.update({s: c for s, c in d.status_counts.items() if s not in ("ok", "abstained")})
    if any(d.n_abstained for d in dists):
        err_console.print(
            "not typed = the judge could not tell (abstained): in no share of the judge's, "
            "which are over the typed (labelled) traces"
            + ("; ppi's corrected shares are over every answered wrong trace" if corrected else ""),
            soft_wrap=True,
            markup=False,
        )
    if not_ok:
        err_console.print(
            "wrong traces without an ok label (left out of the shares): "
            + ", ".join(f"{s} {c}" for s, c in sorted(not_ok.items())),
            soft_wrap=True,
            markup=False,
        )
    if corrected:
        _estimator_notes(dists)
        missing = sorted({c for d in dists for c in d.not_identified})
        if missing:
            err_console.print(
                "n/i = not identified, no corrected share shown: "
                + ", ".join(missing)
                + " (no person gave the type, or the judge never uses the categories that "
                "would tell it apart from others)",
                soft_wrap=True,
                markup=False,
            )
    return table


def _estimator_notes(dists: list[ErrorDistribution]) -> None:
    """Say on stderr how the corrected shares were made, and what the pooled inversion's
    assumption test found."""
    used = {d.estimator for d in dists if d.error_dist_corrected is not None}
    if "ppi" in used or any(d.note for d in dists):
        err_console.print(
            "corrected shares (ppi): prediction-powered inference per checkpoint, from that "
            "checkpoint's own human labels (human consensus; ties left out) weighted by their "
            "sampling weights; 95% normal intervals with problems as clusters; valid when the "
            "judge's confusion changes between checkpoints",
            soft_wrap=True,
            markup=False,
        )
    if "pooled" in used:
        err_console.print(
            "corrected shares (pooled): least squares on the simplex through one confusion "
            "matrix pooled over all human-labelled traces; it ASSUMES the judge errs the same "
            "way at every checkpoint; 95% bootstrap intervals include the matrix's uncertainty",
            soft_wrap=True,
            markup=False,
        )
        test = next((d.homogeneity for d in dists if d.homogeneity is not None), None)
        if test is not None:
            stat = "-" if test.statistic is None else f"G = {test.statistic:.1f}, df {test.dof}"
            err_console.print(
                f"test of that assumption on {test.n} human labels over {test.n_checkpoints} "
                f"checkpoint(s) ({stat}): {test.meaning}",
                soft_wrap=True,
                markup=False,
            )
    for d in dists:
        if d.note:
            err_console.print(f"{d.checkpoint}/{d.dataset}: {d.note}", soft_wrap=True, markup=False)
