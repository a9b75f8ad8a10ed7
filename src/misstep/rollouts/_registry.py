"""The readers, registered by name, and how an input's format is recognised.

A reader (:class:`Reader`) reads one format: the table formats whose rows hold misstep's own
fields (JSONL, CSV, Parquet, a ``datasets`` folder), verl's validation dumps, and the outputs
of the evaluation harnesses people use (the Qwen2.5-Math / ToRA harness, lm-evaluation-harness,
NeMo-Skills, Inspect AI). ``--input-format NAME`` names one; without it the format is
recognised: a ``datasets`` folder by its marker files, a verl dump by its ``<step>.jsonl``
files, a file by its suffix (``.eval``, ``.parquet``, ``.csv``, JSON lines), and a JSON-lines
file by the fields of its first row. A folder of files is read with the reader its first file
calls for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from misstep.errors import InputFormatError
from misstep.rollouts._formats import HF_MARKERS, READ_METER, is_verl_dir
from misstep.rollouts._harness import files_under, is_jsonl_name
from misstep.rollouts._inspect import InspectLog
from misstep.rollouts._lm_eval import LmEvalHarness
from misstep.rollouts._nemo_skills import NemoSkills
from misstep.rollouts._qwen_math import QwenMathEval
from misstep.rollouts._readers import Csv, HfDataset, Jsonl, Parquet, VerlDump
from misstep.rollouts._records import Part, iter_json_lines
from misstep.rollouts._source import ReadSpec

__all__ = [
    "DIR_FORMATS",
    "INPUT_FORMATS",
    "READERS",
    "Reader",
    "first_row",
    "reader_options",
    "recognise",
    "resolve_format",
]


class Reader(Protocol):
    """One input format: how its files are found, recognised and read."""

    @property
    def name(self) -> str:
        """The format's name (``--input-format``)."""
        ...

    @property
    def description(self) -> str:
        """One line: what the format is and the fields that mark it (errors list it)."""
        ...

    @property
    def suffixes(self) -> tuple[str, ...]:
        """File suffixes this reader may read (gzip or not); empty for a folder format."""
        ...

    @property
    def table(self) -> bool:
        """Rows hold misstep's own fields: ``--map`` renames columns, and a first row without
        problem_id or response is an unreadable file."""
        ...

    @property
    def columns(self) -> Mapping[str, str | tuple[str, ...]]:
        """A harness's own column for each field (``--map`` overrides them); empty for a table
        format."""
        ...

    @property
    def options(self) -> Mapping[str, str]:
        """``--map`` keys beyond the fields, with what they choose."""
        ...

    def recognises(self, row: Mapping[str, Any]) -> bool:
        """A JSON-lines file whose first row is ``row`` is in this format."""
        ...

    def files(self, folder: Path) -> list[Path]:
        """The files of a folder this reader reads."""
        ...

    def parts(self, path: Path, spec: ReadSpec) -> list[Part]:
        """The record sources of a file or folder (``_records``)."""
        ...


_ALL: tuple[Reader, ...] = (
    Jsonl(),
    Parquet(),
    Csv(),
    HfDataset(),
    VerlDump(),
    QwenMathEval(),
    LmEvalHarness(),
    NemoSkills(),
    InspectLog(),
)
READERS: dict[str, Reader] = {reader.name: reader for reader in _ALL}
"""Every reader by its format's name."""
INPUT_FORMATS = tuple(READERS)
"""The formats' names, in the order errors list them."""
DIR_FORMATS = frozenset({"hf", "verl"})
"""Formats that read a folder as one whole (the others read a file, or a folder of files)."""
# JSON-lines formats recognised by their first row, tried in this order before plain JSONL.
_BY_FIRST_ROW = ("qwen-math-eval", "lm-eval-harness", "nemo-skills")
_ALLOWED_TEXT = ", ".join(INPUT_FORMATS)


