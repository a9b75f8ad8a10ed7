"""Rollouts: trace and label shapes, readers, answer extraction and grading."""

from misstep.rollouts._trace import GRADED_COLUMNS, HumanLabel, Outcome, Trace, derive_trace_id

__all__ = ["GRADED_COLUMNS", "HumanLabel", "Outcome", "Trace", "derive_trace_id"]
