"""The Python API end to end, on the SYNTHETIC example run (no model, runs anywhere).

Writes the synthetic run into ./api-example/, grades it, prints pass@1 / maj@16 / sc_gain@16 per
checkpoint, labels the wrong traces with the rules judge, and prints the top findings of the
link analysis. Run: python examples/python_api.py
"""

from __future__ import annotations

from pathlib import Path

from misstep.agreement import load_labelled_run
from misstep.judge import JudgeConfig
from misstep.metrics import vote_metrics
from misstep.pipelines import analyse_run, make_synthetic_run, run_labeling
from misstep.rollouts import grade_traces, load_graded, read_traces
from misstep.taxonomy import load_taxonomy


def main() -> None:
    out = Path("api-example")
    traces = make_synthetic_run(out / "traces.jsonl", seed=1)

    graded = grade_traces(read_traces(traces))
    for row in vote_metrics(graded, ks=[1, 16], by_dataset=False):
        print(
            f"{row.checkpoint:>16}  pass@1={row.pass_at_k[1]:.3f}  maj@16={row.maj_at_k[16]:.3f}"
            f"  sc_gain@16={row.sc_gain_at_k[16]:+.3f}"
        )

    summary = run_labeling(
        traces, out / "labels", JudgeConfig(backend="rules"), taxonomy=load_taxonomy()
    )
    print("label statuses:", dict(sorted(summary.status_counts.items())))

    labelled = load_labelled_run(out / "labels", load_graded(traces), full=True)
    analysis = analyse_run(labelled, ks=(1, 16))
    for finding in analysis.result.findings[:3]:
        print("-", finding.sentence)


if __name__ == "__main__":
    main()
