"""Anatomy of majority-vote failures: why the full-n vote of a problem came out wrong.

Per problem (checkpoint x dataset x problem_id), over its ``n`` samples:

- ``correct_votes``: answered samples whose answer class is correct (a class is correct when it
  holds a row with ``correct=True``); ``n_unanswered``: truncated plus no-answer samples, which
  never vote; ``n_answered = n - n_unanswered``.
- the top wrong class: the wrong answer class with the most votes (ties broken by the smaller
  class key, so the result is deterministic); ``top_wrong_count`` its votes.
- a **majority-vote failure**: ``correct_votes >= 1`` and ``top_wrong_count >= correct_votes``,
  i.e. some sample is right but a wrong class gets at least as many votes as the right answer
  (a tie counts as a failure: the vote no longer delivers the right answer for sure).

Every failure gets exactly one kind, checked in this order:

1. ``truncation-driven``: ``n_unanswered > correct_votes`` and ``n_unanswered >=
   top_wrong_count``: the right samples are outnumbered by truncated or no-answer ones, which
   are at least as many as the winning wrong class, so answering them right would have won.
2. ``consistent-wrong``: ``top_wrong_count > n_answered / 2``: one wrong class holds a strict
   majority of the answered votes (wins outright).
3. ``scattered``: otherwise; the vote is split and a wrong class wins narrowly or by a tie.

The error-type mix of a failure compares the labelled traces of the winning wrong class against
the labelled wrong traces of the same problem outside it. ``winner_type`` is the most common
type among the winning class's labelled traces (ties: the smaller key), None when none is
labelled.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["FAILURE_KINDS", "PROBLEM_KEY", "failure_mix", "problem_votes", "winner_types"]

PROBLEM_KEY = ["checkpoint", "dataset", "problem_id"]
FAILURE_KINDS = ("consistent-wrong", "scattered", "truncation-driven")


def problem_votes(graded: pd.DataFrame) -> pd.DataFrame:
    """One row per problem with its vote anatomy (columns described in the module docstring).

    Columns: the key, ``n``, ``c`` (correct rows), ``correct_votes``, ``n_unanswered``,
    ``n_answered``, ``n_wrong_answered``, ``top_wrong_class``, ``top_wrong_answer``,
    ``top_wrong_count``, ``entropy`` (bits, over answer classes of answered samples),
    ``wrong_consistency`` (top wrong count / wrong answered samples; NaN without wrong ones),
    ``majority_failure`` (bool) and ``kind`` (a FAILURE_KINDS value or None).
    """
    g = graded[[*PROBLEM_KEY, "answer", "answer_class", "outcome", "correct"]]
    correct = g["correct"].fillna(False).astype(bool)
    unanswered = g["answer_class"].isna()
    base = (
        pd.DataFrame(
            {
                "checkpoint": g["checkpoint"],
                "dataset": g["dataset"],
                "problem_id": g["problem_id"],
                "correct": correct,
                "unanswered": unanswered,
            }
        )
        .groupby(PROBLEM_KEY, sort=False)
        .agg(n=("correct", "size"), c=("correct", "sum"), n_unanswered=("unanswered", "sum"))
    )
    answered = g[~unanswered].assign(correct=correct[~unanswered])
    classes = answered.groupby([*PROBLEM_KEY, "answer_class"], sort=False).agg(
        votes=("correct", "size"), is_correct=("correct", "any"), answer=("answer", "first")
    )
    classes = classes.reset_index()
    # Entropy over answer classes in bits: -sum p log2 p with p = votes / answered votes.
    tot = classes.groupby(PROBLEM_KEY, sort=False)["votes"].transform("sum")
    p = classes["votes"] / tot
    classes["plogp"] = -(p * np.log2(p))
    entropy = classes.groupby(PROBLEM_KEY, sort=False)["plogp"].sum()
    correct_votes = classes[classes["is_correct"]].groupby(PROBLEM_KEY, sort=False)["votes"].sum()
    wrong = classes[~classes["is_correct"]]
    wrong_answered = wrong.groupby(PROBLEM_KEY, sort=False)["votes"].sum()
    top = (
        wrong.sort_values(["votes", "answer_class"], ascending=[False, True])
        .drop_duplicates(PROBLEM_KEY)
        .set_index(PROBLEM_KEY)
    )
    out = base.copy()
    out["correct_votes"] = correct_votes.reindex(out.index).fillna(0).astype(int)
    out["n_unanswered"] = out["n_unanswered"].astype(int)
    out["n_answered"] = out["n"] - out["n_unanswered"]
    out["n_wrong_answered"] = wrong_answered.reindex(out.index).fillna(0).astype(int)
    out["top_wrong_class"] = top["answer_class"].reindex(out.index)
    out["top_wrong_answer"] = top["answer"].reindex(out.index)
    out["top_wrong_count"] = top["votes"].reindex(out.index).fillna(0).astype(int)
    out["entropy"] = entropy.reindex(out.index).fillna(0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["wrong_consistency"] = out["top_wrong_count"] / out["n_wrong_answered"].where(
            out["n_wrong_answered"] > 0
        )
    fail = (out["correct_votes"] >= 1) & (out["top_wrong_count"] >= out["correct_votes"])
    out["majority_failure"] = fail
    trunc = (out["n_unanswered"] > out["correct_votes"]) & (
        out["n_unanswered"] >= out["top_wrong_count"]
    )
    consistent = out["top_wrong_count"] * 2 > out["n_answered"]
    kind = np.where(
        trunc, FAILURE_KINDS[2], np.where(consistent, FAILURE_KINDS[0], FAILURE_KINDS[1])
    )
    out["kind"] = pd.Series(kind, index=out.index).where(fail, None)
    return out.reset_index()


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