def reader_options(name: str | None) -> Mapping[str, str]:
    """The ``--map`` keys beyond the fields that format ``name`` takes (any format's, when
    the format is not named yet)."""
    if name is None:
        return {k: v for reader in _ALL for k, v in reader.options.items()}
    reader = READERS.get(name)
    return reader.options if reader is not None else {}


def _suffix(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    return name[name.rfind(".") :] if "." in name else ""


def first_row(path: Path) -> dict[str, Any] | None:
    """The first row of a JSON-lines file (None when it has none that parses); a peek the
    read meter does not count."""
    token = READ_METER.set(None)
    records: Iterator[Any] = iter_json_lines(path)
    try:
        for _, _, row in records:
            return row if isinstance(row, dict) else None
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()
        READ_METER.reset(token)
    return None


def _recognise_file(path: Path) -> str | None:
    suffix = _suffix(path)
    owners = [r for r in _ALL if suffix in r.suffixes]
    if not owners:
        return None
    if len(owners) == 1:
        return owners[0].name
    row = first_row(path)
    if row is not None:
        for name in _BY_FIRST_ROW:
            if READERS[name].recognises(row):
                return name
    return "jsonl"


def _data_file(path: Path) -> bool:
    suffix = _suffix(path)
    if suffix in (".jsonl", ".ndjson"):
        return is_jsonl_name(path.name)
    return suffix in (".eval", ".parquet", ".pq", ".csv")


def recognise(path: Path) -> str:
    """The format of ``path``, recognised as the module docstring says; InputFormatError
    when nothing fits."""
    if path.is_dir():
        if any((path / marker).exists() for marker in HF_MARKERS):
            return "hf"
        if is_verl_dir(path):
            return "verl"
        data = files_under(path, _data_file)
        if not data:
            raise InputFormatError(
                path=path,
                reason="a directory with no file misstep reads (.jsonl[.gz], .parquet, .csv, "
                ".eval), that is neither a `datasets` save_to_disk folder "
                f"(no {', '.join(HF_MARKERS)}) nor a verl dump (no <step>.jsonl files)",
                hint=f"pass --input-format, one of {_ALLOWED_TEXT}",
            )
        fmt = _recognise_file(data[0])
        assert fmt is not None  # every data file has a reader's suffix
        return fmt
    fmt = _recognise_file(path)
    if fmt is None:
        raise InputFormatError(
            path=path,
            reason=f"cannot infer the input format from the name {path.name!r}",
            hint=f"pass --input-format, one of {_ALLOWED_TEXT} "
            "(suffixes .jsonl/.json[.gz], .parquet, .csv[.gz], .eval; or a directory)",
        )
    return fmt


def resolve_format(path: Path, input_format: ReadSpec | str | None) -> str:
    """The format to read ``path`` with (``input_format``: a format's name, a spec or its
    text); raises InputFormatError when it cannot be read."""
    if not path.exists():
        raise InputFormatError(path=path, reason="no such file or directory")
    if isinstance(input_format, str) and not input_format.strip().startswith("{"):
        fmt: str | None = input_format.strip().lower()
        if fmt not in READERS:
            raise InputFormatError(
                path=path,
                reason=f"unknown input format {input_format!r}",
                hint=f"use one of {_ALLOWED_TEXT}",
            )
    else:
        fmt = ReadSpec.of(input_format).format
    if fmt is None:
        return recognise(path)
    wants_dir = fmt in DIR_FORMATS
    if wants_dir and not path.is_dir():
        raise InputFormatError(
            path=path,
            reason=f"input format {fmt!r} reads a directory",
            hint=f"use one of {_ALLOWED_TEXT} that fits the path",
        )
    if not wants_dir and path.is_dir() and not READERS[fmt].files(path):
        raise InputFormatError(
            path=path,
            reason=f"a directory with no file that input format {fmt!r} reads",
            hint=f"use one of {_ALLOWED_TEXT} that fits the path",
        )
    return fmt
