"""The text output of ``misstep link``: findings, notes and the per-checkpoint tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from misstep.cli._errors import data, out_console
from misstep.cli._summary_tables import change_cell

if TYPE_CHECKING:
    from misstep.link import CheckpointSummary, LinkResult

__all__ = ["print_link"]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _pct_ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f" [{100 * ci[0]:.0f}, {100 * ci[1]:.0f}]"


def _share_ci(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")


def _vote_columns(r: LinkResult) -> tuple[list[str], list[str]]:
    """The metric keys and the columns before the error types: accuracy with its interval
    and its change in a one-sample run; else pass@1, maj@k and sc_gain@k and the
    majority-vote failures ("-" for a checkpoint with one sample per problem)."""
    if r.story == "one-sample":
        return ["pass@1"], [
            "problems",
            "accuracy (pass@1) [95% interval]",
            "change from previous (pp) [95% interval]",
        ]
    keys = ["pass@1"] + [f"{p}@{k}" for k in r.ks if k > 1 for p in ("maj", "sc_gain")]
    return keys, [*keys, "MV failures (count)"]


def _vote_cells(r: LinkResult, c: CheckpointSummary, keys: list[str]) -> list[str]:
    if r.story == "one-sample":
        first = r.checkpoints[0].checkpoint == c.checkpoint
        return [
            str(c.n_problems),
            _share_ci(c.metrics.get("pass@1"), c.metrics_ci.get("pass@1")),
            "" if first else change_cell(c.accuracy_change),
        ]
    vals = [c.metrics.get(m) for m in keys[1:]]
    pass1 = c.metrics.get("pass@1")
    return [
        "-" if pass1 is None else f"{pass1:.3f}",
        *[
            "-" if v is None else f"{v:+.3f}" if "sc_gain" in m else f"{v:.3f}"
            for m, v in zip(keys[1:], vals, strict=True)
        ],
        "-" if c.one_sample else str(c.majority_failures),
    ]


def print_link(r: LinkResult) -> None:
    """The text output of ``misstep link``: findings and notes, then the tables."""
    from rich.table import Table

    out = out_console
    out.print("[bold]Findings[/]")
    if not r.findings:
        against = "" if r.story == "one-sample" else " against sc_gain"
        out.print(f"  no error type moved{against} between consecutive checkpoints")
    for f in r.findings[:5]:
        tag = "[green]significant[/]" if f.significant else "[dim]not significant[/]"
        if f.p_value is None:
            tag = "[dim]descriptive[/]"
        out.print(f"  {f.rank}. ({tag}) ", end="")
        out.print(f.sentence, markup=False)
    for n in r.notes:
        out.print(f"  note: {n}", markup=False)
    source = {c.error_dist_source for c in r.checkpoints if c.error_dist is not None}
    which = "corrected for the judge's confusion" if source == {"corrected"} else "the judge's"
    t = Table(
        title=f"per checkpoint (error types: share of labelled wrong traces, {which}; "
        "95% interval in brackets)"
    )
    keys, vote_columns = _vote_columns(r)
    # the judge's "cannot tell" beside the shares (over the typed traces), where it said so
    abstained = any(c.n_abstained for c in r.checkpoints)
    columns = ["checkpoint", *vote_columns, "labelled (share)"]
    columns += ["not typed (count)"] if abstained else []
    columns += ["shares by (human labels)", *r.types]
    for col in columns:
        t.add_column(col, justify="left" if col == "checkpoint" else "right", overflow="fold")
    for c in r.checkpoints:
        dist = c.error_dist
        t.add_row(
            data(c.checkpoint),
            *_vote_cells(r, c, keys),
            "-" if c.labelled_share is None else f"{c.labelled_share:.2f} ({c.n_labelled})",
            *([str(c.n_abstained)] if abstained else []),
            (
                f"{c.error_dist_estimator} ({c.n_human})"
                if c.error_dist_source == "corrected"
                else "judge (uncorrected)"
            ),
            *[
                "no labels"
                if dist is None
                else "n/i"
                if dist.get(ty, 0.0) is None
                else _pct(dist.get(ty)) + _pct_ci(c.error_dist_ci.get(ty))
                for ty in r.types
            ],
        )
    out.print(t)
    s = Table(title="shifts between consecutive checkpoints (change in percentage points, pp)")
    for col in ("from", "to", "JSD (bits)", "adj. p", "largest change"):
        s.add_column(col, overflow="fold")
    for sh in r.shifts:
        big = max(sh.changes, key=lambda c: abs(c.delta), default=None)
        s.add_row(
            data(sh.before),
            data(sh.after),
            "-" if sh.jsd is None else f"{sh.jsd:.3f}",
            "-" if sh.p_value is None else f"{sh.p_value:.3g}",
            "-" if big is None else f"{big.error_type} {100 * big.delta:+.1f} pp",
        )
    out.print(s)
    if r.cause_shifts:
        causes = Table(
            title="other causes between consecutive checkpoints (paired over shared problems)"
        )
        for col in ("from", "to", "cause", "before", "after", "change [95% interval]", "adj. p"):
            causes.add_column(
                col,
                justify="left" if col in ("from", "to", "cause") else "right",
                overflow="fold",
            )
        for cs in r.cause_shifts:
            rate = cs.cause.endswith("_rate")
            scale = 100.0 if rate else 1.0
            unit = " pp" if rate else ""
            fmt = ".1f" if rate or cs.cause == "response_chars" else ".3f"
            ci = (
                ""
                if cs.ci is None
                else (f" [{scale * cs.ci[0]:+{fmt}}, {scale * cs.ci[1]:+{fmt}}]")
            )
            causes.add_row(
                data(cs.before),
                data(cs.after),
                cs.cause,
                f"{scale * cs.value_before:{fmt}}",
                f"{scale * cs.value_after:{fmt}}",
                f"{scale * cs.delta:+{fmt}}{unit}{ci}",
                "-" if cs.p_value is None else f"{cs.p_value:.3g}",
            )
        out.print(causes)
    if r.vote_transitions:
        v = Table(
            title="answer of the shared problems between consecutive checkpoints (one sample "
            "each; count)"
            if r.story == "one-sample"
            else "full-n vote of the shared problems between consecutive checkpoints (count)"
        )
        for col in ("from", "to", "right→right", "right→wrong", "wrong→right", "wrong→wrong"):
            v.add_column(col, justify="left" if col in ("from", "to") else "right", overflow="fold")
        for vt in r.vote_transitions:
            v.add_row(
                data(vt.before),
                data(vt.after),
                str(vt.right_right),
                str(vt.right_wrong),
                str(vt.wrong_right),
                str(vt.wrong_wrong),
            )
        out.print(v)
