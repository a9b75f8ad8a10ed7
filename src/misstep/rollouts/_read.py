"""``read_traces``: stream Traces from any input misstep reads.

The reader of the input's format (``_registry``) yields records (``_records``); a table
format's rows take the ``--map`` columns and every row the fields of its file's path
(``ReadSpec``); one loop turns them into Traces, errors or rejects, and catches a trace id
that repeats.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from misstep.errors import InputFormatError, InvalidRecordError
from misstep.rollouts._guess import guess_map, unreadable_rows
from misstep.rollouts._harness import grade_of
from misstep.rollouts._records import Part, Record
from misstep.rollouts._registry import INPUT_FORMATS, READERS, Reader, resolve_format
from misstep.rollouts._rejects import RejectSink
from misstep.rollouts._rowmap import REQUIRED_FIELDS, RowError, build_trace
from misstep.rollouts._source import MAP_FIELDS, MISSING, PathTemplate, ReadSpec, lookup
from misstep.rollouts._trace import Trace

__all__ = ["read_traces"]


def read_traces(
    path: str | Path,
    *,
    input_format: ReadSpec | str | None = None,
    rejects: RejectSink | None = None,
) -> Generator[Trace, None, None]:
    """Stream the traces of ``path`` (a file, or a folder of files).

    ``input_format`` says how: a format's name (``INPUT_FORMATS``), a :class:`ReadSpec`
    (format, path fields, column map) or its text; None recognises the format from the path
    and the first row's fields. An invalid row raises :class:`InvalidRecordError` naming the
    file, the 1-based line (row for parquet and hf, sample for an Inspect log) and the field,
    unless ``rejects`` is given: then it is written there and reading goes on. The path, the
    format and the spec are checked at once (raising :class:`InputFormatError`); rows are read
    as the iterator is consumed. A file whose first row has neither misstep's fields nor a
    harness's raises :class:`InputFormatError` naming the formats misstep reads, the row's
    keys and the ``--map`` that would most likely read it.
    """
    p = Path(path)
    spec = _spec(p, input_format)
    fmt = resolve_format(p, spec)
    reader = READERS[fmt]
    _check_columns(p, reader, spec)
    parts = reader.parts(p, spec)
    if reader.table:
        parts = [_mapped(part, spec.columns) for part in parts]
    template = spec.template
    if template is not None:
        parts = [_with_path_fields(part, template) for part in parts]
    return _traces(parts, rejects)


def _spec(path: Path, value: ReadSpec | str | None) -> ReadSpec:
    try:
        return ReadSpec.of(value)
    except ValidationError as exc:
        reason = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise InputFormatError(
            path=path, reason=reason, hint=f"formats: {', '.join(INPUT_FORMATS)}"
        ) from None


def _check_columns(path: Path, reader: Reader, spec: ReadSpec) -> None:
    """A harness's reader takes ``--map`` for the fields it reads; verl's dumps take none."""
    if reader.table or not spec.columns:
        return
    allowed = [*reader.columns, *reader.options]
    unknown = [field for field in spec.columns if field not in allowed]
    if unknown:
        raise InputFormatError(
            path=path,
            reason=f"--map {', '.join(unknown)}: the {reader.name} reader does not read "
            + ("such a field" if allowed else "columns by name"),
            hint=f"it maps {', '.join(allowed)}" if allowed else "leave out --map",
        )


def _closing(records: Iterable[Record]) -> None:
    close = getattr(records, "close", None)
    if close is not None:
        close()


def _mapped(part: Part, columns: Mapping[str, str]) -> Part:
    """A table format's part with the ``columns`` map applied, and its first row checked for
    misstep's required fields: a file in another tool's shape is refused at once, not row by
    row (a first row that merely lacks a field is a bad row, as any other)."""
    where, records, rename = part

    def mapped() -> Iterator[Record]:
        first = True
        try:
            it = iter(records)
            for line, raw, row in it:
                if type(row) is dict:
                    out = _remap(row, columns) if columns else row
                    if first and type(out) is dict:
                        first = False
                        missing = [f for f in REQUIRED_FIELDS if f not in out]
                        if missing and _other_shape(row, missing):
                            formats = {n: r.description for n, r in READERS.items()}
                            raise unreadable_rows(where, row, missing, formats, columns)
                    row = out
                yield line, raw, row
                if not first and not columns:
                    yield from it  # checked: the rest streams as the reader gives it
                    return
        finally:
            _closing(records)

    return where, mapped(), {**rename, **columns}


def _other_shape(row: Mapping[str, Any], missing: list[str]) -> bool:
    """A first row in another tool's shape, not one bad row: it lacks every required field,
    or holds a column that looks like the one it lacks (``output`` for ``response``)."""
    return len(missing) == len(REQUIRED_FIELDS) or bool(set(missing) & set(guess_map(row)))


def _remap(row: dict[str, Any], columns: Mapping[str, str]) -> dict[str, Any] | RowError:
    out = dict(row)
    for field, column in columns.items():
        value = lookup(row, column)
        if column in out and column not in MAP_FIELDS:
            del out[column]  # read under its new name, not kept twice in extra
        if value is MISSING:
            continue
        if field == "correct":
            try:
                value = grade_of(value, column)
            except RowError as err:
                return err
        out[field] = value
    return out


def _with_path_fields(part: Part, template: PathTemplate) -> Part:
    """A part whose rows take the fields the template reads from its path."""
    where, records, rename = part
    fields = template.match(Path(where).absolute())
    if fields is None:
        n = len(template.text.strip("/").split("/"))
        tail = "/".join(Path(where).absolute().parts[-n:])
        _closing(records)
        raise InputFormatError(
            path=where,
            reason=f"its path does not match --path-fields {template.text!r} (its last {n} "
            f"segments: {tail})",
            hint="the template matches the last segments of each file's path; '*' stands for "
            "one segment, {field} takes its value",
        )

    def with_fields() -> Iterator[Record]:
        try:
            for line, raw, row in records:
                if type(row) is dict:
                    row = {**row, **fields}
                yield line, raw, row
        finally:
            _closing(records)

    return where, with_fields(), rename


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
                    if first == (where, line):
                        pass
                    elif not row.get("trace_id") and trace.sample_idx is None:
                        # A derived id repeats when two rows without sample_idx hold the same
                        # response: number the repeats in input order (stable for one file).
                        trace.trace_id = _next_free(trace.trace_id, seen)
                        seen[trace.trace_id] = (where, line)
                    else:
                        raise _duplicate(trace, first, where, bool(row.get("trace_id")))
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


def _duplicate(trace: Trace, first: tuple[str, int], where: str, given: bool) -> RowError:
    """A second row with the same trace: the same trace_id, or (without one) the same
    checkpoint, dataset, problem_id and sample_idx, which two runs read together give."""
    other = f"line {first[1]}"
    if first[0] != where:
        other += f" of {first[0]}"
    if given:
        return RowError(f"duplicate trace_id: {other} has the same one", "trace_id", trace.trace_id)
    return RowError(
        f"{other} has the same checkpoint, dataset, problem_id and sample_idx ({trace.trace_id}):"
        " two runs read as one? tell them apart with --path-fields (e.g. {checkpoint}/*)",
        "sample_idx",
        trace.sample_idx,
    )


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
