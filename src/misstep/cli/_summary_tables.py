"""The tables of ``misstep summary`` (per-checkpoint vote metrics, answers and outcomes, and
the change from the previous checkpoint)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from misstep.cli._error_table import ci_text as _ci
from misstep.cli._errors import data

if TYPE_CHECKING:
    from rich.table import Table

    from misstep.metrics import Change, CheckpointMetrics

__all__ = ["fmt", "summary_tables"]


def fmt(value: float | None, signed: bool = False) -> str:
    """A share with 3 decimals (``signed``: with its sign), ``n/a`` for None."""
    if value is None:
        return "n/a"  # undefined in the metrics layer (null in JSON); a note says why
    text = f"{value:+.3f}" if signed else f"{value:.3f}"
    if signed and value < 0:
        return f"[red]{text}[/]"
    return text


def _new_table(title: str, rows: list[CheckpointMetrics]) -> tuple[Table, bool]:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("checkpoint", overflow="fold")
    with_dataset = len({row.dataset for row in rows}) > 1
    if with_dataset:
        table.add_column("dataset", overflow="fold")
    return table, with_dataset


def summary_tables(rows: list[CheckpointMetrics], ks: list[int]) -> list[Table]:
    """The tables of ``misstep summary``: vote metrics, answers and outcomes, changes."""
    votes, with_dataset = _new_table("Vote metrics per checkpoint (shares of problems)", rows)
    for k in ks:
        for prefix in ("pass", "maj", "sc_gain"):
            votes.add_column(f"{prefix}@{k}", justify="right", overflow="fold")
    answers, _ = _new_table("Answers and outcomes per checkpoint", rows)
    columns = (
        "problems (count)",
        "samples (count)",
        "entropy (bits)",
        "top1 (share)",
        "wrong cons. (share)",
        "MV failures (count, share)",
        "correct (count)",
        "wrong (count)",
        "truncated (count)",
        "no answer (count)",
    )
    for name in columns:
        answers.add_column(name, justify="right", overflow="fold")
    for row in rows:
        head = [data(row.checkpoint)] + ([data(row.dataset)] if with_dataset else [])
        cells: list[Any] = list(head)
        for k in ks:
            se = f" ±{row.maj_at_k_se[k]:.3f}" if k in row.maj_at_k_se else ""
            cells += [
                fmt(row.pass_at_k[k]) + _ci(row.pass_at_k_ci.get(k)),
                fmt(row.maj_at_k[k]) + se + _ci(row.maj_at_k_ci.get(k)),
                fmt(row.sc_gain_at_k[k], signed=True) + _ci(row.sc_gain_at_k_ci.get(k), True),
            ]
        votes.add_row(*cells)
        answers.add_row(
            *head,
            str(row.n_problems),
            str(row.n_samples),
            fmt(row.answer_entropy),
            fmt(row.top1_share),
            fmt(row.wrong_consistency),
            f"{row.majority_failures} ({row.majority_failure_rate:.3f})",
            str(row.n_correct),
            str(row.n_wrong),
            str(row.n_truncated),
            str(row.n_no_answer),
        )
    tables = [votes, answers]
    changes = [row for row in rows if row.change is not None]
    if changes:
        table, _ = _new_table(
            "Change from the previous checkpoint, paired over the problems both have "
            "(percentage points, 95% interval, verdict)",
            rows,
        )
        table.add_column("from", overflow="fold")
        table.add_column("shared problems", justify="right")
        table.add_column("pass@1", justify="right")
        for k in ks:
            table.add_column(f"sc_gain@{k}", justify="right")
        for row in changes:
            change = row.change
            assert change is not None  # filtered above
            head = [data(row.checkpoint)] + ([data(row.dataset)] if with_dataset else [])
            table.add_row(
                *head,
                data(change.previous),
                str(change.n_shared),
                _change_cell(change.pass_at_1),
                *(_change_cell(change.sc_gain_at_k.get(k)) for k in ks),
            )
        tables.append(table)
    return tables


def _change_cell(change: Change | None) -> str:
    if change is None:
        return "-"
    ci = "" if change.ci is None else f" [{100 * change.ci[0]:+.1f}, {100 * change.ci[1]:+.1f}]"
    text = f"{100 * change.delta:+.1f} pp{ci} {change.verdict}"
    return text if change.verdict == "within noise" else f"[bold]{text}[/]"
