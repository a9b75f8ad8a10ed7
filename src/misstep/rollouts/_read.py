"""``read_traces``: stream Traces from any input misstep reads.

The reader of the input's format yields records (``_records``); one loop here turns them into
Traces, errors or rejects, and catches a trace id that repeats.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from pathlib import Path
from typing import Any

from misstep.errors import InvalidRecordError
from misstep.rollouts._formats import resolve_format
from misstep.rollouts._readers import PARTS
from misstep.rollouts._records import Part
from misstep.rollouts._rejects import RejectSink
from misstep.rollouts._rowmap import RowError, build_trace
from misstep.rollouts._trace import Trace

__all__ = ["read_traces"]


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
    parts = PARTS[fmt](p)
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
