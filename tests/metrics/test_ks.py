"""The one rule for k against a run's samples (``misstep.metrics.check_ks``)."""

from __future__ import annotations

import pandas as pd
import pytest

from misstep.errors import OptionError
from misstep.metrics import check_ks, default_ks, fitting_samples, k_fits, max_samples


def test_allowed_ks_pass_sorted_and_distinct() -> None:
    assert check_ks([4, 1, 4], 16) == [1, 4]


@pytest.mark.parametrize(
    ("ks", "most", "hint"),
    [
        ([1, 4, 8], 1, "ks 1"),  # one sample per problem: only k=1 (issue 27 item 5)
        ([1, 4, 32], 16, "ks 1,4,16"),  # the ks that fit, and the most samples
        ([1, 4, 8], 6, "ks 1,4,6"),
    ],
)
def test_a_k_above_the_samples_is_refused_with_a_hint_the_data_allow(
    ks: list[int], most: int, hint: str
) -> None:
    with pytest.raises(OptionError) as info:
        check_ks(ks, most)
    # the domain names the field (the CLI says --k: tests/cli/test_analysis_options.py)
    assert info.value.option == "ks"
    assert info.value.hint is not None and info.value.hint.endswith(hint)
    assert info.value.renamed("--k").hint == "pass ks these samples allow, e.g. --k" + hint[2:]
    suggested = [int(k) for k in hint.removeprefix("ks ").split(",")]
    assert check_ks(suggested, most) == suggested  # the hint itself passes


def test_k_below_one_is_refused() -> None:
    with pytest.raises(OptionError):
        check_ks([0, 1], 4)


def test_defaults_follow_the_samples() -> None:
    assert default_ks(1) == [1]
    assert default_ks(8) == [1, 4]
    assert default_ks(50) == [1, 4, 16]


def test_a_group_has_a_value_only_where_every_problem_has_k_samples() -> None:
    assert k_fits(4, 4) and not k_fits(4, 3) and not k_fits(0, 3)


def test_max_samples_counts_rows_per_problem() -> None:
    table = pd.DataFrame(
        {
            "checkpoint": ["c"] * 3 + ["d"],
            "dataset": ["x"] * 4,
            "problem_id": ["p", "p", "q", "p"],
            "answer_class": ["1", "2", "1", "1"],
            "outcome": ["correct", "wrong", "correct", "correct"],
            "correct": [True, False, True, True],
        }
    )
    assert max_samples(table) == 2  # c/p has two rows; c/q and d/p one each
    # Every group has a problem with one sample (c/q, d/p): no k above 1 gives a value.
    assert fitting_samples(table) == 1 and default_ks(fitting_samples(table)) == [1]
