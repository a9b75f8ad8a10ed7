"""The graded table of one input, computed once and cached on disk.

Every command that reads traces goes through :func:`load_graded`: it hashes the input's content
(every file of a directory), and when a table graded from the same bytes with the same grading
settings by the same grader exists in the cache, it reads that instead of grading again.

The cache key covers everything that changes a graded table: the input's SHA-256, the input
format, ``regrade``, misstep's version and ``GRADER_VERSION`` (bumped whenever a grading rule
changes). A run that rejected rows (``--skip-invalid``) is not cached: its rejects file must be
written again. Entries are a Parquet file and a JSON sidecar, written atomically (temp file +
rename), under ``$XDG_CACHE_HOME/misstep/graded`` (else ``~/.cache/misstep/graded``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel

from misstep.errors import InputError, InputFormatError, OutputError
from misstep.rollouts._formats import READ_METER, ReadMeter
from misstep.rollouts._grade import grade_traces
from misstep.rollouts._read import read_traces
from misstep.rollouts._rejects import RejectSink
from misstep.rollouts._trace import GRADED_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "GRADER_VERSION",
    "CacheEntry",
    "GradedRun",
    "cache_entries",
    "clear_cache",
    "default_cache_dir",
    "input_digest",
    "input_size",
    "load_graded",
]

GRADER_VERSION = 11
"""Bumped whenever a grading rule changes, so that no stale table is ever read (6: answers made
of elements and percentages compared by misstep's own rules, ``_structure``; 7: unions of
intervals, logarithms in a base, factorials of variables, ``f(x) = ...`` definitions,
``\\quad`` and ``\\text{ and }`` in lists; 9: series, integrals, limits and derivatives get
no value at a point, so ``verify`` decides their pairs where a valuation that ran out of time
made them equal to nothing; 10: the Qwen2.5-Math harness's answer forms; 11: an answer
phrase in Markdown emphasis, ``**Final Answer:**`` with the answer on the line below)."""
CACHE_FORMAT_VERSION = 1
_CHUNK = 1 << 20


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/misstep`` when the variable is set, else ``~/.cache/misstep``."""
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "misstep"


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file())
    return [path]


def input_digest(path: str | Path, on_bytes: Callable[[int], None] | None = None) -> str:
    """SHA-256 of the input's content: the file's bytes, or, for a directory, every file's
    relative path and bytes in sorted order. ``on_bytes(n)`` reports bytes hashed so far."""
    root = Path(path)
    if not root.exists():
        raise InputFormatError(path=root, reason="no such file or directory")
    digest = hashlib.sha256()
    done = 0
    try:
        for file in _files(root):
            if root.is_dir():
                digest.update(file.relative_to(root).as_posix().encode("utf-8", "surrogatepass"))
                digest.update(b"\0")
            with open(file, "rb") as fh:
                while chunk := fh.read(_CHUNK):
                    digest.update(chunk)
                    done += len(chunk)
                    if on_bytes is not None:
                        on_bytes(done)
    except OSError as exc:
        raise InputFormatError(path=root, reason=f"cannot read it: {exc.strerror}") from None
    return digest.hexdigest()


def input_size(path: str | Path) -> int:
    """Bytes of the input (every file of a directory)."""
    return sum(f.stat().st_size for f in _files(Path(path)))


class CacheEntry(BaseModel):
    """The sidecar of one cached graded table."""

    version: int = CACHE_FORMAT_VERSION
    """Cache entry format version."""
    key: str
    """The cache key (file stem)."""
    input_path: str
    """The input as given when the entry was made (informative: the key is the content)."""
    input_sha256: str
    """SHA-256 of the input's content."""
    input_format: str | None
    """``--input-format`` as given (None: inferred)."""
    regrade: bool
    """Whether rows carrying ``correct`` were graded against ``gold_answer``."""
    misstep_version: str
    """misstep's version that graded it."""
    grader_version: int
    """``GRADER_VERSION`` of the grader."""
    rows: int
    """Rows (traces) in the table."""
    created_at: str
    """UTC ISO 8601."""
    bytes: int = 0
    """Size of the Parquet file."""


@dataclass
class GradedRun:
    """The graded table of one input and where it came from."""

    table: pd.DataFrame
    """One row per trace, the columns of ``GRADED_COLUMNS``."""
    input_path: Path
    """The input."""
    input_sha256: str
    """SHA-256 of the input's content (what a label run's manifest records)."""
    from_cache: bool
    """True when the table was read from the cache instead of graded."""
    rejected: int = 0
    """Invalid rows written to the rejects file (with ``rejects``)."""


def _version() -> str:
    from misstep import __version__

    return __version__


def _key(digest: str, input_format: str | None, regrade: bool) -> str:
    text = f"{digest}|{input_format or ''}|{int(regrade)}|{_version()}|{GRADER_VERSION}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _graded_dir(cache_dir: Path | None) -> Path:
    return (cache_dir if cache_dir is not None else default_cache_dir()) / "graded"


