from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from misstep.judge._arith import find_arithmetic_error
from misstep.metrics import vote_metrics
from misstep.pipelines import SYNTHETIC_PLANTED_STEP, make_synthetic_run
from misstep.rollouts import Trace, grade_traces, read_traces


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_synthetic_run(tmp_path_factory.mktemp("synthetic") / "run.jsonl")


def test_shape_and_determinism(run: Path, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in run.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 5 * 2 * 40 * 16  # checkpoints x datasets x problems x samples = 6,400
    traces = [Trace.model_validate(r) for r in rows]  # misstep's input shape, nothing extra
    assert {t.checkpoint for t in traces} == {f"global_step_{100 * i}" for i in range(1, 6)}
    assert {t.dataset for t in traces} == {"arith", "fractions"}
    assert all(t.gold_answer for t in traces)
    truncated = sum(t.finish_reason == "length" for t in traces) / len(traces)
    assert 0.01 < truncated < 0.1
    assert make_synthetic_run(tmp_path / "again.jsonl").read_bytes() == run.read_bytes()
    assert make_synthetic_run(tmp_path / "other.jsonl", seed=1).read_bytes() != run.read_bytes()


def test_varied_equivalent_forms(run: Path) -> None:
    text = run.read_text(encoding="utf-8")
    for form in (r"\\frac{", r"\\dfrac{", "<think>"):
        assert form in text
    assert any(f"\\\\boxed{{{d}/" in text for d in range(1, 10))  # a plain p/q form


def test_planted_cause_shows_in_the_metrics(run: Path) -> None:
    graded = grade_traces(read_traces(run))
    rows = vote_metrics(graded, [1, 16], by_dataset=False)
    pass1 = [r.pass_at_k[1] for r in rows]
    gain = {r.step: r.sc_gain_at_k[16] for r in rows}
    assert all(b is not None and a is not None and b > a for a, b in itertools.pairwise(pass1))
    for step, value in gain.items():
        assert value is not None
        if step is not None and step < SYNTHETIC_PLANTED_STEP:
            assert value > 0.2  # voting helps a lot before the planted step
        else:
            assert value < 0  # and hurts from it on


def test_planted_wrong_answers_carry_a_checkable_slip(run: Path) -> None:
    traces = [t for t in read_traces(run) if t.finish_reason != "length"]
    graded = grade_traces(traces).set_index("trace_id")
    late = [t for t in traces if t.step is not None and t.step >= SYNTHETIC_PLANTED_STEP]
    early = [t for t in traces if t.step is not None and t.step < SYNTHETIC_PLANTED_STEP]

    def slip_share(group: list[Trace]) -> float:
        wrong = [t for t in group if graded.loc[t.trace_id, "outcome"] == "wrong"]
        flagged = sum(find_arithmetic_error(t.steps or []) is not None for t in wrong)
        return flagged / len(wrong)

    # Right answers never hold a wrong calculation.
    right = [t for t in late if graded.loc[t.trace_id, "outcome"] == "correct"]
    assert all(find_arithmetic_error(t.steps or []) is None for t in right[:300])
    # Early wrong traces are mostly misreads (25% scattered slips); late ones mostly slips.
    assert slip_share(early) < 0.4 < 0.7 < slip_share(late)


def test_no_planted_cause(tmp_path: Path) -> None:
    path = make_synthetic_run(tmp_path / "clean.jsonl", planted_step=None)
    rows = vote_metrics(grade_traces(read_traces(path)), [16], by_dataset=False)
    assert all((r.sc_gain_at_k[16] or 0) > 0 for r in rows)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        make_synthetic_run("unused.jsonl", n_checkpoints=0)
    with pytest.raises(ValueError):
        make_synthetic_run("unused.jsonl", planted_share=1.5)
