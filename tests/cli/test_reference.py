"""docs/cli.md is the typer app's own description: current, complete and readable."""

from __future__ import annotations

import enum
import re
from pathlib import Path
from typing import Annotated

import typer
from typer.testing import CliRunner

from misstep.cli import app
from misstep.cli._reference import REGENERATE, render

CLI_MD = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_cli_reference_is_current() -> None:
    stale = CLI_MD.read_text(encoding="utf-8") != render()
    assert not stale, f"docs/cli.md is stale: regenerate it with `{REGENERATE}`"


_WIDE = {"COLUMNS": "200", "TERMINAL_WIDTH": "200"}


def _sections() -> dict[str, str]:
    """Command path ('misstep label') -> the text of its section in docs/cli.md."""
    text = CLI_MD.read_text(encoding="utf-8")
    parts = re.split(r"^## `([^`]+)`$", text, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def _help_commands(path: list[str]) -> list[str]:
    """The sub-commands a group's --help lists (an independent reading of the tree)."""
    result = CliRunner().invoke(app, [*path, "--help"], env=_WIDE)
    assert result.exit_code == 0, result.output
    box = re.search(r"Commands ─+╮\n(.*?)╰", result.output, flags=re.DOTALL)
    if box is None:
        return []
    return re.findall(r"^│ (\S+)", box.group(1), flags=re.MULTILINE)


def test_every_command_and_option_of_help_is_in_the_reference() -> None:
    """Walk the tree through `--help` itself: each command has a section, and each option that
    its --help prints appears in that section."""
    sections = _sections()
    todo: list[list[str]] = [[]]
    seen = n_options = 0
    while todo:
        path = todo.pop()
        name = " ".join(["misstep", *path])
        assert name in sections, f"{name} has no section in docs/cli.md ({REGENERATE})"
        result = CliRunner().invoke(app, [*path, "--help"], env=_WIDE)
        # An option's own row of the help box, not a mention of another in a help text.
        declared = r"^│ {1,6}(?:\* +)?(?:-\w, +)?(--[a-z][a-z0-9-]*)"
        options = set(re.findall(declared, result.output, flags=re.MULTILINE)) - {"--help"}
        n_options += len(options)
        for opt in options:
            assert f"`{opt}" in sections[name] or f", {opt}" in sections[name], (name, opt)
        todo.extend([*path, sub] for sub in _help_commands(path))
        seen += 1
    # misstep, its 15 commands, the cache group and its two commands (as of this release).
    assert seen == len(sections) >= 18
    # Both ways: the reference lists no option that --help does not (150 as of this release).
    bullets = re.findall(r"^- `-", CLI_MD.read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert n_options == len(bullets) >= 150


class _Colour(enum.StrEnum):
    red = "red"
    blue = "blue"


def test_render_writes_types_defaults_choices_and_flags() -> None:
    toy = typer.Typer(add_completion=False)

    @toy.command()
    def paint(
        wall: Annotated[Path, typer.Argument(metavar="WALL", help="The wall.")],
        colour: Annotated[_Colour, typer.Option("--colour", help="Which paint.")] = _Colour.red,
        coats: Annotated[int, typer.Option("--coats", min=1, help="How many.")] = 2,
        brush: Annotated[list[str] | None, typer.Option("--brush", help="A_brush.")] = None,
        dry: Annotated[bool, typer.Option("--dry", help="Only *pretend*.")] = False,
        secret: Annotated[str, typer.Option("--secret", hidden=True, help="Hush.")] = "x",
    ) -> None:
        """Paint a wall."""

    @toy.command()
    def clean() -> None:
        """Clean up."""

    text = render(toy)
    assert "## `misstep paint`" in text and "## `misstep clean`" in text
    assert "misstep paint [OPTIONS] WALL" in text
    assert "- `WALL` (path; required): The wall." in text
    assert "- `--colour <red|blue>` (default: red): Which paint." in text
    assert "- `--coats INTEGER RANGE` (default: 2; x\\>=1): How many." in text or (
        "(default: 2; x\\>=1): How many." in text
    )
    assert "(repeatable): A\\_brush." in text  # Markdown characters escaped
    assert "- `--dry` (flag): Only \\*pretend\\*." in text
    assert "(default: x; hidden): Hush." in text  # hidden options are listed too
    assert max(len(line) for line in text.splitlines()) <= 100
