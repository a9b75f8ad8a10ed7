"""One sample per problem: the link tells accuracy and error types, and says once why."""

from __future__ import annotations

from misstep.agreement import AnalysisConfig, labelled_run_of
from misstep.link import link_analysis
from misstep.metrics import ONE_SAMPLE_REASON, vote_metrics
from tests.link.link_synth import synth_run


def test_one_sample_run_tells_accuracy_and_error_types() -> None:
    # One sample per problem, 200 problems; from the 4th checkpoint 35% of the problems give
    # a wrong answer labelled misread 60% of the time: a large shift into misread.
    graded, labels = synth_run(
        n_checkpoints=5, n_problems=200, n_samples=1, plant_at=3, label_share=1.0, seed=4
    )
    r = link_analysis(labelled_run_of(graded, labels, config=AnalysisConfig(n_boot=200)))
    assert r.story == "one-sample"
    assert r.one_sample == [c.checkpoint for c in r.checkpoints]
    assert r.ks == [1] and r.k == 1
    said = [n for n in r.notes if ONE_SAMPLE_REASON in n]
    assert len(said) == 1
    text = " ".join(r.notes)
    assert "could fail" not in text and "too few data to fit" not in text
    assert all(c.one_sample and c.majority_failures == 0 for c in r.checkpoints)
    # The accuracy change is the paired change of pass@1, the one summary shows.
    rows = {m.checkpoint: m for m in vote_metrics(graded, [1], by_dataset=False, seed=0)}
    for c in r.checkpoints[1:]:
        change = rows[c.checkpoint].change
        assert change is not None and c.accuracy_change == change.pass_at_1
        assert c.metrics_ci["pass@1"] is not None
    top = r.findings[0]
    assert top.kind == "type_shift" and top.error_type == "misread"
    assert top.checkpoint == "global_step_400" and top.significant
    assert "accuracy (pass@1) went from" in top.sentence and "sc_gain" not in top.sentence
    assert not any("sc_gain" in f.sentence for f in r.findings)
    assert {c.kind for c in r.correlations} <= {
        "type_vs_accuracy",
        "cause_vs_accuracy",
    }


def test_mixed_run_votes_over_the_checkpoints_with_samples() -> None:
    # Eight samples per problem, then the first two checkpoints cut to one sample each.
    graded, labels = synth_run(n_checkpoints=4, n_problems=60, n_samples=8, seed=6)
    single = graded["checkpoint"].isin(["global_step_100", "global_step_200"])
    graded = graded[~single | (graded["sample_idx"] == 0)].reset_index(drop=True)
    labels = labels[labels["trace_id"].isin(graded["trace_id"])]
    r = link_analysis(
        labelled_run_of(graded, labels, config=AnalysisConfig(n_boot=50)), ks=[1, 4, 8]
    )
    assert r.story == "mixed"
    assert r.one_sample == ["global_step_100", "global_step_200"]
    # k is capped by the checkpoints with samples (8), not by the one-sample ones (1).
    assert r.k == 8 and r.ks == [1, 4, 8]
    by = {c.checkpoint: c for c in r.checkpoints}
    assert by["global_step_100"].metrics["sc_gain@8"] is None
    assert by["global_step_100"].metrics["pass@1"] is not None
    # The vote checkpoints' numbers are those of vote_metrics on their rows alone.
    alone = graded[~graded["checkpoint"].isin(r.one_sample)]
    for m in vote_metrics(alone, [1, 4, 8], by_dataset=False, seed=0):
        assert by[m.checkpoint].metrics["sc_gain@8"] == m.sc_gain_at_k[8]
        assert by[m.checkpoint].metrics["maj@4"] == m.maj_at_k[4]
    assert sum(ONE_SAMPLE_REASON in n for n in r.notes) == 1
