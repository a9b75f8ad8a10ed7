"""``read_traces``: stream Traces from JSONL, Parquet, CSV, a ``datasets`` folder or verl dumps.

Every format is read row by row (JSONL line by line, Parquet and ``datasets`` in record
batches), so a file of any size streams in bounded memory. Each source yields records
``(line, raw, row)`` where ``row`` is a dict ready for :func:`build_trace` or the
:class:`RowError` that makes it invalid; one loop turns them into Traces, errors or rejects.
"""

from __future__ import annotations

import csv
import io
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from misstep.errors import InputFormatError, InvalidRecordError
from misstep.rollouts._formats import open_binary, resolve_format, verl_files
from misstep.rollouts._rejects import RejectSink
from misstep.rollouts._rowmap import RowError, build_trace, clean_arrow_row, from_csv_cells
from misstep.rollouts._trace import Trace
from misstep.rollouts._verl import VERL_FIELD_NAMES, VerlMapper

__all__ = ["iter_json_lines", "read_traces"]

Record = tuple[int, Any, Any]
# (where to name in errors, its records, trace field -> the user's field name)
Part = tuple[str, Iterable[Record], Mapping[str, str]]

_BATCH_ROWS = 2048
_NO_RENAME: Mapping[str, str] = {}
_BOM = b"\xef\xbb\xbf"
_READ_ERRORS = (EOFError, zlib.error, OSError, UnicodeDecodeError)


def read_traces(
    path: str | Path, *, input_format: str | None = None, rejects: RejectSink | None = None
) -> Generator[Trace, None, None]:
    """Stream the traces of ``path``.

    ``input_format`` is one of ``jsonl``, ``parquet``, ``csv``, ``hf``, ``verl``; inferred
    from the path when None. An invalid row raises :class:`InvalidRecordError` naming the
    file, the 1-based line (row for parquet and hf) and the field, unless ``rejects`` is
    given: then it is written there and reading goes on. The path and format are checked
    at once (raising :class:`InputFormatError`); rows are read as the iterator is consumed.
    """
    p = Path(path)
    fmt = resolve_format(p, input_format)
    parts = _PARTS[fmt](p)
    return _traces(parts, rejects)


def _traces(parts: Iterable[Part], rejects: RejectSink | None) -> Generator[Trace, None, None]:
    build = build_trace
    # trace_id -> (file, line) of its first row: a second row with the same id is an input
    # error (it would overwrite the first one's label and vote twice).
    seen: dict[str, tuple[str, int]] = {}
    for where, records, rename in parts:
        try:
            for line, raw, row in records:
                try:
                    if type(row) is RowError:
                        raise row
                    trace = build(row)
                    first = seen.setdefault(trace.trace_id, (where, line))
                    if first != (where, line) and not row.get("trace_id"):
                        # A derived id repeats when two rows without sample_idx hold the same
                        # response: number the repeats in input order (stable for one file).
                        trace.trace_id = _next_free(trace.trace_id, seen)
                        seen[trace.trace_id] = (where, line)
                    elif first != (where, line):
                        other = f"line {first[1]}"
                        if first[0] != where:
                            other += f" of {first[0]}"
                        raise RowError(
                            f"duplicate trace_id: {other} has the same one",
                            field="trace_id",
                            value=trace.trace_id,
                        )
                except RowError as err:
                    _bad(err, where, line, raw, rejects, rename)
                    continue
                yield trace
        finally:
            # An error (or an early stop) must close the file the record source holds open
            # now, not whenever the traceback that references it is collected.
            close = getattr(records, "close", None)
            if close is not None:
                close()


def _next_free(trace_id: str, seen: Mapping[str, object]) -> str:
    n = 2
    while f"{trace_id}#{n}" in seen:
        n += 1
    return f"{trace_id}#{n}"


def _bad(
    err: RowError,
    where: str,
    line: int,
    raw: Any,
    rejects: RejectSink | None,
    rename: Mapping[str, str],
) -> None:
    field = rename.get(err.field, err.field) if err.field is not None else None
    if rejects is None:
        value = err.value if field is not None else _raw_out(raw)
        raise InvalidRecordError(
            path=where,
            line=line,
            reason=err.reason,
            field=field,
            value=value,
            # Only the commands that read traces take --skip-invalid.
            hint="fix the row, or pass --skip-invalid to write it to a rejects file",
        )
    rejects.write(line, err.reason, _raw_out(raw), field, source=where)


def _raw_out(raw: Any) -> Any:
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace").rstrip("\r\n")
    return raw


# --- JSON lines -------------------------------------------------------------------------


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
        except _READ_ERRORS as exc:
            raise _unreadable(path, line_no, exc) from exc


def _unreadable(path: Path, line_no: int, exc: BaseException) -> InputFormatError:
    return InputFormatError(
        path=path,
        reason=f"cannot read past line {line_no}: {exc}",
        hint="the file may be truncated or not valid UTF-8 / gzip",
    )


