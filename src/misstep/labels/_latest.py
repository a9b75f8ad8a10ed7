"""Which of two labels of a trace is the later one: the one rule every reader of people's labels
uses (``human_consensus`` and so summary, link, report and the corrected distributions;
``agree``'s raters; the review app's pages), so that the page, a restart and every statistic
agree.

A label is later than another when its ``created_at`` is later. A label without a
``created_at`` (files from elsewhere: the shared human labels, a filled-in task, an import) is
earlier than every label with one. Between two labels with the same ``created_at``, or both
without one, the one read later wins: files in the order they are given (a run's own
``RUN_DIR/human/*.jsonl`` by name, after the ``--human`` files), lines in file order. So a
decision made later on any server wins, whatever the file names of its adjudicators; within
one file, where lines are appended in time, the two orders are the same.

``created_at`` is ISO 8601 (``misstep.labels.utc_now`` writes it, UTC to the millisecond); one
without a UTC offset is read as UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

__all__ = ["Timed", "label_time", "supersedes"]

_EARLIEST = datetime.min.replace(tzinfo=UTC)


class Timed(Protocol):
    """Anything with a ``created_at`` (a ``HumanLabel``)."""

    @property
    def created_at(self) -> str | None:
        """When it was given, ISO 8601; None when not recorded."""


def label_time(created_at: str | None) -> datetime | None:
    """``created_at`` as an aware datetime (naive ones are UTC); None when absent. ValueError
    when it is not ISO 8601."""
    if created_at is None:
        return None
    when = datetime.fromisoformat(created_at)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _key(label: Timed) -> tuple[bool, datetime]:
    when = label_time(label.created_at)
    return (when is not None, when or _EARLIEST)


def supersedes(new: Timed, old: Timed) -> bool:
    """Whether ``new``, read after ``old``, replaces it as the later label (the rule of the
    module docstring)."""
    return _key(new) >= _key(old)
