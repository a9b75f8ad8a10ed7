"""CLI: ``misstep cache list`` and ``misstep cache clear``, the graded-table cache."""

from __future__ import annotations

import typer

from misstep.cli._errors import data, err_console, handles_errors, out_console, quote

cache_app = typer.Typer(
    name="cache",
    help="The graded-table cache (under $XDG_CACHE_HOME/misstep, else ~/.cache/misstep).",
    no_args_is_help=True,
)


@cache_app.command("list")
@handles_errors
def list_cache() -> None:
    """List the cached graded tables, newest first."""
    from rich.table import Table

    from misstep.rollouts import cache_entries, default_cache_dir

    entries = cache_entries()
    table = Table(title=f"graded tables cached in {default_cache_dir()}", title_justify="left")
    for column in ("created (UTC)", "input", "sha256", "format", "regrade", "rows", "MB"):
        table.add_column(column, justify="right" if column in ("rows", "MB") else "left")
    for e in entries:
        table.add_row(
            e.created_at,
            data(e.input_path),
            e.input_sha256[:12],
            e.input_format or "inferred",
            "yes" if e.regrade else "no",
            f"{e.rows:,}",
            f"{e.bytes / 1e6:.1f}",
        )
    out_console.print(table)
    err_console.print(f"{len(entries)} cached table(s)")


@cache_app.command("clear")
@handles_errors
def clear() -> None:
    """Delete every cached graded table and the review app's cached trace texts."""
    from misstep.review import clear_text_cache
    from misstep.rollouts import clear_cache, default_cache_dir

    removed = clear_cache() + clear_text_cache()
    err_console.print(f"removed {removed} file(s) from {quote(default_cache_dir())}")


def register(app: typer.Typer) -> None:
    """Add the ``cache`` group to the app."""
    app.add_typer(cache_app)
