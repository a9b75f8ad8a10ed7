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
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterable
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


def read_reveals(run_dir: str | Path) -> list[Reveal]:
    """Every recorded reveal of the run (``RUN_DIR/human/reveals/*.jsonl``), file by file in
    the order written; a cut last line (never acknowledged) is skipped, as the label store
    does."""
    reveals: list[Reveal] = []
    for path in RunDir(Path(run_dir)).reveal_files():
        for number, record in iter_label_lines(path):
            try:
                reveals.append(Reveal.model_validate(record))
            except ValidationError as exc:
                raise LabelStoreError(
                    path=path, line=number, reason=f"not a reveal: {exc.errors()[0]['msg']}"
                ) from None
    return reveals


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
            path = self.run_dir.reveals_file(label.annotator)
            line = orjson.dumps(label.model_dump(mode="json")) + b"\n"
        else:
            path = self.path(label.annotator)
            line = human_label_line(label)
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
