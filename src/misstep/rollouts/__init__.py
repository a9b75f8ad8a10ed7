"""Rollouts: the trace shape, readers, answer extraction and grading."""

from misstep.rollouts._arithmetic import arithmetic_value
from misstep.rollouts._equivalence import EquivalenceChecker, answers_equivalent
from misstep.rollouts._extract import Extraction, extract_answer
from misstep.rollouts._formats import open_binary
from misstep.rollouts._grade import GradeStats, grade_traces, repetition_score
from misstep.rollouts._normalize import canonical_key
from misstep.rollouts._read import read_traces
from misstep.rollouts._records import iter_json_lines
from misstep.rollouts._registry import INPUT_FORMATS, READERS, Reader, resolve_format
from misstep.rollouts._rejects import RejectSink, default_rejects_path
from misstep.rollouts._rowmap import RowError, build_trace
from misstep.rollouts._source import ReadSpec, parse_column_map
from misstep.rollouts._table import (
    GRADER_VERSION,
    CacheEntry,
    GradedRun,
    cache_entries,
    clear_cache,
    default_cache_dir,
    delete_cache_files,
    input_digest,
    input_size,
    load_graded,
)
from misstep.rollouts._trace import GRADED_COLUMNS, Outcome, Trace, derive_trace_id

__all__ = [
    "GRADED_COLUMNS",
    "GRADER_VERSION",
    "INPUT_FORMATS",
    "READERS",
    "CacheEntry",
    "EquivalenceChecker",
    "Extraction",
    "GradeStats",
    "GradedRun",
    "Outcome",
    "ReadSpec",
    "Reader",
    "RejectSink",
    "RowError",
    "Trace",
    "answers_equivalent",
    "arithmetic_value",
    "build_trace",
    "cache_entries",
    "canonical_key",
    "clear_cache",
    "default_cache_dir",
    "default_rejects_path",
    "delete_cache_files",
    "derive_trace_id",
    "extract_answer",
    "grade_traces",
    "input_digest",
    "input_size",
    "iter_json_lines",
    "load_graded",
    "open_binary",
    "parse_column_map",
    "read_traces",
    "repetition_score",
    "resolve_format",
]