def _read_entry(folder: Path, key: str) -> pd.DataFrame | None:
    table_path = folder / f"{key}.parquet"
    if not (folder / f"{key}.json").exists() or not table_path.exists():
        return None
    import pandas as pd

    try:
        table = pd.read_parquet(table_path)
    except Exception:  # a damaged entry is graded again, never trusted
        return None
    if list(table.columns) != list(GRADED_COLUMNS):
        return None
    return table


def _write_entry(folder: Path, entry: CacheEntry, table: pd.DataFrame) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{entry.key}.{os.getpid()}.tmp"
        table.to_parquet(tmp, index=False)
        entry.bytes = tmp.stat().st_size
        os.replace(tmp, folder / f"{entry.key}.parquet")
        meta = folder / f".{entry.key}.{os.getpid()}.json.tmp"
        meta.write_bytes(orjson.dumps(entry.model_dump(mode="json"), option=orjson.OPT_INDENT_2))
        os.replace(meta, folder / f"{entry.key}.json")
    except OSError as exc:
        raise OutputError(
            path=folder,
            reason=f"cannot write the graded-table cache: {exc.strerror or exc}",
            hint="pass --no-cache, or set XDG_CACHE_HOME to a writable directory",
        ) from None


def load_graded(
    path: str | Path,
    *,
    input_format: str | None = None,
    regrade: bool = False,
    rejects: RejectSink | None = None,
    cache: bool = True,
    cache_dir: Path | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    on_hash: Callable[[int], None] | None = None,
    digest: str | None = None,
) -> GradedRun:
    """The graded table of ``path``: from the cache when the same content was graded with the
    same settings, else read and graded (and cached unless rows were rejected).
    ``on_progress(traces, bytes)`` reports the traces read and the input bytes read so far
    (compressed bytes for gzip; 0 for Parquet and datasets folders, which are read by row).

    ``digest``, when the caller has hashed the input already, saves hashing it again.
    Raises ``InputError`` when the input holds no trace at all."""
    source = Path(path)
    digest = digest or input_digest(source, on_hash)
    key = _key(digest, input_format, regrade)
    folder = _graded_dir(cache_dir)
    if cache:
        cached = _read_entry(folder, key)
        if cached is not None:
            return GradedRun(cached, source, digest, from_cache=True)
    meter = ReadMeter()

    def progress(n: int) -> None:
        if on_progress is not None:
            on_progress(n, meter.position())

    token = READ_METER.set(meter)
    try:
        table = grade_traces(
            read_traces(source, input_format=input_format, rejects=rejects),
            regrade=regrade,
            on_progress=progress,
        )
    finally:
        READ_METER.reset(token)
    rejected = rejects.count if rejects is not None else 0
    if table.empty:
        raise InputError(
            f"{source}: no traces" + (f" ({rejected} invalid rows rejected)" if rejected else ""),
            hint="check the path and --input-format; each row needs problem_id and response",
        )
    if cache and not rejected:
        entry = CacheEntry(
            key=key,
            input_path=str(source.resolve()),
            input_sha256=digest,
            input_format=input_format,
            regrade=regrade,
            misstep_version=_version(),
            grader_version=GRADER_VERSION,
            rows=len(table),
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        _write_entry(folder, entry, table)
    return GradedRun(table, source, digest, from_cache=False, rejected=rejected)


def cache_entries(cache_dir: Path | None = None) -> list[CacheEntry]:
    """Every cached graded table, newest first."""
    folder = _graded_dir(cache_dir)
    entries: list[CacheEntry] = []
    if not folder.is_dir():
        return entries
    for meta in folder.glob("*.json"):
        try:
            data: dict[str, Any] = orjson.loads(meta.read_bytes())
            entries.append(CacheEntry.model_validate(data))
        except Exception:  # a damaged sidecar is listed by nothing and cleared by clear_cache
            continue
    return sorted(entries, key=lambda e: e.created_at, reverse=True)


def clear_cache(cache_dir: Path | None = None) -> int:
    """Delete every cached graded table; returns how many files were removed."""
    return delete_cache_files(_graded_dir(cache_dir), (".parquet", ".json", ".tmp"))


def delete_cache_files(folder: Path, endings: tuple[str, ...]) -> int:
    """Delete the files of one cache folder whose names end with one of ``endings`` (the
    folder itself and anything else stay); returns how many were removed. OutputError when one
    cannot be deleted."""
    removed = 0
    if not folder.is_dir():
        return removed
    for file in folder.iterdir():
        if file.is_file() and file.name.endswith(endings):
            try:
                file.unlink()
            except OSError as exc:
                raise OutputError(path=file, reason=f"cannot delete it: {exc.strerror}") from None
            removed += 1
    return removed
