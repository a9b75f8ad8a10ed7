"""The typer app. Each command group lives in its own module and registers itself here.

Only typer, rich and the option declarations load before a command runs, so that
``misstep --help`` is fast; every command imports what it needs inside its body."""

from __future__ import annotations

from typing import Annotated

import typer

from misstep.cli import (
    agree,
    batch,
    cache,
    compare,
    demo,
    discover,
    label,
    link,
    review,
    select,
    summary,
    voting,
)

app = typer.Typer(
    name="misstep",
    help="Find out why a reasoning model's answers are wrong, checkpoint by checkpoint.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from misstep import __version__

        typer.echo(f"misstep {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            metavar="",
            callback=_version,
            is_eager=True,
            help="Print misstep's version.",
        ),
    ] = False,
) -> None:
    """Find out why a reasoning model's answers are wrong, checkpoint by checkpoint."""


for _module in (
    summary,
    voting,
    compare,
    label,
    batch,
    select,
    agree,
    link,
    discover,
    review,
    demo,
    cache,
):
    _module.register(app)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    finally:
        # The interpreter's last garbage collection walks every object that pandas, pyarrow,
        # pydantic and sympy made (0.1-0.2 s of a 1 s command); frozen objects are skipped.
        # Only cyclic garbage goes unfinalised: no file is left open in a cycle (every command
        # writes through context managers), and atexit handlers and weakref finalizers run.
        import gc

        gc.freeze()
