"""A trace's text on demand: an offset index into the input, built once and cached on disk.

The graded table keeps no responses (10^6 of them would not fit in memory), so the review app
reads one trace when it is opened. A plain JSONL input is indexed in place (the byte offset of
each trace's line); any other format (gzip, Parquet, CSV, a ``datasets`` folder, a verl dump)
is streamed once through ``read_traces`` into an uncompressed JSONL copy in the cache, which
is then indexed the same way. Either way opening a trace is one seek and one line.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt
import orjson

from misstep.errors import InputFormatError
from misstep.rollouts import (
    ReadSpec,
    RowError,
    Trace,
    build_trace,
    default_cache_dir,
    delete_cache_files,
    read_traces,
    resolve_format,
)

__all__ = ["INDEX_VERSION", "TraceTexts", "open_trace_texts"]

INDEX_VERSION = 1
_BOM = b"\xef\xbb\xbf"
_PROGRESS_EVERY = 20_000


class TraceTexts:
    """Reads the trace of table row ``i`` from ``path`` at ``offsets[i]`` (-1: not found)."""

    def __init__(self, path: Path, offsets: npt.NDArray[np.int64], *, copied: bool) -> None:
        self.path = path
        self.offsets = offsets
        self.copied = copied
        """True when ``path`` is misstep's JSONL copy of an input in another format."""
        self._fd: int | None = None
        self._guard = threading.Lock()

    def _read_line(self, offset: int) -> bytes:
        """The line at ``offset``: ``os.pread`` on one shared descriptor (no seek, so the
        server's threads never disturb each other, and no descriptor per thread)."""
        with self._guard:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY)
            fd = self._fd
        line = bytearray()
        while True:
            chunk = os.pread(fd, 1 << 16, offset)
            if not chunk:
                return bytes(line)
            end = chunk.find(b"\n")
            if end >= 0:
                line += chunk[: end + 1]
                return bytes(line)
            line += chunk
            offset += len(chunk)

    def close(self) -> None:
        """Close the file."""
        with self._guard:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def trace(self, row: int, trace_id: str | None = None) -> Trace | None:
        """The trace of table row ``row``, or None when the index does not hold it. With
        ``trace_id`` (the row's id), a derived id the reader numbered (``#2``: a repeated
        response) is given back to the trace."""
        offset = int(self.offsets[row])
        if offset < 0:
            return None
        raw = self._read_line(offset)
        if raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        record = orjson.loads(raw)
        trace = Trace.model_validate(record) if self.copied else build_trace(record)
        if (
            trace_id is not None
            and not record.get("trace_id")
            and trace_id.startswith(f"{trace.trace_id}#")
        ):
            trace.trace_id = trace_id
        return trace


def _cache_file(input_sha256: str, fmt: str, suffix: str) -> Path:
    key = hashlib.sha256(f"{INDEX_VERSION}|{input_sha256}|{fmt}".encode()).hexdigest()[:32]
    return default_cache_dir() / "review" / f"{key}{suffix}"


def clear_text_cache() -> int:
    """Delete the review app's cached trace texts and indexes (``<cache>/review``); returns how
    many files were removed."""
    return delete_cache_files(default_cache_dir() / "review", (".jsonl", ".npy"))


def _next_free(trace_id: str, seen: set[str]) -> str:
    # The same numbering as the reader's for a derived id that repeats.
    n = 2
    while f"{trace_id}#{n}" in seen:
        n += 1
    return f"{trace_id}#{n}"


def _scan(
    path: Path,
    rows: Mapping[str, int],
    n_rows: int,
    *,
    copied: bool,
    on_progress: Callable[[int, int], None] | None,
) -> npt.NDArray[np.int64]:
    """Offsets of each table row's line in ``path`` (a JSONL file)."""
    offsets = np.full(n_rows, -1, dtype=np.int64)
    seen: set[str] = set()
    size = path.stat().st_size
    offset = 0
    count = 0
    with open(path, "rb") as fh:
        for raw in fh:
            here, offset = offset, offset + len(raw)
            if raw.isspace():
                continue
            body = raw[len(_BOM) :] if here == 0 and raw.startswith(_BOM) else raw
            try:
                record = orjson.loads(body)
            except orjson.JSONDecodeError:
                continue  # a rejected row: grading skipped it too
            if not isinstance(record, dict):
                continue
            given = record.get("trace_id")
            if isinstance(given, str) and given:
                trace_id = given
            elif copied:
                continue
            else:
                try:
                    trace_id = build_trace(record).trace_id
                except RowError:
                    continue
                if trace_id in seen:
                    trace_id = _next_free(trace_id, seen)
            seen.add(trace_id)
            row = rows.get(trace_id)
            if row is not None and offsets[row] < 0:
                offsets[row] = here
            count += 1
            if on_progress is not None and count % _PROGRESS_EVERY == 0:
                on_progress(offset, size)
    if on_progress is not None:
        on_progress(size, size)
    return offsets


