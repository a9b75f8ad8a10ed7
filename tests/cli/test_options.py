"""The shared input options: declared once in ``cli._options``, packed into one ``Reading``."""

from __future__ import annotations

import inspect

import typer
from typer.testing import CliRunner

from misstep.cli._options import READING, InputFormat, Reading, SeedOpt, reads_traces


def test_reads_traces_puts_the_reading_options_in_place_and_packs_them() -> None:
    seen: list[tuple[Reading, int]] = []

    def command(seed: SeedOpt = 0, reading: Reading = READING, last: int = 1) -> None:
        seen.append((reading, seed))

    wrapped = reads_traces(command)
    names = list(inspect.signature(wrapped).parameters)
    # in the place of `reading`, in the order every command lists them
    assert names == [
        "seed",
        "input_format",
        "regrade",
        "skip_invalid",
        "no_cache",
        "path_fields",
        "column_map",
        "last",
    ]
    app = typer.Typer()
    app.command()(wrapped)
    result = CliRunner().invoke(app, ["--regrade", "--input-format", "csv", "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert seen == [(Reading(InputFormat.csv, regrade=True), 3)]
    assert seen[0][0].format_name == "csv" and seen[0][0].cache
    result = CliRunner().invoke(app, ["--no-cache", "--skip-invalid"])
    assert result.exit_code == 0, result.output
    assert seen[1] == (Reading(skip_invalid=True, no_cache=True), 0)
    assert seen[1][0].run_fields() == {
        "input_format": None,
        "regrade": False,
        "skip_invalid": True,
        "cache": False,
    }
