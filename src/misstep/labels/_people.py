"""The one writer of people's labels (``HumanLabel`` lines) and of the reveals of the judge in
blind mode, and the reader of the reveals.

A run's own people's labels are ``RUN_DIR/human/<annotator>.jsonl``, append-only
(``HumanLabelWriter``, the review app's): each label is one ``os.write`` of a whole line on a
file opened with ``O_APPEND``, under a lock (a thread lock per file and an ``flock``, so two
processes serving the same run do not interleave either), then ``fsync`` before the caller
answers: once answered, a label survives kill -9 and a power cut. Should a line still be cut (a
full disk), the next write removes the fragment first (``repair_tail``, as ``LabelStore``
does), so no corrupt line ever sits in the middle. ``write_human_labels`` writes a whole file of
them at once (``misstep import-labels``). Both write the same line (``human_label_line``).

The reveals are read from the directory whenever a question depends on them
(``RevealIndex``): several servers on one run directory agree on who was shown what.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import orjson
from pydantic import BaseModel, Field, ValidationError

from misstep.errors import LabelStoreError
from misstep.labels._human import HUMAN_LABEL_VERSION, HumanLabel
from misstep.labels._rundir import RunDir
from misstep.labels._store import iter_label_lines
from misstep.labels._tail import repair_tail

__all__ = [
    "HumanLabelWriter",
    "Reveal",
    "RevealIndex",
    "human_label_line",
    "read_reveals",
    "utc_now",
    "write_human_labels",
]


def utc_now() -> str:
    """Now, UTC ISO 8601 to the millisecond: the ``created_at`` of people's labels."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Reveal(BaseModel):
    """One line of ``RUN_DIR/human/reveals/<annotator>.jsonl``: the judge's label of a trace
    was shown to this annotator in blind mode."""

    version: int = HUMAN_LABEL_VERSION
    """Record format version."""
    trace_id: str
    """The trace whose judge label was shown."""
    annotator: str
    """To whom."""
    judge: str | None = None
    """Id of the judge configuration shown."""
    created_at: str = Field(default_factory=utc_now)
    """UTC timestamp, ISO 8601."""


def human_label_line(label: HumanLabel) -> bytes:
    """The stored line of a person's label: its fields in the model's order, the None ones
    left out (every reader takes an absent field as None), and a newline."""
    return orjson.dumps(label.model_dump(mode="json", exclude_none=True)) + b"\n"


def write_human_labels(path: Path, labels: Iterable[HumanLabel]) -> int:
    """Write ``labels`` as the whole of ``path`` (made or truncated; written in place, so a
    device or a pipe works too); returns how many. ``OSError`` is the caller's to name the
    file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("wb") as fh:
        for label in labels:
            fh.write(human_label_line(label))
            written += 1
    return written


def read_reveals(run_dir: str | Path, annotator: str | None = None) -> list[Reveal]:
    """Every recorded reveal of the run (``RUN_DIR/human/reveals/*.jsonl``; with
    ``annotator``, that person's file alone), file by file in the order written; a cut last
    line (never acknowledged) is skipped, as the label store does."""
    folder = RunDir(Path(run_dir))
    if annotator is None:
        paths = folder.reveal_files()
    else:
        path = folder.reveals_file(annotator)
        paths = [path] if path.is_file() else []
    return [r for path in paths for r in _reveals_in(path)]


def _reveals_in(path: Path) -> list[Reveal]:
    reveals: list[Reveal] = []
    for number, record in iter_label_lines(path):
        try:
            reveals.append(Reveal.model_validate(record))
        except ValidationError as exc:
            raise LabelStoreError(
                path=path, line=number, reason=f"not a reveal: {exc.errors()[0]['msg']}"
            ) from None
    return reveals


class RevealIndex:
    """The traces whose judge label each person was shown, as the run directory holds them
    now: a person's file is read again whenever it has changed (its inode, size or time), so
    a reveal made by another process (a second server on the same run) counts at once. One
    ``stat`` per question otherwise, the same for every trace."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = RunDir(Path(run_dir))
        self._seen: dict[str, tuple[tuple[int, int, int], frozenset[str]]] = {}
        self._lock = threading.Lock()

    def of(self, annotator: str | None) -> frozenset[str]:
        """The trace ids revealed to ``annotator`` (none to a request without a name)."""
        if annotator is None:
            return frozenset()
        path = self.run_dir.reveals_file(annotator)
        try:
            st = path.stat()
        except FileNotFoundError:
            return frozenset()
        signature = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            seen = self._seen.get(annotator)
        if seen is not None and seen[0] == signature:
            return seen[1]
        ids = frozenset(r.trace_id for r in _reveals_in(path))
        with self._lock:
            self._seen[annotator] = (signature, ids)
        return ids

    def has(self, annotator: str | None, trace_id: str) -> bool:
        """Whether the judge's label of ``trace_id`` was shown to ``annotator``."""
        return trace_id in self.of(annotator)


class HumanLabelWriter:
    """Appends people's labels to ``RUN_DIR/human/<annotator>.jsonl`` and reveals to
    ``RUN_DIR/human/reveals/<annotator>.jsonl``; safe across threads and processes."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = RunDir(Path(run_dir))
        self.directory = self.run_dir.human_dir
        """``RUN_DIR/human``."""
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def path(self, annotator: str) -> Path:
        """The file of ``annotator`` (validated: the name never reaches the file system
        otherwise)."""
        return self.run_dir.human_file(annotator)

    def _lock(self, path: Path) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(str(path), threading.Lock())

    def repair(self) -> None:
        """Make every file of the folder end with a whole line (a kill during a write, or a
        full disk, can leave a fragment that was never acknowledged)."""
        for path in sorted([*self.run_dir.human_files(), *self.run_dir.reveal_files()]):
            with self._lock(path):
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
                except OSError:
                    continue  # read-only: browsing still works, writing will say why not
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    repair_tail(path)
                    os.fsync(fd)
                finally:
                    os.close(fd)

    def append(self, label: HumanLabel | Reveal) -> Path:
        """Write ``label`` (or a reveal, to its own folder) durably (flushed and fsynced) and
        return the file."""
        if isinstance(label, Reveal):
            return self.append_reveals([label])
        return self._write(self.path(label.annotator), human_label_line(label))

    def append_reveals(self, reveals: Sequence[Reveal]) -> Path:
        """Write the reveals of one person durably, in one write (an adjudicator shown the
        judge's answers of many traces at once); returns the file."""
        names = {r.annotator for r in reveals}
        if len(names) != 1:
            raise ValueError(f"reveals of exactly one person, not {sorted(names)}")
        path = self.run_dir.reveals_file(names.pop())
        return self._write(
            path, b"".join(orjson.dumps(r.model_dump(mode="json")) + b"\n" for r in reveals)
        )

    def _write(self, path: Path, line: bytes) -> Path:
        with self._lock(path):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                raise LabelStoreError(path=path, reason=f"cannot open for append: {exc}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                repair_tail(path)
                written = os.write(fd, line)
                if written != len(line):
                    raise LabelStoreError(path=path, reason="short write (disk full?)")
                os.fsync(fd)
            except OSError as exc:
                raise LabelStoreError(path=path, reason=f"cannot write: {exc}") from None
            finally:
                os.close(fd)  # releases the flock
        return path
