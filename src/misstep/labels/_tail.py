"""The one repair of an append-only JSONL file's last line, for every writer (labels, people's
labels, selections)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson

__all__ = ["repair_tail"]

_BLOCK = 1 << 16


def repair_tail(path: Path) -> int:
    """Make ``path`` end with a whole line before anything is appended; return the bytes dropped.

    A last line without its newline was cut by a kill. If it still parses as a JSON object, only
    the newline was lost: add it. Otherwise drop the fragment (it was never acknowledged; its
    work is simply done again), so that it never sits in the middle of the file where it would
    read as corruption. The caller holds the file's lock."""
    if not path.exists() or path.stat().st_size == 0:
        return 0
    with open(path, "rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return 0
        # Walk back in blocks to the last newline: a cut last line can be long (a server that
        # ignored max_tokens left 200 KB in one record).
        cut, pos = -1, size
        while pos > 0 and cut < 0:
            start = max(0, pos - _BLOCK)
            fh.seek(start)
            block = fh.read(pos - start)
            found = block.rfind(b"\n")
            cut = start + found if found >= 0 else -1
            pos = start
        fh.seek(cut + 1)
        fragment = fh.read()
        try:
            complete = isinstance(orjson.loads(fragment), dict)
        except orjson.JSONDecodeError:
            complete = False
        if complete:
            fh.write(b"\n")
            fh.flush()
            return 0
        fh.truncate(size - len(fragment))
        return len(fragment)
