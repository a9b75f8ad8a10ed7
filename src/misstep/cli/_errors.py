"""Turn misstep's errors into a one-paragraph message and an exit status, never a traceback."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from misstep.errors import MisstepError

P = ParamSpec("P")
R = TypeVar("R")

# Messages and progress go to stderr so that stdout holds data alone with --format json/csv.
err_console = Console(stderr=True, highlight=False)


def handles_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a command: a MisstepError becomes a red message on stderr and its exit code."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except MisstepError as exc:
            # Escape: messages quote user values and hints like `pip install 'misstep[vllm]'`,
            # whose brackets rich would otherwise read as markup and drop.
            err_console.print(
                f"[bold red]error:[/] {escape(exc.message)}", markup=True, soft_wrap=True
            )
            if exc.hint:
                err_console.print(
                    f"[yellow]hint:[/] {escape(exc.hint)}", markup=True, soft_wrap=True
                )
            raise typer.Exit(code=exc.exit_code) from None

    return wrapper
