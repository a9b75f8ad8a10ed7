from __future__ import annotations

import pytest

from misstep.errors import OptionError
from misstep.metrics import _majk, vote_metrics
from tests.metrics._vote_tables import graded_table, samples

STEPS = {"global_step_100": 100, "global_step_200": 200}


def _one_dataset() -> list[dict[str, object]]:
    table = graded_table(
        {
            ("global_step_200", "d", "p1"): samples(A=2, B=1, C=1),
            ("global_step_200", "d", "p2"): samples(A=1, B=3),
            ("global_step_100", "d", "p1"): samples(A=2, B=2),
            ("global_step_100", "d", "p2"): samples(B=2, C=1, none=1),
        },
        STEPS,
    )
    return [m.to_json() for m in vote_metrics(table, [1, 2, 4])]


def test_hand_worked_first_checkpoint() -> None:
    first, _ = _one_dataset()
    assert first["checkpoint"] == "global_step_100" and first["dataset"] == "d"
    assert (first["n_problems"], first["n_samples"]) == (2, 8)
    assert first["pass@1"] == pytest.approx(0.25)  # (2/4 + 0/4) / 2
    assert first["pass@2"] == pytest.approx(5 / 12)  # p1: 1 - C(2,2)/C(4,2) = 5/6; p2: 0
    assert first["pass@4"] == pytest.approx(0.5)
    # p1 A A B B, k=2: AA (1 subset) scores 1, AB (4) 1/2 each, BB (1) 0 -> 3/6; p2: 0
    assert first["maj@2"] == pytest.approx(0.25)
    assert first["maj@4"] == pytest.approx(0.25)  # p1 full tie 1/2; p2 0
    assert first["sc_gain@4"] == pytest.approx(0.0)
    # p1 is a failure (tie), p2 is not (no correct sample): 1 of 2 problems
    assert first["majority_failures"] == 1
    assert first["majority_failure_rate"] == pytest.approx(0.5)
    # H(p1) = 1 bit; H(p2) over answered B B C = 0.9183 bits; mean 0.95915
    assert first["answer_entropy"] == pytest.approx(0.959148, abs=1e-6)
    assert (first["n_correct"], first["n_wrong"], first["n_truncated"]) == (2, 5, 1)
    assert first["n_no_answer"] == 0


def test_hand_worked_second_checkpoint_gain() -> None:
    _, second = _one_dataset()
    assert second["pass@1"] == pytest.approx(0.375)  # (2/4 + 1/4) / 2
    # p1 A A B C: full vote A -> 1; p2 A B B B -> 0. maj@4 = 0.5, gain 0.5 - 0.375
    assert second["maj@4"] == pytest.approx(0.5)
    assert second["sc_gain@4"] == pytest.approx(0.125)
    assert second["maj@1"] == pytest.approx(second["pass@1"])


def test_json_keys_exactly() -> None:
    first, _ = _one_dataset()
    expected = ["checkpoint", "dataset", "n_problems", "n_samples"]
    for name in ("pass", "maj", "sc_gain"):
        expected += [key for k in (1, 2, 4) for key in (f"{name}@{k}", f"{name}@{k}_ci")]
    expected += ["answer_entropy", "top1_share", "wrong_consistency"]
    expected += ["majority_failures", "majority_failure_rate"]
    expected += ["n_correct", "n_wrong", "n_truncated", "n_no_answer", "change"]
    assert list(first) == expected


def test_several_datasets_split_by_default_and_pool_on_request() -> None:
    table = graded_table(
        {
            ("c1", "math", "p"): samples(A=2),
            ("c1", "gsm", "p"): samples(B=2),
            ("c2", "math", "p"): samples(A=1, B=1),
        }
    )
    split = vote_metrics(table, [1])
    assert [(m.checkpoint, m.dataset) for m in split] == [
        ("c1", "gsm"),
        ("c1", "math"),
        ("c2", "math"),
    ]
    pooled = vote_metrics(table, [1], by_dataset=False)
    assert [(m.checkpoint, m.dataset) for m in pooled] == [("c1", "all"), ("c2", "all")]
    assert pooled[0].pass_at_k[1] == pytest.approx(0.5)  # math 1.0, gsm 0.0
    one = vote_metrics(table[table["dataset"] == "math"], [1], by_dataset=True)
    assert [m.dataset for m in one] == ["math", "math"]


def test_k_above_some_problem_is_null_with_a_note() -> None:
    table = graded_table(
        {
            ("c1", "d", "p1"): samples(A=4),
            ("c1", "d", "p2"): samples(A=2),
            ("c2", "d", "p1"): samples(A=4),
        }
    )
    c1, c2 = vote_metrics(table, [1, 4])
    assert c1.pass_at_k[4] is None and c1.maj_at_k[4] is None and c1.sc_gain_at_k[4] is None
    assert "only 2 samples" in c1.notes[0]
    assert c2.pass_at_k[4] == 1.0 and not c2.notes


@pytest.mark.parametrize("ks", [[0], [5], []])
def test_bad_k_is_an_option_error(ks: list[int]) -> None:
    table = graded_table({("c1", "d", "p1"): samples(A=4)})
    with pytest.raises(OptionError) as info:
        vote_metrics(table, ks)
    # the field, which the CLI reports as --k (tests/cli/test_analysis_options.py)
    assert info.value.exit_code == 2 and info.value.message.startswith("ks=")


def test_standard_error_only_when_monte_carlo(monkeypatch: pytest.MonkeyPatch) -> None:
    # 20 samples, k=10: C(20,10) = 184,756 > 100,000 subsets, so without the DP it is MC.
    table = graded_table({("c1", "d", "p1"): samples(A=7, B=8, C=3, none=2)})
    exact = vote_metrics(table, [10])[0]
    assert "maj@10_se" not in exact.to_json()
    monkeypatch.setattr(_majk, "MAX_DP_STEPS", 0)
    estimated = vote_metrics(table, [10], seed=3)[0].to_json()
    assert estimated["maj@10_se"] > 0
    assert abs(estimated["maj@10"] - exact.to_json()["maj@10"]) < 4 * estimated["maj@10_se"]


def test_empty_table_gives_no_rows() -> None:
    table = graded_table({("c1", "d", "p1"): samples(A=1)}).iloc[0:0]
    assert vote_metrics(table, [1]) == []
