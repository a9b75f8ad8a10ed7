"""The verdict a judge returns for one request, as storage reads it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pydantic import BaseModel

    from misstep.verdict._status import LabelStatus

__all__ = ["LABEL_FIELDS", "RecordedTry", "Verdict"]

LABEL_FIELDS = ("error_type", "first_error_step", "evidence", "explanation", "confidence")
"""The fields of an ok verdict's label (``misstep.judge.label_model``), as a stored record
holds them."""


class RecordedTry(Protocol):
    """One attempt of a request (``misstep.judge.Try``), as a record lists it."""

    def as_dict(self) -> dict[str, Any]:
        """The attempt as JSON: ``kind``, ``seed``, ``temperature``, ``status``."""
        ...


class Verdict(Protocol):
    """What a judge returns for one request (``misstep.judge.JudgeResult``), as much of it as a
    stored record reads: the status, the label of an ok one (its ``LABEL_FIELDS``), why not
    otherwise, and what the exchange cost."""

    @property
    def status(self) -> LabelStatus: ...
    @property
    def label(self) -> BaseModel | None: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def raw_reply(self) -> str | None: ...
    @property
    def problem(self) -> str | None: ...
    @property
    def usage(self) -> Mapping[str, int] | None: ...
    @property
    def reasoning(self) -> str | None: ...
    @property
    def tries(self) -> Sequence[RecordedTry] | None: ...
