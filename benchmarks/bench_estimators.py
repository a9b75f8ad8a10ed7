"""Coverage and width of the corrected error-type shares, with and without judge drift.

Simulation with known truth (the setting of issue 25): 3 checkpoints of ``--wrong`` wrong
traces, 5 types with known true shares per checkpoint, a judge whose confusion either stays
the same or drifts (``misread`` falls from 0.85 to 0.45 on the diagonal, ``arithmetic`` rises
from 0.70 to 0.90), and ``--human`` human labels per checkpoint drawn at random. Per estimator,
the share of the 95% intervals (runs x checkpoints x types) that cover the true share and
their mean width:

- ``ppi``: ``misstep.agreement`` per-checkpoint PPI++ (the default);
- ``pooled``: the pooled confusion inversion with its bootstrap (``correct_distribution``);
- ``human_only``: the same variance formula with lam = 0 (the human labels alone);
- ``active``: PPI++ with the human labels drawn where the judge is least sure (Zrnic and
  Candes 2024): inclusion probability proportional to sqrt(1 - precision of the judge's type)
  estimated on a 50-label pilot, weighted by 1/probability, the same expected number of labels.

Then ``plan``: per checkpoint, a 50-label pilot, ``labels_needed`` for ``--halfwidth``, that many
labels drawn and the largest half-width over the types measured against H.

    python benchmarks/bench_estimators.py --runs 200 > estimators.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

from misstep.agreement import correct_distribution, labels_needed, ppi_shares

TYPES = ["misread", "arithmetic", "logic", "setup", "other"]
TRUE_P = np.array(
    [[0.30, 0.25, 0.20, 0.15, 0.10], [0.25, 0.30, 0.20, 0.15, 0.10], [0.20, 0.35, 0.20, 0.15, 0.10]]
)


def confusion(diag_misread: float, diag_arith: float) -> np.ndarray:
    """Rows: true type; the judge says the true type with the diagonal probability, else
    one of the others uniformly; the other types' diagonal is 0.75."""
    k = len(TYPES)
    diag = np.array([diag_misread, diag_arith, 0.75, 0.75, 0.75])
    m = np.tile(((1 - diag) / (k - 1))[:, None], (1, k))
    m[np.arange(k), np.arange(k)] = diag
    return m


def judges(drift: bool) -> list[np.ndarray]:
    if drift:
        return [confusion(0.85, 0.70), confusion(0.65, 0.80), confusion(0.45, 0.90)]
    return [confusion(0.75, 0.80)] * 3


def draw(rng: np.random.Generator, p: np.ndarray, m: np.ndarray, n: int) -> tuple[Any, Any]:
    truth = rng.choice(len(p), size=n, p=p)
    u = rng.random(n)[:, None]
    judged = (u > np.cumsum(m[truth], axis=1)).sum(axis=1)
    return truth, np.minimum(judged, len(p) - 1)


def _active_probs(rng: np.random.Generator, y: Any, f: Any, n: int) -> np.ndarray:
    """Inclusion probabilities, expected sum n, prop. to sqrt(1 - precision of f's type) from
    a 50-label pilot (at least 0.05 so every trace can be drawn)."""
    k = len(TYPES)
    pilot = rng.choice(len(y), size=50, replace=False)
    prec = np.array(
        [(y[pilot][f[pilot] == j] == j).mean() if (f[pilot] == j).any() else 0.5 for j in range(k)]
    )
    score = np.sqrt(np.clip(1 - prec, 0.05, 1.0))[f]
    return np.clip(n * score / score.sum(), 1e-3, 1.0)


