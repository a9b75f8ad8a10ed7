"""One writer per run directory: ``misstep label`` holds ``RUN_DIR/.lock`` while it writes."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from misstep.errors import LabelStoreError
from misstep.labels._rundir import RunDir

__all__ = ["run_dir_lock"]


@contextlib.contextmanager
def run_dir_lock(run_dir: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on ``run_dir`` (an ``flock`` on ``RUN_DIR/.lock``, released by
    the system however the process ends, kill -9 included). A second holder gets a
    LabelStoreError naming the process that holds it."""
    run_dir = Path(run_dir)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        fh = open(RunDir(run_dir).lock, "a+")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise LabelStoreError(path=run_dir, reason=f"cannot create its lock: {exc}") from None
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise LabelStoreError(
                path=run_dir,
                reason=f"another `misstep label` is writing this run directory ({holder})",
                hint="wait for it to finish, or label into another run directory",
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}, since {datetime.now(UTC).isoformat(timespec='seconds')}")
        fh.flush()
        yield
    finally:
        fh.close()  # closing the file releases the lock