def _line_starts(
    path: Path, on_progress: Callable[[int, int], None] | None
) -> npt.NDArray[np.int64]:
    """Byte offsets of the non-blank lines of ``path``, found with numpy (no parsing)."""
    size = path.stat().st_size
    newlines: list[npt.NDArray[np.int64]] = []
    pos = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 24):
            found = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)
            newlines.append(found.astype(np.int64) + pos)
            pos += len(chunk)
            if on_progress is not None:
                on_progress(pos, size)
    ends = np.concatenate([*newlines, np.array([size], dtype=np.int64)])
    starts = np.concatenate([np.array([0], dtype=np.int64), ends[:-1] + 1])
    keep = ends > starts
    short = np.flatnonzero(keep & (ends - starts <= 16))
    if short.size:  # a short line may be only whitespace (a blank line): look at it
        with open(path, "rb") as fh:
            for i in short:
                fh.seek(int(starts[i]))
                if fh.read(int(ends[i] - starts[i])).isspace():
                    keep[i] = False
    return starts[keep]


def _aligned(
    path: Path, starts: npt.NDArray[np.int64], trace_ids: list[str], *, copied: bool
) -> bool:
    """Whether line ``i`` holds table row ``i`` (no row was rejected): checked on the first,
    the last and 200 lines in between. Every open checks its trace id again."""
    if len(starts) != len(trace_ids):
        return False
    n = len(trace_ids)
    picks = sorted({0, n - 1, *np.linspace(0, n - 1, num=min(n, 200)).astype(int).tolist()})
    texts = TraceTexts(path, starts, copied=copied)
    try:
        for i in picks:
            trace = texts.trace(i, trace_ids[i])
            if trace is None or trace.trace_id != trace_ids[i]:
                return False
    except (orjson.JSONDecodeError, RowError, ValueError):
        return False
    finally:
        texts.close()
    return True


def _copy(
    source: Path, spec: ReadSpec, target: Path, on_progress: Callable[[int, int], None] | None
) -> None:
    """Stream ``source`` once into a JSONL of the fields the review pages show."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    done = 0
    with open(tmp, "wb") as out:
        for trace in read_traces(source, input_format=spec):
            record = trace.model_dump(
                mode="json", exclude={"extra"}, exclude_none=True, exclude_defaults=False
            )
            out.write(orjson.dumps(record) + b"\n")
            done += 1
            if on_progress is not None and done % _PROGRESS_EVERY == 0:
                on_progress(done, 0)
    os.replace(tmp, target)


def open_trace_texts(
    input_path: str | Path,
    trace_ids: list[str],
    *,
    input_sha256: str,
    input_format: str | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> TraceTexts:
    """The text index of ``input_path`` for a table whose rows hold ``trace_ids``, from the
    cache when this input was indexed before (``on_progress(done, total)`` while building)."""
    path = Path(input_path)
    spec = ReadSpec.of(input_format)
    fmt = resolve_format(path, spec)
    # A reading with path fields or a column map gives other traces from the same bytes.
    shaped = spec.path_fields is not None or bool(spec.columns)
    key = f"{fmt}|{spec.text()}" if shaped else fmt
    plain = fmt == "jsonl" and not shaped and path.is_file()
    plain = plain and not path.name.lower().endswith(".gz")
    source = path
    if not plain:
        source = _cache_file(input_sha256, key, ".jsonl")
        if not source.exists():
            source.parent.mkdir(parents=True, exist_ok=True)
            _copy(path, spec, source, on_progress)
    index = _cache_file(input_sha256, key, ".offsets.npy")
    if index.exists():
        offsets = np.load(index)
        if offsets.shape == (len(trace_ids),):
            return TraceTexts(source, offsets, copied=not plain)
    # The graded table holds the rows in input order: when no row was rejected, line i is
    # row i, and finding the lines is enough. Otherwise each line is parsed for its trace id.
    offsets = _line_starts(source, on_progress)
    if not _aligned(source, offsets, trace_ids, copied=not plain):
        rows = {t: i for i, t in enumerate(trace_ids)}
        offsets = _scan(source, rows, len(trace_ids), copied=not plain, on_progress=on_progress)
        del rows
    try:
        index.parent.mkdir(parents=True, exist_ok=True)
        tmp = index.with_name(f".{index.stem}.{os.getpid()}.tmp.npy")
        np.save(tmp, offsets)
        os.replace(tmp, index)
    except OSError as exc:
        raise InputFormatError(path=index, reason=f"cannot write the text index: {exc}") from None
    return TraceTexts(source, offsets, copied=not plain)
