"""People's labels from the review app: one append-only ``RUN_DIR/human/<annotator>.jsonl``
per person, in the shape ``read_human_labels`` reads.

Each label is one ``os.write`` of a whole line on a file opened with ``O_APPEND``, under a
lock (a thread lock per file and an ``flock``, so two processes serving the same run do not
interleave either), then ``fsync`` before the server answers: once answered, a label survives
kill -9 and a power cut. Should a line still be cut (a full disk), the next write removes the
fragment first, as ``LabelStore`` does, so no corrupt line ever sits in the middle.
"""

from __future__ import annotations

import fcntl
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, Field

from misstep.errors import LabelStoreError
from misstep.labels import RunDir, repair_tail

__all__ = [
    "CANT_TELL",
    "REVIEW_LABEL_VERSION",
    "HumanLabelWriter",
    "Reveal",
    "ReviewLabel",
]

REVIEW_LABEL_VERSION = 1
CANT_TELL = "cant_tell"
"""The choice "I can't tell": stored as error_type, first_error_step and has_error all null,
with ``verdict`` ``cant_tell``; it supersedes the person's earlier label of the trace and
takes part in no agreement figure."""
Verdict = Literal["error", "no_error", "cant_tell"]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class ReviewLabel(BaseModel):
    """One line of ``RUN_DIR/human/<annotator>.jsonl``: a ``HumanLabel`` plus what the review
    app knows of how it was made (readers of ``HumanLabel`` ignore the extra fields)."""

    version: int = REVIEW_LABEL_VERSION
    """Record format version."""
    trace_id: str
    """The labelled trace."""
    annotator: str
    """Who labelled it (also the file name)."""
    error_type: str | None = None
    """A taxonomy key; None for "no error" and "can't tell"."""
    first_error_step: int | None = None
    """0-based index into ``split_steps`` of the trace; None when not given."""
    has_error: bool | None = None
    """True for an error type, False for "no error", None for "can't tell"."""
    verdict: Verdict
    """``error``, ``no_error`` or ``cant_tell``."""
    note: str | None = None
    """The person's note."""
    blind: bool = False
    """The judge's label had not been shown to this annotator for this trace when the label
    was given (``--blind``; a recorded reveal makes every later label ``false``)."""
    judge: str | None = None
    """Id of the judge configuration whose label the trace had (shown or not)."""
    weight: float = 1.0
    """Inverse inclusion probability of the trace in the sample it was drawn in (the queue's
    stratified draw, computed once at start, or the ``--task`` file); 1 when the trace was
    labelled outside that sample."""
    role: Literal["annotator", "adjudicator"] = "annotator"
    """``adjudicator``: the decision that settles people's disagreement on the trace
    (``misstep review --adjudicate``), which ``human_consensus`` takes as its human label."""
    mapping_method: str = "misstep review"
    """Where the label comes from."""
    created_at: str = Field(default_factory=_now)
    """UTC timestamp, ISO 8601."""


class Reveal(BaseModel):
    """One line of ``RUN_DIR/human/reveals/<annotator>.jsonl``: the judge's label of a trace
    was shown to this annotator in blind mode."""

    version: int = REVIEW_LABEL_VERSION
    """Record format version."""
    trace_id: str
    """The trace whose judge label was shown."""
    annotator: str
    """To whom."""
    judge: str | None = None
    """Id of the judge configuration shown."""
    created_at: str = Field(default_factory=_now)
    """UTC timestamp, ISO 8601."""


class HumanLabelWriter:
    """Appends labels to ``RUN_DIR/human/<annotator>.jsonl``; safe across threads."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = RunDir(Path(run_dir))
        self.directory = self.run_dir.human_dir
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def path(self, annotator: str) -> Path:
        """The file of ``annotator`` (validated: the name never reaches the file system
        otherwise)."""
        return self.run_dir.human_file(annotator)

    def _lock(self, annotator: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(annotator, threading.Lock())

    def repair(self) -> None:
        """Make every file of the folder end with a whole line (a kill during a write, or a
        full disk, can leave a fragment that was never acknowledged)."""
        if not self.directory.is_dir():
            return
        for path in sorted([*self.run_dir.human_files(), *self.run_dir.reveal_files()]):
            with self._lock(str(path)):
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

    def append(self, label: ReviewLabel | Reveal) -> Path:
        """Write ``label`` (or a reveal, to its own folder) durably (flushed and fsynced) and
        return the file."""
        if isinstance(label, Reveal):
            path = self.run_dir.reveals_file(label.annotator)
        else:
            path = self.path(label.annotator)
        line = orjson.dumps(label.model_dump(mode="json")) + b"\n"
        with self._lock(str(path)):
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
