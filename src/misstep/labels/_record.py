"""The stored label: one line of ``RUN_DIR/labels.jsonl``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from misstep.verdict import LabelStatus

__all__ = ["LABEL_RECORD_VERSION", "StoredLabel"]

LABEL_RECORD_VERSION = 2
"""2: ``problem`` stored apart from ``reason`` (a version-1 record has none; its readers take
the problem from the reason)."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class StoredLabel(BaseModel):
    """A judge's label of one trace, as stored. The last record of a trace is its current one."""

    model_config = ConfigDict(extra="ignore")

    version: int = LABEL_RECORD_VERSION
    """Record format version."""
    trace_id: str
    """The labelled trace."""
    judge: str
    """Short id of the judge configuration: backend, model, taxonomy/prompt hashes, sampling."""
    status: LabelStatus
    """``ok`` when a label was produced; otherwise why not."""
    error_type: str | None = None
    """A taxonomy key; None unless ``status`` is ``ok``."""
    first_error_step: int | None = None
    """0-based index into the numbered steps the judge was shown."""
    evidence: str | None = None
    """Short verbatim quote of the faulty step."""
    explanation: str | None = None
    """One or two sentences on what went wrong."""
    confidence: float | None = None
    """The judge's confidence, 0 to 1."""
    evidence_verified: bool = False
    """The quote occurs in the trace after whitespace normalisation."""
    attempts: int = 0
    """Requests made for this record (0 for skipped traces)."""
    latency_ms: float = 0.0
    """Wall time spent on this trace's requests."""
    created_at: str = Field(default_factory=_now)
    """UTC timestamp, ISO 8601."""
    reason: str | None = None
    """Why the trace was skipped or failed (e.g. the outcome ``truncated``)."""
    raw_reply: str | None = None
    """The reply as received, kept for ``unparseable`` and ``truncated`` records."""
    problem: str | None = None
    """Of an ``unparseable`` record: what was wrong with the reply, alone (``reason`` may add
    the attempts made); a later round's re-ask names it. None in version-1 records."""
    trace_cut: bool = False
    """The trace was shortened to fit ``--max-trace-tokens`` before judging."""
    samples: int = 1
    """Judge samples asked for (``--samples``)."""
    sample_agreement: float | None = None
    """Share of the judge samples that agree with the stored majority label."""
    checkpoint: str | None = None
    """Checkpoint of the trace, copied for convenience."""
    dataset: str | None = None
    """Dataset of the trace, copied for convenience."""
    problem_id: str | None = None
    """Problem of the trace, copied for convenience."""
    inclusion_prob: float | None = None
    """Probability that this trace was drawn into the label sample (``--per-checkpoint``,
    ``--pilot``); None when every trace is judged."""
    reasoning: str | None = None
    """The judge's reasoning text, when the server returns it apart (a reasoning parser)."""
    prompt_tokens: int | None = None
    """Prompt tokens the server counted for this record's requests (all attempts)."""
    completion_tokens: int | None = None
    """Completion tokens the server counted for this record's requests (all samples)."""
    tries: list[dict[str, Any]] | None = None
    """What each request of this record was, in order: ``kind`` (``first``, ``cut-retry``
    after a reply cut at the token limit, ``reask`` after a reply that broke the schema),
    ``seed``, ``temperature`` and the ``status`` of its reply; None for skipped traces."""
