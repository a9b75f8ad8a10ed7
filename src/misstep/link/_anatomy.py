"""Anatomy of majority-vote failures: why the full-n vote of a problem came out wrong.

Built on ``misstep.metrics.problem_stats``, which holds the one definition of a
**majority-vote failure** (at least one sample is correct, and the full-n vote does not score 1:
a wrong class wins or ties for the top). Per problem (checkpoint x dataset x problem_id), over
its ``n`` samples:

- ``correct_votes``: answered samples in correct answer classes; ``n_truncated`` and
  ``n_no_answer``: samples cut at the token limit and samples without a final answer, which
  never vote; ``n_unanswered`` their sum; ``n_answered = n - n_unanswered``;
- the top wrong class: the wrong class with the most votes (ties: the smaller class key);
  ``top_wrong_count`` its votes, ``top_wrong_answer`` one of its answers as written.

Every failure gets exactly one kind, checked in this order:

1. ``truncation-driven`` / ``no-answer-driven``: the unanswered samples outnumber the correct
   votes and are at least as many as the winning wrong class (``n_unanswered >
   correct_votes`` and ``n_unanswered >= top_wrong_count``), so answering them right would
   have won; named after the larger of the two unanswered kinds (truncated when tied);
2. ``consistent-wrong``: ``top_wrong_count > n_answered / 2``: one wrong class holds a strict
   majority of the answered votes;
3. ``scattered``: otherwise; the vote is split and a wrong class wins narrowly or by a tie.

The error-type mix of a failure compares the labelled traces of the winning wrong class against
the labelled wrong traces of the same problem outside it. ``winner_type`` is the most common
type among the winning class's labelled traces (ties: the smaller key), None when none is
labelled.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from misstep.metrics import problem_stats

__all__ = ["FAILURE_KINDS", "PROBLEM_KEY", "failure_mix", "problem_votes", "winner_types"]

PROBLEM_KEY = ["checkpoint", "dataset", "problem_id"]
FAILURE_KINDS = ("consistent-wrong", "scattered", "truncation-driven", "no-answer-driven")


def problem_votes(graded: pd.DataFrame) -> pd.DataFrame:
    """One row per problem with its vote anatomy (columns described in the module docstring).

    Columns: the key, ``n``, ``c`` (correct rows), ``correct_votes``, ``n_truncated``,
    ``n_no_answer``, ``n_unanswered``, ``n_answered``, ``n_wrong_answered``,
    ``top_wrong_class``, ``top_wrong_answer``, ``top_wrong_count``, ``entropy`` (bits, 0 when
    nothing is answered), ``wrong_consistency`` (NaN without wrong answered samples),
    ``majority_failure`` (bool) and ``kind`` (a FAILURE_KINDS value or None).
    """
    stats = problem_stats(graded)
    out = stats[[*PROBLEM_KEY, "n", "c", "n_answered", "n_truncated", "n_no_answer"]].copy()
    out["n_unanswered"] = out["n_truncated"] + out["n_no_answer"]
    out["n_wrong_answered"] = stats["n_wrong_answered"].astype(int)
    out["correct_votes"] = out["n_answered"] - out["n_wrong_answered"]
    out["top_wrong_class"] = stats["top_wrong_class"]
    out["top_wrong_count"] = stats["top_wrong_count"].astype(int)
    out["entropy"] = stats["entropy"].fillna(0.0)
    out["wrong_consistency"] = stats["wrong_consistency"]
    out["majority_failure"] = stats["majority_failure"].astype(bool)
    answers = (
        graded.loc[graded["answer_class"].notna(), [*PROBLEM_KEY, "answer_class", "answer"]]
        .drop_duplicates([*PROBLEM_KEY, "answer_class"])
        .rename(columns={"answer_class": "top_wrong_class", "answer": "top_wrong_answer"})
    )
    for column in (*PROBLEM_KEY, "top_wrong_class"):
        answers[column] = answers[column].astype(object)
        out[column] = out[column].astype(object)
    out = out.merge(answers, on=[*PROBLEM_KEY, "top_wrong_class"], how="left")
    unanswered_driven = (out["n_unanswered"] > out["correct_votes"]) & (
        out["n_unanswered"] >= out["top_wrong_count"]
    )
    unanswered_kind = np.where(
        out["n_truncated"] >= out["n_no_answer"], "truncation-driven", "no-answer-driven"
    )
    consistent = out["top_wrong_count"] * 2 > out["n_answered"]
    kind = np.where(
        unanswered_driven,
        unanswered_kind,
        np.where(consistent, "consistent-wrong", "scattered"),
    )
    out["kind"] = pd.Series(kind, index=out.index, dtype=object).where(
        out["majority_failure"], None
    )
    return out


def failure_mix(votes: pd.DataFrame, wrong_labelled: pd.DataFrame) -> pd.DataFrame:
    """Per labelled wrong trace of a failed problem: whether it is in the winning wrong class.

    ``wrong_labelled`` has the key columns, ``trace_id``, ``answer_class`` and ``error_type``.
    Returns those rows of failed problems with ``in_winner`` (bool) and the problem's ``kind``.
    """
    failed = votes.loc[votes["majority_failure"], [*PROBLEM_KEY, "top_wrong_class", "kind"]]
    rows = wrong_labelled.merge(failed, on=PROBLEM_KEY, how="inner")
    rows["in_winner"] = rows["answer_class"] == rows["top_wrong_class"]
    return rows


def winner_types(mix: pd.DataFrame) -> pd.DataFrame:
    """Per failed problem: ``winner_type`` and its share among the winning class's labels."""
    win = mix[mix["in_winner"]]
    if win.empty:
        return pd.DataFrame(columns=[*PROBLEM_KEY, "winner_type", "winner_type_share"])
    counts = win.groupby([*PROBLEM_KEY, "error_type"], sort=False).size().rename("k").reset_index()
    counts["tot"] = counts.groupby(PROBLEM_KEY, sort=False)["k"].transform("sum")
    best = counts.sort_values(["k", "error_type"], ascending=[False, True]).drop_duplicates(
        PROBLEM_KEY
    )
    best = best.assign(winner_type_share=best["k"] / best["tot"]).rename(
        columns={"error_type": "winner_type"}
    )
    return best[[*PROBLEM_KEY, "winner_type", "winner_type_share"]].reset_index(drop=True)
