"""A small link result whose traces, answers and evidence carry HTML injection attempts."""

from __future__ import annotations

import pandas as pd

from misstep.agreement import AnalysisConfig, labelled_run_of
from misstep.link import LinkResult, link_analysis
from misstep.rollouts import Trace
from tests.link.link_synth import synth_run

INJECTIONS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "</script><script>document.title='pwned'</script>",
    "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">",
]


def injected_run() -> tuple[LinkResult, dict[str, Trace], pd.DataFrame]:
    graded, labels = synth_run(plant_at=3, n_checkpoints=5, n_problems=50, n_samples=8, seed=7)
    bad = " ".join(INJECTIONS)
    # The winning wrong answer itself is hostile text too.
    graded.loc[graded["answer"] == "W*", "answer"] = bad
    labels["evidence"] = INJECTIONS[1]
    labels["first_error_step"] = 1
    traces = {
        tid: Trace(
            problem_id="p",
            response=f"First I read it.\n\nThen {INJECTIONS[1]} and {INJECTIONS[0]}.\n\n{bad}",
        )
        for tid in labels["trace_id"]
    }
    return (
        link_analysis(labelled_run_of(graded, labels, config=AnalysisConfig(n_boot=100))),
        traces,
        labels,
    )
