"""Files: gzip read by its magic bytes, the read meter, the marks of a `datasets` folder and
a verl dump."""

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
    "READ_METER",
    "ReadMeter",
    "is_verl_dir",
    "open_binary",
    "verl_files",
]

# Files ``datasets.save_to_disk`` writes: a Dataset has the first two, a DatasetDict the third.
HF_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")
_VERL_NAME = re.compile(r"^(\d+)\.jsonl$")


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
