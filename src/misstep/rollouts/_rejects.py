"""Where invalid input rows go when the user asks to skip them (``--skip-invalid``)."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import IO, Any

import orjson

from misstep.errors import InputError

__all__ = ["RejectSink", "default_rejects_path"]

# Suffixes stripped from an input's name to build the rejects file's name.
_INPUT_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".parquet", ".pq")


def default_rejects_path(input_path: str | Path, out_dir: str | Path | None = None) -> Path:
    """``<out_dir or cwd>/<input stem>.rejects.jsonl``.

    Never beside the input by default: the input may sit on a read-only volume.
    ``traces.jsonl.gz`` gives ``traces.rejects.jsonl``; a directory gives its own name.
    """
    name = Path(input_path).name or "input"
    if name.lower().endswith(".gz"):
        name = name[:-3]
    lowered = name.lower()
    for suffix in _INPUT_SUFFIXES:
        if lowered.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    base = Path(out_dir) if out_dir is not None else Path.cwd()
    return base / f"{name}.rejects.jsonl"


def _json_default(value: Any) -> Any:
    # Rows from parquet or datasets may hold dates, bytes or decimals: keep them readable.
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


class RejectSink:
    """Collects rejected rows as JSON lines: ``source``, ``line``, ``field``, ``reason``, ``raw``.

    The file is created (truncated) only when the first reject arrives, so a clean input
    leaves nothing behind. Use it as a context manager, or call :meth:`close`.
    """

    def __init__(self, path: str | Path, *, source: str | Path | None = None) -> None:
        self.path = Path(path)
        self.source = None if source is None else str(source)
        self.count = 0
        self._file: IO[bytes] | None = None

    def write(
        self,
        line: int,
        reason: str,
        raw: str | dict[str, Any],
        field: str | None = None,
        *,
        source: str | Path | None = None,
    ) -> None:
        """Record one rejected row: its 1-based line (or row) number, why, and the row itself."""
        if self._file is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("wb")
            except OSError as exc:
                raise InputError(
                    f"cannot write the rejects file {self.path}: {exc.strerror or exc}",
                    hint="choose a writable output directory",
                ) from exc
        record = {
            "source": str(source) if source is not None else self.source,
            "line": line,
            "field": field,
            "reason": reason,
            "raw": raw,
        }
        self._file.write(
            orjson.dumps(
                record,
                default=_json_default,
                option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_NON_STR_KEYS,
            )
        )
        self.count += 1

    def close(self) -> None:
        """Flush and close the file, if one was opened."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> RejectSink:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RejectSink(path={str(self.path)!r}, count={self.count})"
