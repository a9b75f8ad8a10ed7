"""What the harness readers share: where a field's column is, grades and answers as the
harnesses write them, and the files of a folder in a stable order."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from misstep.rollouts._rowmap import RowError
from misstep.rollouts._source import MISSING, ReadSpec, lookup

__all__ = [
    "JSONL_SUFFIXES",
    "Columns",
    "files_under",
    "grade_of",
    "is_jsonl_name",
    "text_of",
]

# Suffixes of JSON-lines files a folder is searched for (``.json`` is left out: beside a
# harness's outputs it holds metrics and configs, not rows).
JSONL_SUFFIXES = (".jsonl", ".ndjson")
_DIGITS = re.compile(r"(\d+)")
_BOOL_TEXT = {"true": True, "false": False, "yes": True, "no": False, "1": True, "0": False}


def is_jsonl_name(name: str) -> bool:
    """A JSON-lines file's name (gzip or not), as a folder is searched for them."""
    name = name.lower().removesuffix(".gz")
    return name.endswith(JSONL_SUFFIXES)


def _natural(path: Path) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in _DIGITS.split(path.as_posix())]


def files_under(folder: Path, wanted: Callable[[Path], bool]) -> list[Path]:
    """The files under ``folder`` (at any depth) that ``wanted`` accepts, in natural order
    (``output-rs2`` before ``output-rs10``); hidden files and folders are left out."""
    found = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        if wanted(path):
            found.append(path)
    return sorted(found, key=_natural)


class Columns:
    """Where a harness reader finds each field: its own default column, or the one the spec
    names for it (``--map``)."""

    def __init__(self, defaults: Mapping[str, str | tuple[str, ...]], spec: ReadSpec) -> None:
        self._defaults = defaults
        self._given = spec.columns

    def names(self, field: str) -> tuple[str, ...]:
        """The columns to look in for ``field``, first found wins."""
        given = self._given.get(field)
        if given is not None:
            return (given,)
        default = self._defaults.get(field, ())
        return (default,) if isinstance(default, str) else default

    def get(self, row: Mapping[str, Any], field: str) -> tuple[str | None, Any]:
        """``(column, value)`` of ``field`` in ``row``; ``(None, MISSING)`` when none holds it."""
        for column in self.names(field):
            value = lookup(row, column)
            if value is not MISSING:
                return column, value
        return None, MISSING

    def rename(self) -> dict[str, str]:
        """Trace field -> the column errors should name."""
        out = {}
        for field in {*self._defaults, *self._given}:
            names = self.names(field)
            if names:
                out[field] = names[0]
        return out

    def consumed(self) -> set[str]:
        """Top-level columns the fields are read from (the rest go to ``extra``)."""
        return {
            name.split(".", 1)[0] for field in {*self._defaults, *self._given}
            for name in self.names(field)
        }  # fmt: skip


def text_of(value: Any, field: str) -> str | None:
    """A text field as a harness writes it: text, or a number taken as its text; None for a
    JSON null."""
    if value is None or value is MISSING:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return str(value)
    raise RowError("must be text or a number", field, value)


def grade_of(value: Any, field: str = "correct") -> bool | None:
    """A harness's grade: a boolean, a number (full credit, 1, is correct), a judge's text
    ending ``Judgement: Yes`` / ``No`` (NeMo-Skills' rule), or yes/no, true/false text;
    None for a JSON null and for text that gives no verdict (misstep then grades the row)."""
    if value is None or value is MISSING:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        if isinstance(value, float) and math.isnan(value):
            return None
        return value >= 1
    if isinstance(value, str):
        if "Judgement:" in value:
            # NeMo-Skills' is_correct_judgement: the verdict after the last "Judgement:"; a
            # judgement it cannot read counts as wrong there, and here as no grade.
            verdict = value.rsplit("Judgement:", 1)[1].strip().lower()
            if verdict.startswith("yes"):
                return True
            if verdict.startswith("no"):
                return False
            return None
        # yes/no, true/false; any other text is a judge's reply without a verdict
        return _BOOL_TEXT.get(value.strip().lower())
    raise RowError("is not a grade (a boolean, 0/1, or a judge's verdict)", field, value)


def per_sample(value: Any, n: int, field: str) -> Iterator[Any]:
    """The ``n`` samples' values of a column the harness writes once per sample (a list of
    ``n``) or once for all (anything else, only when ``n`` is 1)."""
    if isinstance(value, list):
        if len(value) != n:
            raise RowError(f"holds {len(value)} values for {n} responses", field, value)
        yield from value
    elif n == 1 or value is MISSING or value is None:
        for _ in range(n):
            yield value
    else:
        raise RowError(f"must be a list of {n} values, one per response", field, value)
