"""Benchmark `link` and `report` on 50 checkpoints x 500 problems x 32 samples (800,000 traces),
and on the shared Reasoning Gym run replicated (100 times: 700,000 traces).

The graded table and the labels (half of all traces, wrong ones first, as a DataFrame) are
generated directly, so reading and grading are NOT included: ``link_seconds`` is
``link_analysis`` alone and ``report_seconds`` is what `misstep report` computes after grading:
``link_analysis``, the table of other aggregators (``voting_seconds``, at any size), the
pass@k / maj@k curves, and rendering and writing the HTML (without trace text).

``real`` (with ``--replicas N`` and the shared run present): the Reasoning Gym run (7,000 real
traces, 2 checkpoints, 70 problems, 50 samples) graded once against its golds (not timed),
its table copied N times as N disjoint sets of problems (``problem_id`` suffixed with the copy),
labels drawn as in the synthetic case (every wrong trace, error types at random: the run has
no error labels); the same timings.
Prints one JSON object: traces, labels, link_seconds, voting_seconds, report_seconds,
peak_rss_mb, and ``real`` with the same keys.

    .venv/bin/python benchmarks/bench_link.py [--checkpoints 50 --problems 500 --samples 32]
        [--replicas 100] [--real PATH]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

TYPES = ["arithmetic", "misread", "theorem_misuse", "broken_derivation", "other"]
"""The built-in taxonomy's keys (``labelled_run_of`` checks labels against it)."""


def generate(
    n_ck: int, n_prob: int, n_samp: int, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Graded table with a planted cause at the middle checkpoint, and labels of half the traces."""
    rng = np.random.default_rng(seed)
    ck = np.repeat(np.arange(n_ck), n_prob * n_samp)
    prob = np.tile(np.repeat(np.arange(n_prob), n_samp), n_ck)
    samp = np.tile(np.arange(n_samp), n_ck * n_prob)
    base = rng.uniform(0.2, 0.8, n_prob)[prob] + 0.002 * ck
    u = rng.random(len(ck))
    planted = (rng.random(n_prob) < 0.3)[prob] & (ck >= n_ck // 2)
    correct = (u < base) & ~(planted & (rng.random(len(ck)) < 0.6))
    trunc = ~correct & (rng.random(len(ck)) < 0.05)
    wrong = ~correct & ~trunc
    wrong_ans = np.where(planted & (u >= base), 99, rng.integers(100, 108, len(ck)))
    answer = np.where(correct, "42", wrong_ans.astype(str)).astype(object)
    answer[trunc] = None
    names = np.array([f"global_step_{(i + 1) * 10}" for i in range(n_ck)], dtype=object)
    pid = np.array([f"p{i}" for i in range(n_prob)], dtype=object)
    tid = pd.Series(names[ck]) + "/d/" + pd.Series(pid[prob]) + "/" + pd.Series(samp.astype(str))
    graded = pd.DataFrame(
        {
            "trace_id": tid,
            "checkpoint": names[ck],
            "step": pd.array((ck + 1) * 10, dtype="Int64"),
            "dataset": "d",
            "problem_id": pid[prob],
            "sample_idx": pd.array(samp, dtype="Int64"),
            "answer": answer,
            "answer_class": answer,
            "outcome": np.where(correct, "correct", np.where(trunc, "truncated", "wrong")),
            "correct": correct,
        }
    )
    mix = rng.dirichlet(np.ones(len(TYPES)) * 5, n_prob)[prob]
    etype = (mix.cumsum(axis=1) > rng.random(len(ck))[:, None]).argmax(axis=1)
    etype = np.where(planted & (answer == "99"), TYPES.index("misread"), etype)
    # Half of all traces carry a label, as in the issue: every wrong trace first, then correct
    # ones (as `misstep label --include-correct` would) until half are labelled.
    keep = wrong.copy()
    missing = len(ck) // 2 - int(keep.sum())
    if missing > 0:
        extra = rng.choice(np.flatnonzero(correct), size=missing, replace=False)
        keep[extra] = True
    elif missing < 0:
        drop = rng.choice(np.flatnonzero(keep), size=-missing, replace=False)
        keep[drop] = False
    labels = pd.DataFrame(
        {
            "trace_id": tid[keep].to_numpy(),
            "status": "ok",
            "error_type": np.array(TYPES, dtype=object)[etype[keep]],
            "first_error_step": 0,
            "evidence": None,
        }
    )
    return graded, labels


REAL_RUN = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "reasoning_gym_eval"
    / "llama_rl_ckpts.jsonl.gz"
)


def replicate_real(path: Path, replicas: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The real run's graded table copied ``replicas`` times (disjoint problems), and labels of
    every wrong trace with error types drawn at random."""
    from misstep.rollouts import grade_traces, read_traces

    one = grade_traces(read_traces(path), regrade=True)
    copies = []
    for r in range(replicas):
        copy = one.copy()
        copy["problem_id"] = copy["problem_id"] + f"#{r}"
        copy["trace_id"] = copy["trace_id"] + f"#{r}"
        copies.append(copy)
    graded = pd.concat(copies, ignore_index=True)
    rng = np.random.default_rng(seed)
    wrong = (graded["outcome"] == "wrong").to_numpy()
    labels = pd.DataFrame(
        {
            "trace_id": graded["trace_id"].to_numpy()[wrong],
            "status": "ok",
            "error_type": np.array(TYPES, dtype=object)[rng.integers(0, len(TYPES), wrong.sum())],
            "first_error_step": 0,
            "evidence": None,
        }
    )
    return graded, labels


def _timed_report(graded: pd.DataFrame, labels: pd.DataFrame) -> dict[str, object]:
    from misstep.agreement import labelled_run_of
    from misstep.link import link_analysis
    from misstep.metrics import voting_table
    from misstep.pipelines._analyse import _voting_and_curves
    from misstep.report import write_report

    t0 = time.perf_counter()
    result = link_analysis(labelled_run_of(graded, labels))
    t1 = time.perf_counter()
    # What `misstep report` adds: the other aggregators and the pass@k / maj@k curves.
    voting, curves = _voting_and_curves(graded, result.k)
    with tempfile.TemporaryDirectory() as tmp:
        write_report(Path(tmp) / "report.html", result, labels=labels, voting=voting, curves=curves)
    t2 = time.perf_counter()
    voting_table(graded, result.k, by_dataset=False)  # alone, for its share of the report
    t3 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "traces": len(graded),
        "labels": len(labels),
        "link_seconds": round(t1 - t0, 2),
        "voting_seconds": round(t3 - t2, 2),
        "voting_rows": len(voting),
        "report_seconds": round(t2 - t0, 2),
        "peak_rss_mb": round(rss, 1),
        "top_finding": result.findings[0].sentence if result.findings else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoints", type=int, default=50)
    ap.add_argument("--problems", type=int, default=500)
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--replicas", type=int, default=100, help="copies of the real run; 0: none")
    ap.add_argument("--real", type=Path, default=REAL_RUN)
    ap.add_argument("--skip-synthetic", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

    out: dict[str, object] = {}
    if not args.skip_synthetic:
        out.update(_timed_report(*generate(args.checkpoints, args.problems, args.samples)))
    if args.replicas > 0 and args.real.exists():
        out["real"] = _timed_report(*replicate_real(args.real, args.replicas))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
