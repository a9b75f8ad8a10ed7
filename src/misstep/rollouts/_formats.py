"""Which reader a path needs: explicit ``input_format`` or inferred from the path."""

from __future__ import annotations

import gzip
import os
import re
from contextvars import ContextVar
from pathlib import Path
from typing import IO

from misstep.errors import InputFormatError

__all__ = [
    "HF_MARKERS",
    "INPUT_FORMATS",
    "READ_METER",
    "ReadMeter",
    "is_verl_dir",
    "open_binary",
    "resolve_format",
    "verl_files",
]

INPUT_FORMATS = ("jsonl", "parquet", "csv", "hf", "verl")
# Files ``datasets.save_to_disk`` writes: a Dataset has the first two, a DatasetDict the third.
HF_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")
_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
}
_VERL_NAME = re.compile(r"^(\d+)\.jsonl$")
_ALLOWED_TEXT = ", ".join(INPUT_FORMATS)


def verl_files(directory: Path) -> list[tuple[int, Path]]:
    """The ``{step}.jsonl`` files of a verl validation dump directory, by step."""
    found = []
    for child in directory.iterdir():
        match = _VERL_NAME.match(child.name)
        if match and child.is_file():
            found.append((int(match.group(1)), child))
    return sorted(found)


def is_verl_dir(directory: Path) -> bool:
    return bool(verl_files(directory))


def _infer(path: Path) -> str:
    if path.is_dir():
        if any((path / marker).exists() for marker in HF_MARKERS):
            return "hf"
        if is_verl_dir(path):
            return "verl"
        raise InputFormatError(
            path=path,
            reason="a directory that is neither a `datasets` save_to_disk folder "
            f"(no {', '.join(HF_MARKERS)}) nor a verl dump (no <step>.jsonl files)",
            hint=f"pass --input-format, one of {_ALLOWED_TEXT}",
        )
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix, fmt in _SUFFIXES.items():
        if name.endswith(suffix):
            return fmt
    raise InputFormatError(
        path=path,
        reason=f"cannot infer the input format from the name {path.name!r}",
        hint=f"pass --input-format, one of {_ALLOWED_TEXT} "
        "(suffixes .jsonl/.json[.gz], .parquet, .csv[.gz]; or a directory)",
    )


def resolve_format(path: Path, input_format: str | None) -> str:
    """The format to read ``path`` with; raises InputFormatError when it cannot be read."""
    if not path.exists():
        raise InputFormatError(path=path, reason="no such file or directory")
    if input_format is None:
        return _infer(path)
    fmt = input_format.strip().lower()
    if fmt not in INPUT_FORMATS:
        raise InputFormatError(
            path=path,
            reason=f"unknown input format {input_format!r}",
            hint=f"use one of {_ALLOWED_TEXT}",
        )
    wants_dir = fmt in ("hf", "verl")
    if wants_dir != path.is_dir():
        kind = "a directory" if wants_dir else "a file"
        raise InputFormatError(
            path=path,
            reason=f"input format {fmt!r} reads {kind}",
            hint=f"use one of {_ALLOWED_TEXT} that fits the path",
        )
    return fmt


class ReadMeter:
    """Bytes of the input files read so far (compressed bytes for gzip): the progress of a
    read against the input's size. Set ``READ_METER`` while consuming a reader to use it."""

    def __init__(self) -> None:
        self._done = 0
        self._current: IO[bytes] | None = None
        self._current_size = 0

    def attach(self, raw: IO[bytes], size: int) -> None:
        """A new file is being read: the previous one counts whole."""
        self._done += self._current_size if self._current is not None else 0
        self._current, self._current_size = raw, size

    def position(self) -> int:
        """Bytes read so far over every file attached."""
        if self._current is None:
            return self._done
        try:
            return self._done + self._current.tell()
        except (ValueError, OSError):  # closed: it was read whole
            return self._done + self._current_size


READ_METER: ContextVar[ReadMeter | None] = ContextVar("misstep_read_meter", default=None)


class _GzipOverRaw(gzip.GzipFile):
    """A GzipFile that closes the raw file it reads (so the meter can watch that file)."""

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def open_binary(path: Path) -> IO[bytes]:
    """Open for reading, decompressing when the file is gzip (by its magic bytes, not name)."""
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise InputFormatError(path=path, reason=f"cannot open: {exc.strerror or exc}") from exc
    magic = raw.read(2)
    raw.seek(0)
    meter = READ_METER.get()
    if meter is not None:
        meter.attach(raw, os.fstat(raw.fileno()).st_size)
    if magic == b"\x1f\x8b":
        return _GzipOverRaw(raw)  # type: ignore[return-value]
    return raw
