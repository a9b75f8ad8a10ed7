"""What became of one trace's labelling attempt."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["LabelStatus"]


class LabelStatus(StrEnum):
    """What became of one trace's labelling attempt. Only ``ok`` carries an error type;
    ``abstained`` is the judge's own answer that it cannot tell (no type, no step): a status,
    never a class, and every analysis counts it as "not typed"."""

    OK = "ok"
    ABSTAINED = "abstained"
    UNPARSEABLE = "unparseable"
    TRUNCATED = "truncated"
    FAILED = "failed"
    SKIPPED = "skipped"
