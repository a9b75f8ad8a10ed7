"""One sample per problem: which checkpoints, and which story a run tells."""

from __future__ import annotations

from misstep.metrics import one_sample_checkpoints, problem_counts, story_of
from tests.metrics._vote_tables import graded_table, samples


def test_one_sample_checkpoints_by_the_most_samples_of_a_problem() -> None:
    # ck1: every problem one sample -> one sample; ck2: one problem with two -> not;
    # ck3: one sample each over two datasets -> one sample. Steps order them 3, 1, 2.
    table = graded_table(
        {
            ("ck1", "d", "p1"): samples(A=1),
            ("ck1", "d", "p2"): samples(B=1),
            ("ck2", "d", "p1"): samples(A=1),
            ("ck2", "d", "p2"): samples(A=1, B=1),
            ("ck3", "d", "p1"): samples(B=1),
            ("ck3", "e", "p1"): samples(none=1),
        },
        steps={"ck1": 20, "ck2": 30, "ck3": 10},
    )
    assert one_sample_checkpoints(table) == ["ck3", "ck1"]
    assert one_sample_checkpoints(problem_counts(table)) == ["ck3", "ck1"]
    assert one_sample_checkpoints(table.iloc[0:0]) == []


def test_story_of() -> None:
    cks = ["a", "b", "c"]
    assert story_of([], cks) == "votes"
    assert story_of(["b"], cks) == "mixed"
    assert story_of(["a", "b", "c"], cks) == "one-sample"
    # a checkpoint outside the list does not count
    assert story_of(["z"], cks) == "votes"
