"""Benchmark `link` and `report` on 50 checkpoints x 500 problems x 32 samples (800,000 traces).

The graded table and the labels (half of all traces, wrong ones first, as a DataFrame) are
generated directly, so reading and grading are NOT included: ``link_seconds`` is
``link_analysis`` alone and ``report_seconds`` is ``link_analysis`` plus rendering and writing
the HTML (without trace text).
Prints one JSON object: traces, labels, link_seconds, report_seconds, peak_rss_mb.

    .venv/bin/python benchmarks/bench_link.py [--checkpoints 50 --problems 500 --samples 32]
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

TYPES = ["arithmetic", "logic", "misread", "setup", "unjustified", "other"]


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoints", type=int, default=50)
    ap.add_argument("--problems", type=int, default=500)
    ap.add_argument("--samples", type=int, default=32)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from misstep.link import link_analysis
    from misstep.pipelines._analyse import _voting_and_curves
    from misstep.report import write_report

    graded, labels = generate(args.checkpoints, args.problems, args.samples)
    t0 = time.perf_counter()
    result = link_analysis(graded, labels)
    t1 = time.perf_counter()
    # What `misstep report` adds: the other aggregators and the pass@k / maj@k curves.
    voting, curves = _voting_and_curves(graded, result.k)
    with tempfile.TemporaryDirectory() as tmp:
        write_report(Path(tmp) / "report.html", result, labels=labels, voting=voting, curves=curves)
    t2 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "traces": len(graded),
                "labels": len(labels),
                "link_seconds": round(t1 - t0, 2),
                "report_seconds": round(t2 - t0, 2),
                "peak_rss_mb": round(rss, 1),
                "top_finding": result.findings[0].sentence if result.findings else None,
            }
        )
    )


if __name__ == "__main__":
    main()
