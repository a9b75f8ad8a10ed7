"""Turn misstep's errors into a one-paragraph message and an exit status, never a traceback;
and the two consoles: data on stdout, messages and progress on stderr."""

from __future__ import annotations

import functools
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from misstep.errors import MisstepError, OptionError, OutputError

if TYPE_CHECKING:
    from rich.progress import Progress

__all__ = [
    "FIELD_FLAGS",
    "data",
    "err_console",
    "flag_of",
    "handles_errors",
    "out_console",
    "quote",
    "stage_progress",
    "writing",
]

P = ParamSpec("P")
R = TypeVar("R")

# Messages and progress go to stderr so that stdout holds data alone with --format json/csv.
err_console = Console(stderr=True, highlight=False)
# Tables are wide: never narrower than 200 columns, so piped output keeps every figure whole.
out_console = Console(highlight=False, width=max(shutil.get_terminal_size((200, 24)).columns, 200))


def stage_progress(verb: str) -> Progress:
    """A bar on stderr for a step that runs in named stages (``verb``, then done/total and
    the stage's name as the task's description); rich's progress is imported on use."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    return Progress(
        TextColumn(verb),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        console=err_console,
        transient=True,
    )


def data(value: object) -> Text:
    """A table cell holding a value from the input, printed exactly as written (never markup)."""
    return Text(str(value))


def quote(value: object) -> str:
    """A path or name for a message printed with markup: escaped, so it shows as written."""
    return escape(str(value))


FIELD_FLAGS: dict[str, str] = {
    "backend": "--judge",
    "deadline_s": "--deadline",
    "engine_args": "--engine-arg",
    "extra_base_urls": "--base-url",
    "fmt": "--format",
    "ks": "--k",
    "taxonomy_path": "--taxonomy",
    "timeout_s": "--timeout",
}
"""The fields whose flag is not their name with dashes (``max_tokens``: ``--max-tokens``;
``n_boot``: ``--n-boot``): domain code names fields in an ``OptionError``, never a flag."""


def flag_of(option: str) -> str:
    """The command-line flag of a config field that an error names (the domain names fields,
    only the CLI names flags); an option that is no field name (``--judge-id``, ``judge name``)
    as it is."""
    if not option.isidentifier():
        return option
    return FIELD_FLAGS.get(option, "--" + option.replace("_", "-"))


_SETTING = re.compile(r"`([a-z][a-z0-9_]*)=([^`]*)`")
"""A setting a domain hint suggests, written `` `field=value` ``."""


def _as_flags(exc: MisstepError) -> MisstepError:
    """An ``OptionError`` that names config fields (its option, `` `field=value` `` in its
    hint), naming their flags instead (`` `--field value` ``)."""
    if not isinstance(exc, OptionError):
        return exc
    flagged = exc.renamed(flag_of(exc.option))
    hint = flagged.hint and _SETTING.sub(lambda m: f"`{flag_of(m[1])} {m[2]}`", flagged.hint)
    if flagged.option == exc.option and hint == exc.hint:
        return exc
    return OptionError(option=flagged.option, value=exc.value, allowed=exc.allowed, hint=hint)


def _fail(message: str, hint: str | None, code: int) -> typer.Exit:
    # Escape: messages quote user values and hints like `pip install 'misstep[vllm]'`,
    # whose brackets rich would otherwise read as markup and drop.
    err_console.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)
    if hint:
        err_console.print(f"[yellow]hint:[/] {escape(hint)}", markup=True, soft_wrap=True)
    return typer.Exit(code=code)


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Name the file in any error writing it (a full disk's ENOSPC carries no file name)."""
    try:
        yield
    except OSError as exc:
        raise OutputError(
            path=path,
            reason=f"cannot write it: {exc.strerror or exc}",
            hint="check the path, its permissions and the free disk space",
        ) from None


def handles_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a command: a MisstepError becomes a red message on stderr and its exit code (an
    ``OptionError`` naming a domain field names its flag, ``FIELD_FLAGS``); an
    operating-system error writing or reading a file (a full disk, a vanished directory)
    becomes exit status 2 naming the file."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except MisstepError as error:
            exc = _as_flags(error)
            raise _fail(exc.message, exc.hint, exc.exit_code) from None
        except KeyboardInterrupt:
            raise _fail(
                "interrupted",
                "what was written is kept; `misstep label` resumes where it stopped when the same "
                "command is run again",
                130,
            ) from None
        except OSError as exc:
            where = f"{Path(exc.filename)}: " if exc.filename else ""
            raise _fail(
                f"{where}{exc.strerror or exc}",
                "check the path, its permissions and the free disk space",
                2,
            ) from None

    return wrapper
