"""The table formats' record sources: JSONL, CSV, Parquet, a ``datasets`` folder, verl dumps.

Every format is read row by row (JSONL line by line, Parquet and ``datasets`` in record
batches), so a file of any size streams in bounded memory (``_records`` says what a source
yields; ``_read.read_traces`` turns the records into Traces, errors or rejects).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from misstep.errors import InputFormatError, InvalidRecordError
from misstep.rollouts._formats import open_binary, verl_files
from misstep.rollouts._harness import files_under, is_jsonl_name
from misstep.rollouts._records import (
    NO_RENAME,
    READ_ERRORS,
    Part,
    Record,
    iter_json_lines,
    unreadable,
)
from misstep.rollouts._rowmap import RowError, clean_arrow_row, from_csv_cells
from misstep.rollouts._source import ReadSpec
from misstep.rollouts._verl import VERL_FIELD_NAMES, VerlMapper

__all__ = ["PARTS", "Csv", "HfDataset", "Jsonl", "Parquet", "VerlDump"]

_BATCH_ROWS = 2048


def _jsonl_parts(path: Path) -> list[Part]:
    return [(str(path), iter_json_lines(path), NO_RENAME)]


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
            raise unreadable(path, reader.line_num, exc) from exc
        except READ_ERRORS as exc:
            raise unreadable(path, reader.line_num, exc) from exc


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
    return [(str(path), _csv_records(path), NO_RENAME)]


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

    return [(str(path), records(), NO_RENAME)]


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
    return [(where, _dataset_records(ds), NO_RENAME) for where, ds in splits]


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


PARTS: dict[str, Callable[[Path], list[Part]]] = {
    "jsonl": _jsonl_parts,
    "csv": _csv_parts,
    "parquet": _parquet_parts,
    "hf": _hf_parts,
    "verl": _verl_parts,
}


class _Table:
    """A format whose rows hold misstep's own fields (``--map`` names the columns that hold
    them otherwise)."""

    name = ""
    description = ""
    suffixes: tuple[str, ...] = ()
    table = True
    columns: Mapping[str, str | tuple[str, ...]] = {}
    options: Mapping[str, str] = {}

    def recognises(self, row: Mapping[str, Any]) -> bool:
        return False

    def files(self, folder: Path) -> list[Path]:
        """Every file under the folder with one of the format's suffixes (gzip or not)."""
        ends = self.suffixes
        return files_under(folder, lambda p: p.name.lower().removesuffix(".gz").endswith(ends))

    def parts(self, path: Path, spec: ReadSpec) -> list[Part]:
        if not path.is_dir():
            return PARTS[self.name](path)
        return [part for file in self.files(path) for part in PARTS[self.name](file)]


class Jsonl(_Table):
    """``--input-format jsonl``."""

    name = "jsonl"
    description = "JSON lines of misstep's fields (problem_id, response, gold_answer, ...)"
    suffixes = (".jsonl", ".ndjson", ".json")

    def files(self, folder: Path) -> list[Path]:
        """Every JSON-lines file under the folder (``.json`` files are left out: beside a run
        they hold configs and metrics)."""
        return files_under(folder, lambda p: is_jsonl_name(p.name))


class Csv(_Table):
    """``--input-format csv``."""

    name = "csv"
    description = "CSV with a header of misstep's fields"
    suffixes = (".csv",)


class Parquet(_Table):
    """``--input-format parquet``."""

    name = "parquet"
    description = "Parquet with columns of misstep's fields"
    suffixes = (".parquet", ".pq")


class HfDataset(_Table):
    """``--input-format hf``: one folder, the one ``datasets.save_to_disk`` wrote."""

    name = "hf"
    description = "a datasets save_to_disk folder with columns of misstep's fields"

    def files(self, folder: Path) -> list[Path]:
        return []

    def parts(self, path: Path, spec: ReadSpec) -> list[Part]:
        return _hf_parts(path)


class VerlDump:
    """``--input-format verl``: a folder of ``<step>.jsonl`` validation dumps."""

    name = "verl"
    description = "verl validation dumps (trainer.validation_data_dir: <step>.jsonl files)"
    suffixes: tuple[str, ...] = ()
    table = False
    columns: Mapping[str, str | tuple[str, ...]] = {}
    options: Mapping[str, str] = {}

    def recognises(self, row: Mapping[str, Any]) -> bool:
        return False

    def files(self, folder: Path) -> list[Path]:
        return [file for _, file in verl_files(folder)]

    def parts(self, path: Path, spec: ReadSpec) -> list[Part]:
        return _verl_parts(path)
