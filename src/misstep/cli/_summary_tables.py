"""The tables of ``misstep summary`` (per-checkpoint vote metrics, answers and outcomes, and
the change from the previous checkpoint)."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from misstep.cli._error_table import ci_text as _ci
from misstep.cli._errors import data

if TYPE_CHECKING:
    from rich.table import Table

    from misstep.metrics import Change, CheckpointMetrics, Story

__all__ = ["change_cell", "fmt", "gain_cell", "summary_tables"]


def fmt(value: float | None, signed: bool = False) -> str:
    """A share with 3 decimals (``signed``: with its sign), ``n/a`` for None."""
    if value is None:
        return "n/a"  # undefined in the metrics layer (null in JSON); a note says why
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def gain_cell(value: float | None, ci: tuple[float, float] | None) -> str:
    """sc_gain with its interval; red only where the interval lies below 0 (the gain is
    negative beyond noise: ``metrics.verdict``), never for a value whose interval covers 0."""
    from misstep.metrics import verdict

    text = fmt(value, signed=True) + _ci(ci, True)
    return f"[red]{text}[/]" if value is not None and verdict(ci) == "down" else text


def _new_table(title: str, rows: list[CheckpointMetrics]) -> tuple[Table, bool]:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("checkpoint", overflow="fold")
    with_dataset = len({row.dataset for row in rows}) > 1
    if with_dataset:
        table.add_column("dataset", overflow="fold")
    return table, with_dataset


def _head(row: CheckpointMetrics, with_dataset: bool) -> list[Any]:
    return [data(row.checkpoint)] + ([data(row.dataset)] if with_dataset else [])


def _votes_table(rows: list[CheckpointMetrics], ks: list[int], story: Story) -> Table:
    """pass@k, maj@k and sc_gain@k with intervals; accuracy alone in a one-sample run."""
    if story == "one-sample":
        table, with_dataset = _new_table(
            "Accuracy per checkpoint (pass@1: share of problems answered correctly, 95% interval)",
            rows,
        )
        table.add_column("problems (count)", justify="right")
        table.add_column("accuracy (pass@1)", justify="right", overflow="fold")
        for row in rows:
            table.add_row(
                *_head(row, with_dataset),
                str(row.n_problems),
                fmt(row.pass_at_k.get(1)) + _ci(row.pass_at_k_ci.get(1)),
            )
        return table
    table, with_dataset = _new_table("Vote metrics per checkpoint (shares of problems)", rows)
    for k in ks:
        for prefix in ("pass", "maj", "sc_gain"):
            table.add_column(f"{prefix}@{k}", justify="right", overflow="fold")
    for row in rows:
        cells: list[Any] = _head(row, with_dataset)
        for k in ks:
            se = f" ±{row.maj_at_k_se[k]:.3f}" if k in row.maj_at_k_se else ""
            cells += [
                fmt(row.pass_at_k[k]) + _ci(row.pass_at_k_ci.get(k)),
                fmt(row.maj_at_k[k]) + se + _ci(row.maj_at_k_ci.get(k)),
                gain_cell(row.sc_gain_at_k[k], row.sc_gain_at_k_ci.get(k)),
            ]
        table.add_row(*cells)
    return table


def _answers_table(rows: list[CheckpointMetrics], one_sample: Collection[str]) -> Table:
    """Counts of problems, samples and outcomes; the answer statistics and majority-vote
    failures unless every row has one sample per problem (then they are not measured)."""
    votes = any(row.checkpoint not in one_sample for row in rows)
    table, with_dataset = _new_table("Answers and outcomes per checkpoint", rows)
    columns = ["problems (count)", "samples (count)"]
    if votes:
        columns += [
            "entropy (bits)",
            "top1 (share)",
            "wrong cons. (share)",
            "MV failures (count, share)",
        ]
    columns += ["correct (count)", "wrong (count)", "truncated (count)", "no answer (count)"]
    for name in columns:
        table.add_column(name, justify="right", overflow="fold")
    for row in rows:
        stats = [
            fmt(row.answer_entropy),
            fmt(row.top1_share),
            fmt(row.wrong_consistency),
            "-"
            if row.checkpoint in one_sample
            else f"{row.majority_failures} ({row.majority_failure_rate:.3f})",
        ]
        table.add_row(
            *_head(row, with_dataset),
            str(row.n_problems),
            str(row.n_samples),
            *(stats if votes else []),
            str(row.n_correct),
            str(row.n_wrong),
            str(row.n_truncated),
            str(row.n_no_answer),
        )
    return table


def _changes_table(rows: list[CheckpointMetrics], ks: list[int]) -> Table | None:
    """The paired change of pass@1 and of sc_gain@k (k > 1: sc_gain@1 is 0 by definition)
    from the previous checkpoint; None for a table of first checkpoints only."""
    changes = [row for row in rows if row.change is not None]
    if not changes:
        return None
    table, with_dataset = _new_table(
        "Change from the previous checkpoint, paired over the problems both have "
        "(percentage points, 95% interval, verdict)",
        rows,
    )
    gains = [k for k in ks if k > 1]
    table.add_column("from", overflow="fold")
    table.add_column("shared problems", justify="right")
    table.add_column("pass@1", justify="right")
    for k in gains:
        table.add_column(f"sc_gain@{k}", justify="right")
    for row in changes:
        change = row.change
        assert change is not None  # filtered above
        table.add_row(
            *_head(row, with_dataset),
            data(change.previous),
            str(change.n_shared),
            change_cell(change.pass_at_1),
            *(change_cell(change.sc_gain_at_k.get(k)) for k in gains),
        )
    return table


def summary_tables(
    rows: list[CheckpointMetrics],
    ks: list[int],
    *,
    one_sample: Collection[str] = (),
    story: Story = "votes",
) -> list[Table]:
    """The tables of ``misstep summary``: vote metrics (accuracy alone in a one-sample run),
    the change from the previous checkpoint, answers and outcomes. ``one_sample``: the
    checkpoints with one sample per problem (``metrics.one_sample_checkpoints``), whose
    majority-vote failures are shown as "-" (not measured)."""
    changes = _changes_table(rows, ks)
    tables = [_votes_table(rows, ks, story)]
    if story == "one-sample" and changes is not None:
        tables.append(changes)  # accuracy and its change lead
    tables.append(_answers_table(rows, one_sample))
    if story != "one-sample" and changes is not None:
        tables.append(changes)
    return tables


def change_cell(change: Change | None) -> str:
    """A paired change in pp with its interval and verdict; bold only beyond noise (the
    interval excludes 0: ``metrics.verdict``)."""
    if change is None:
        return "-"
    ci = "" if change.ci is None else f" [{100 * change.ci[0]:+.1f}, {100 * change.ci[1]:+.1f}]"
    text = f"{100 * change.delta:+.1f} pp{ci} {change.verdict}"
    return text if change.verdict == "within noise" else f"[bold]{text}[/]"