def one_run(
    rng: np.random.Generator, drift: bool, n_wrong: int, n_human: int, n_boot: int
) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """(intervals (K, 2), truth (K,)) per estimator per checkpoint."""
    eye = np.eye(len(TYPES))
    out: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {
        "ppi": [],
        "human_only": [],
        "active": [],
        "pooled": [],
    }
    pairs: list[tuple[str, str]] = []
    groups = []
    for p, m in zip(TRUE_P, judges(drift), strict=True):
        y, f = draw(rng, p, m, n_wrong)
        idx = rng.choice(n_wrong, size=n_human, replace=False)
        args = (eye[y[idx]], eye[f[idx]], eye[f])
        out["ppi"].append((ppi_shares(*args, labelled_index=idx).intervals(), p))
        out["human_only"].append((ppi_shares(*args, labelled_index=idx, lam=0.0).intervals(), p))
        prob = _active_probs(rng, y, f, n_human)
        got = np.flatnonzero(rng.random(n_wrong) < prob)
        act = ppi_shares(
            eye[y[got]], eye[f[got]], eye[f], labelled_index=got, w_labelled=1 / prob[got]
        )
        out["active"].append((act.intervals(), p))
        pairs += [(TYPES[a], TYPES[b]) for a, b in zip(y[idx], f[idx], strict=True)]
        groups.append((f, p))
    for i, (f, p) in enumerate(groups):
        r = correct_distribution([TYPES[j] for j in f], pairs, TYPES, n_boot=n_boot, seed=i)
        ci = np.array([r.corrected_ci[t] or (0.0, 1.0) for t in TYPES])
        out["pooled"].append((ci, p))
    return out


def plan_check(rng: np.random.Generator, drift: bool, n_wrong: int, halfwidth: float) -> float:
    """Largest per-checkpoint half-width / H of one planned, drawn, labelled sample."""
    eye = np.eye(len(TYPES))
    worst = 0.0
    for p, m in zip(TRUE_P, judges(drift), strict=True):
        y, f = draw(rng, p, m, n_wrong)
        order = rng.permutation(n_wrong)
        pilot = order[:50]
        n, _ = labels_needed(halfwidth, n_wrong, y=eye[y[pilot]], f=eye[f[pilot]])
        idx = order[: max(n, 50)]
        est = ppi_shares(eye[y[idx]], eye[f[idx]], eye[f], labelled_index=idx)
        ci = est.intervals()
        worst = max(worst, float(((ci[:, 1] - ci[:, 0]) / 2).max()))
    return worst / halfwidth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--wrong", type=int, default=3000)
    ap.add_argument("--human", type=int, default=200)
    ap.add_argument("--halfwidth", type=float, default=0.04)
    ap.add_argument("--n-boot", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    start = time.perf_counter()
    result: dict[str, Any] = {
        "runs": a.runs,
        "checkpoints": 3,
        "wrong_per_checkpoint": a.wrong,
        "human_per_checkpoint": a.human,
        "types": TYPES,
    }
    for drift in (False, True):
        cover: dict[str, list[float]] = {}
        width: dict[str, list[float]] = {}
        for _ in range(a.runs):
            for name, rows in one_run(rng, drift, a.wrong, a.human, a.n_boot).items():
                for ci, p in rows:
                    cover.setdefault(name, []).extend(((ci[:, 0] <= p) & (p <= ci[:, 1])).tolist())
                    width.setdefault(name, []).extend((ci[:, 1] - ci[:, 0]).tolist())
        ratios = [plan_check(rng, drift, a.wrong, a.halfwidth) for _ in range(max(a.runs // 4, 5))]
        result["drift" if drift else "no_drift"] = {
            name: {
                "coverage": round(float(np.mean(cover[name])), 4),
                "intervals": len(cover[name]),
                "mean_width": round(float(np.mean(width[name])), 4),
            }
            for name in cover
        } | {
            "plan": {
                "halfwidth": a.halfwidth,
                "max_halfwidth_over_h_mean": round(float(np.mean(ratios)), 3),
                "max_halfwidth_over_h_worst": round(float(np.max(ratios)), 3),
                "share_within_25pct": round(
                    float(np.mean(np.abs(np.array(ratios) - 1) <= 0.25)), 3
                ),
                "draws": len(ratios),
            }
        }
    result["seconds"] = round(time.perf_counter() - start, 1)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
