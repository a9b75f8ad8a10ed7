"""The shapes everything else reads: one input trace and its outcome."""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["GRADED_COLUMNS", "Outcome", "Trace", "derive_trace_id"]


class Outcome(StrEnum):
    """What grading says of one trace. ``truncated`` and ``no_answer`` are mechanical
    outcomes: such traces never vote, are never correct and are never sent to a judge."""

    CORRECT = "correct"
    WRONG = "wrong"
    TRUNCATED = "truncated"
    NO_ANSWER = "no_answer"


def derive_trace_id(
    checkpoint: str, dataset: str, problem_id: str, sample_idx: int | None, response: str
) -> str:
    """A stable id for a trace that has none: the same row always gets the same id."""
    if sample_idx is not None:
        return f"{checkpoint}/{dataset}/{problem_id}/{sample_idx}"
    digest = hashlib.sha256(response.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{checkpoint}/{dataset}/{problem_id}/h{digest}"


class Trace(BaseModel):
    """One sampled reasoning trace: a row of the rollouts table."""

    model_config = ConfigDict(extra="forbid", frozen=False)

    problem_id: str
    """Identifies the problem; samples of one problem share it (required)."""
    response: str
    """The model's full output (required)."""
    checkpoint: str = "default"
    """Checkpoint name, e.g. ``global_step_400``."""
    step: int | None = None
    """Training step; orders checkpoints when present."""
    dataset: str = "default"
    """Benchmark the problem comes from."""
    sample_idx: int | None = None
    """Index of this sample among the problem's samples at this checkpoint."""
    trace_id: str = ""
    """Unique id; derived stably from the fields above when absent."""
    problem: str | None = None
    """Problem statement."""
    gold_answer: str | None = None
    """Reference answer, when known."""
    pred_answer: str | None = None
    """Final answer already extracted by the user's pipeline, when given: misstep grades it
    instead of extracting one from the response."""
    harness_answer: str | None = None
    """The answer the evaluation harness that wrote the file extracted (its ``pred``,
    ``filtered_resps``, ``predicted_answer``): kept beside misstep's own, never graded."""
    correct: bool | None = None
    """The user's own grade; when present it is the grade (unless --regrade)."""
    finish_reason: str | None = None
    """``length`` marks a response cut at the token limit."""
    num_tokens: int | None = None
    """Length of the response in tokens."""
    steps: list[str] | None = None
    """The response split into reasoning steps, when the source gives them."""
    model: str | None = None
    """Model name."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Unknown input fields, kept and passed through."""

    def model_post_init(self, __context: Any) -> None:
        if not self.trace_id:
            self.trace_id = derive_trace_id(
                self.checkpoint, self.dataset, self.problem_id, self.sample_idx, self.response
            )


# Columns of the graded table (a pandas DataFrame) that grading produces and eval reads.
# ``answer_class`` is a canonical key: two rows of the same (dataset, problem_id) hold the
# same key exactly when their answers are equivalent; None when the row has no answer.
# Every class is uniformly correct or wrong (grading splits a class by grade where the grade
# and the equivalence disagree), so a class is correct exactly when its rows are.
GRADED_COLUMNS: dict[str, str] = {
    "trace_id": "str",
    "checkpoint": "str",
    "step": "Int64",
    "dataset": "str",
    "problem_id": "str",
    "sample_idx": "Int64",
    "answer": "str | None (extracted or given final answer)",
    "answer_class": "str | None (equivalence-class key within the problem)",
    "outcome": "str (an Outcome value)",
    "correct": "bool",
    "response_chars": "int64 (length of the response in characters)",
    "repetition": "float32 (share of repeated word 4-grams at the response's end; see grading)",
    "harness_answer": "str | None (the answer the source's harness extracted, kept beside)",
    "harness_correct": "boolean, nullable (the grade the row carried, whether or not used)",
}
