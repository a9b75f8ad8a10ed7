"""What became of one trace's labelling attempt."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["LabelStatus"]


class LabelStatus(StrEnum):
    """What became of one trace's labelling attempt."""

    OK = "ok"
    UNPARSEABLE = "unparseable"
    TRUNCATED = "truncated"
    FAILED = "failed"
    SKIPPED = "skipped"
