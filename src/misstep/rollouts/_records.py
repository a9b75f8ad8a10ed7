"""Record sources: what every reader yields, and the JSON-lines source most of them share.

A reader turns its input into parts ``(where, records, rename)``: ``where`` names the file
(or split) in errors, ``records`` yields ``(line, raw, row)`` per input row, where ``row`` is a
dict ready for :func:`~misstep.rollouts._rowmap.build_trace` or the
:class:`~misstep.rollouts._rowmap.RowError` that makes it invalid, and ``rename`` maps trace
fields to the names the user's file gives them (so errors name the file's own field).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from misstep.errors import InputFormatError
from misstep.rollouts._formats import open_binary
from misstep.rollouts._rowmap import RowError

__all__ = ["NO_RENAME", "READ_ERRORS", "Part", "Record", "iter_json_lines", "unreadable"]

Record = tuple[int, Any, Any]
# (where to name in errors, its records, trace field -> the user's field name)
Part = tuple[str, Iterable[Record], Mapping[str, str]]

NO_RENAME: Mapping[str, str] = {}
_BOM = b"\xef\xbb\xbf"
READ_ERRORS = (EOFError, zlib.error, OSError, UnicodeDecodeError)


def iter_json_lines(path: Path) -> Iterator[Record]:
    """``(line, raw bytes, dict | RowError)`` per non-blank line of a JSONL file (gzip or not)."""
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    line_no = 0
    with open_binary(path) as handle:
        try:
            for raw in handle:
                line_no += 1
                if raw.isspace():
                    continue  # blank lines are skipped silently
                if line_no == 1 and raw.startswith(_BOM):
                    raw = raw[len(_BOM) :]
                try:
                    row = loads(raw)
                except decode_error as exc:
                    yield line_no, raw, RowError(f"malformed JSON ({exc})")
                    continue
                if type(row) is not dict:
                    kind = type(row).__name__
                    yield line_no, raw, RowError(f"a JSON {kind}, not an object")
                    continue
                yield line_no, raw, row
        except READ_ERRORS as exc:
            raise unreadable(path, line_no, exc) from exc


def unreadable(path: Path, line_no: int, exc: BaseException) -> InputFormatError:
    """The error of a file that cannot be read past ``line_no``."""
    return InputFormatError(
        path=path,
        reason=f"cannot read past line {line_no}: {exc}",
        hint="the file may be truncated or not valid UTF-8 / gzip",
    )