def _jsonl_parts(path: Path) -> list[Part]:
    return [(str(path), iter_json_lines(path), _NO_RENAME)]


# --- CSV ----------------------------------------------------------------------------------


def _csv_records(path: Path) -> Iterator[Record]:
    # Responses are long: lift the csv module's 128 KiB cell limit (2**31 - 1 fits every C long).
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    with io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", newline="") as text:
        reader = csv.reader(text)
        try:
            header = next(reader, None)
            if header is None:
                return
            last = reader.line_num
            for cells in reader:
                line = last + 1  # a quoted cell may span lines: the row starts after the last
                last = reader.line_num
                if not cells:
                    continue
                if len(cells) != len(header):
                    error = RowError(f"{len(cells)} cells where the header has {len(header)}")
                    yield line, dict(enumerate(cells)), error
                    continue
                raw = dict(zip(header, cells, strict=True))
                try:
                    row: Any = from_csv_cells(raw)
                except RowError as err:
                    row = err
                yield line, raw, row
        except UnicodeDecodeError:
            raise _bad_utf8(path) from None
        except csv.Error as exc:
            raise _unreadable(path, reader.line_num, exc) from exc
        except _READ_ERRORS as exc:
            raise _unreadable(path, reader.line_num, exc) from exc


def _bad_utf8(path: Path) -> InvalidRecordError:
    """Where the first byte that is not UTF-8 sits: its line and, by the header, its field.
    (The text layer decodes in large chunks, so its own error knows neither.)"""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    line, header, before = 1, None, b""
    with open_binary(path) as handle:
        for raw in handle:
            try:
                decoder.decode(raw)
            except UnicodeDecodeError as exc:
                before = raw[: exc.start]
                break
            if header is None:
                header = next(csv.reader([raw.decode("utf-8-sig")]), [])
            line += 1
        else:
            return InvalidRecordError(path=path, line=line, reason="not valid UTF-8")
    cells = next(csv.reader([before.decode("utf-8", "replace")]), [""])
    field = header[len(cells) - 1] if header and 0 < len(cells) <= len(header) else None
    return InvalidRecordError(
        path=path,
        line=line,
        field=field,
        reason="not valid UTF-8",
        hint="re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)",
    )


def _csv_parts(path: Path) -> list[Part]:
    return [(str(path), _csv_records(path), _NO_RENAME)]


# --- Parquet and datasets -----------------------------------------------------------------


def _parquet_parts(path: Path) -> list[Part]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputFormatError(path=path, reason=f"not a readable Parquet file: {exc}") from exc

    def records() -> Iterator[Record]:
        row_no = 0
        with parquet:
            for batch in parquet.iter_batches(batch_size=_BATCH_ROWS):
                for row in batch.to_pylist():
                    row_no += 1
                    yield row_no, dict(row), clean_arrow_row(row)

    return [(str(path), records(), _NO_RENAME)]


def _hf_parts(path: Path) -> list[Part]:
    import datasets

    try:
        loaded = datasets.load_from_disk(str(path))
    except Exception as exc:  # datasets raises many kinds for a folder it cannot use
        raise InputFormatError(
            path=path, reason=f"not a readable `datasets` save_to_disk folder: {exc}"
        ) from exc
    if isinstance(loaded, datasets.DatasetDict):
        splits = [(f"{path}/{name}", loaded[name]) for name in loaded]
    else:
        splits = [(str(path), loaded)]
    return [(where, _dataset_records(ds), _NO_RENAME) for where, ds in splits]


def _dataset_records(ds: Any) -> Iterator[Record]:
    row_no = 0
    for batch in ds.iter(batch_size=_BATCH_ROWS):
        names = list(batch)
        for values in zip(*(batch[name] for name in names), strict=True):
            row_no += 1
            row = dict(zip(names, values, strict=True))
            yield row_no, dict(row), clean_arrow_row(row)


# --- verl ---------------------------------------------------------------------------------


def _verl_parts(path: Path) -> list[Part]:
    files = verl_files(path)
    if not files:
        raise InputFormatError(
            path=path,
            reason="no verl validation dumps (<step>.jsonl files) in this directory",
            hint="point at trainer.validation_data_dir of the verl run",
        )
    mapper = VerlMapper()
    return [
        (str(file), _verl_records(file, step, mapper), VERL_FIELD_NAMES) for step, file in files
    ]


def _verl_records(file: Path, step: int, mapper: VerlMapper) -> Iterator[Record]:
    for line, raw, row in iter_json_lines(file):
        if type(row) is dict:
            try:
                row = mapper(row, step)
            except RowError as err:
                row = err
        yield line, raw, row


_PARTS: dict[str, Callable[[Path], list[Part]]] = {
    "jsonl": _jsonl_parts,
    "csv": _csv_parts,
    "parquet": _parquet_parts,
    "hf": _hf_parts,
    "verl": _verl_parts,
}
