"""The typer app. Each command group lives in its own module and registers itself here."""

from __future__ import annotations

import typer

from misstep.cli import agree, demo, label, link, summary

app = typer.Typer(
    name="misstep",
    help="Find out why a reasoning model's answers are wrong, checkpoint by checkpoint.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _module in (summary, label, agree, link, demo):
    _module.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
