"""Per-problem answer-class counts: the one pass over the graded table every vote metric reuses.

A *problem* here is one (checkpoint, dataset, problem_id). Its samples split into answer
classes (rows sharing an ``answer_class`` key) plus a "no answer" bucket (``answer_class`` is
None: truncated and no-answer rows, which never vote). A class is *correct* when it holds at
least one row with ``correct=True``.

Compute it once with :func:`problem_counts` and pass the result to ``vote_metrics``,
``problem_stats`` and ``coverage`` to avoid recounting a large table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pandas as pd

from misstep.errors import InputFormatError

__all__ = ["ProblemCounts", "problem_counts"]

_REQUIRED = ("checkpoint", "dataset", "problem_id", "answer_class", "outcome", "correct")
_KEYS = ["checkpoint", "dataset", "problem_id"]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ProblemCounts:
    """Counts of one graded table; build it with :func:`problem_counts`."""

    problems: pd.DataFrame
    """One row per (checkpoint, dataset, problem_id), index 0..P-1: ``checkpoint``, ``step``,
    ``dataset``, ``problem_id``, ``n``, ``c`` (rows with correct=True), ``n_answered``,
    ``n_truncated``, ``n_no_answer``, ``n_wrong`` and ``n_correct`` (rows by ``outcome``)."""
    classes: pd.DataFrame
    """One row per (problem, answer class): ``pidx`` (row of ``problems``), ``answer_class``,
    ``count``, ``correct`` (the class holds a correct row), ``n_correct`` (its correct rows;
    a table from ``grade_traces`` has 0 or ``count``: classes are split by grade)."""
    _signatures: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    def signatures(self) -> tuple[IntArray, IntArray]:
        """Unique vote signatures and, per problem, the index of its signature.

        A signature is what maj@k depends on: each class's count and whether it is correct
        (encoded ``2 * count + correct``, sorted descending, 0-padded) and, last column, the
        size of the no-answer bucket. Problems with equal signatures share one maj@k value.
        """
        if "unique" not in self._signatures:
            self._signatures["unique"], self._signatures["inverse"] = _signatures(self)
        return self._signatures["unique"], self._signatures["inverse"]  # type: ignore[return-value]


def _signatures(counts: ProblemCounts) -> tuple[IntArray, IntArray]:
    n_problems = len(counts.problems)
    cls = counts.classes
    pidx = cls["pidx"].to_numpy(np.int64)
    code = cls["count"].to_numpy(np.int64) * 2 + cls["correct"].to_numpy(np.int64)
    order = np.lexsort((-code, pidx))
    pidx, code = pidx[order], code[order]
    n_classes = np.bincount(pidx, minlength=n_problems)
    width = int(n_classes.max()) if n_problems and len(pidx) else 0
    starts = np.concatenate(([0], np.cumsum(n_classes)[:-1]))
    position = np.arange(len(pidx)) - starts[pidx]
    matrix = np.zeros((n_problems, width + 1), dtype=np.int64)
    matrix[pidx, position] = code
    problems = counts.problems
    matrix[:, width] = problems["n"].to_numpy(np.int64) - problems["n_answered"].to_numpy(np.int64)
    if n_problems == 0:
        return matrix, np.zeros(0, dtype=np.int64)
    unique, inverse = np.unique(matrix, axis=0, return_inverse=True)
    return unique, inverse.reshape(-1).astype(np.int64)


def _check_columns(graded: pd.DataFrame) -> None:
    missing = [c for c in _REQUIRED if c not in graded.columns]
    if missing:
        raise InputFormatError(
            path="<graded table>",
            reason=f"missing column(s) {', '.join(missing)}",
            hint="build it with misstep.rollouts.grade_traces (see GRADED_COLUMNS)",
        )


def _as_bool(series: pd.Series) -> npt.NDArray[np.bool_]:
    return series.fillna(False).astype(bool).to_numpy()


def problem_counts(graded: pd.DataFrame) -> ProblemCounts:
    """Count samples, correct rows, outcomes and answer classes per problem (vectorised)."""
    _check_columns(graded)
    keys = pd.DataFrame({k: graded[k].astype(str).to_numpy() for k in _KEYS})
    grouped = keys.groupby(_KEYS, sort=False)
    pidx = grouped.ngroup().to_numpy(np.int64)
    n_problems = int(pidx.max()) + 1 if len(pidx) else 0
    first = np.full(n_problems, -1, dtype=np.int64)
    # first row of each problem, for its key columns (reverse assignment keeps the first).
    first[pidx[::-1]] = np.arange(len(pidx) - 1, -1, -1)

    correct = _as_bool(graded["correct"])
    answer_class = graded["answer_class"]
    answered = answer_class.notna().to_numpy()
    outcome = graded["outcome"].astype(str).to_numpy()

    def tally(mask: npt.NDArray[np.bool_]) -> IntArray:
        return np.bincount(pidx[mask], minlength=n_problems).astype(np.int64)

    problems = keys.iloc[first].reset_index(drop=True)
    if "step" in graded.columns:
        steps = pd.to_numeric(graded["step"], errors="coerce")
        first_step = steps.groupby(pidx).min().reindex(range(n_problems))
        problems.insert(1, "step", first_step.astype("Int64").to_numpy())
    else:
        problems.insert(1, "step", pd.Series([pd.NA] * n_problems, dtype="Int64"))
    problems["step"] = problems["step"].astype("Int64")
    problems["n"] = np.bincount(pidx, minlength=n_problems).astype(np.int64)
    problems["c"] = tally(correct)
    problems["n_answered"] = tally(answered)
    problems["n_truncated"] = tally(outcome == "truncated")
    problems["n_no_answer"] = tally(outcome == "no_answer")
    problems["n_wrong"] = tally(outcome == "wrong")
    problems["n_correct"] = tally(outcome == "correct")

    codes, uniques = pd.factorize(answer_class[answered].astype(str))
    n_codes = max(len(uniques), 1)
    combined = pidx[answered] * n_codes + codes.astype(np.int64)
    keys_u, inverse, count = np.unique(combined, return_inverse=True, return_counts=True)
    class_correct = np.bincount(
        inverse.reshape(-1), weights=correct[answered], minlength=len(keys_u)
    )
    classes = pd.DataFrame(
        {
            "pidx": (keys_u // n_codes).astype(np.int64),
            "answer_class": np.asarray(uniques, dtype=object)[keys_u % n_codes]
            if len(keys_u)
            else np.array([], dtype=object),
            "count": count.astype(np.int64),
            "correct": class_correct > 0,
            "n_correct": class_correct.astype(np.int64),
        }
    )
    return ProblemCounts(problems=problems, classes=classes)
