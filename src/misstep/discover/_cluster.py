"""Clustering of unit-length embeddings: k-means, its k chosen by the silhouette on a sample,
and its stability across seeds (adjusted Rand index between runs, and per cluster the best
Jaccard overlap it finds in each other run)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import numpy.typing as npt

from misstep.defaults import DiscoverDefaults as D

__all__ = ["Clustering", "cluster_embeddings"]

_SILHOUETTE_SAMPLE = 2_000  # silhouette is quadratic in the rows: a sample decides k
_FIT_SAMPLE = 10_000  # k-means centres are fitted on at most this many rows, then all assigned

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Clustering:
    """Cluster ids per row (of the first seed's run), the k chosen, and stability figures."""

    labels: IntArray
    k: int
    silhouette: float
    ari: float | None
    """Mean adjusted Rand index between the runs of different seeds; None with one seed."""
    cluster_stability: dict[int, float]
    """Per cluster of ``labels``: mean over the other seeds' runs of its best Jaccard overlap
    with one of their clusters (1.0 with one seed)."""
    centers: FloatArray


def _kmeans(
    x: FloatArray, weights: npt.NDArray[np.float64], k: int, seed: int, n_init: int
) -> tuple[IntArray, FloatArray]:
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(seed)
    fit_rows = (
        rng.choice(len(x), size=_FIT_SAMPLE, replace=False, p=weights / weights.sum())
        if len(x) > _FIT_SAMPLE
        else np.arange(len(x))
    )
    sample_weight = None if len(x) > _FIT_SAMPLE else weights
    model = KMeans(k, n_init=n_init, random_state=seed).fit(
        x[fit_rows], sample_weight=sample_weight
    )
    return np.asarray(model.predict(x), dtype=np.int64), np.asarray(
        model.cluster_centers_, dtype=np.float64
    )


def _choose_k(
    x: FloatArray, weights: npt.NDArray[np.float64], ks: range, seed: int
) -> tuple[int, float]:
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(seed)
    n = min(len(x), _SILHOUETTE_SAMPLE)
    rows = rng.choice(len(x), size=n, replace=False, p=weights / weights.sum())
    sample = x[rows]
    best = (ks[0], -1.0)
    for k in ks:
        if k >= len(np.unique(sample, axis=0)):
            break
        labels = KMeans(k, n_init=1, random_state=seed).fit_predict(sample)
        score = float(silhouette_score(sample, labels, metric="euclidean"))
        if score > best[1]:
            best = (k, score)
    return best


def _jaccard_best(labels: IntArray, other: IntArray) -> dict[int, float]:
    out: dict[int, float] = {}
    for c in np.unique(labels):
        mine = labels == c
        best = 0.0
        for d in np.unique(other[mine]):
            theirs = other == d
            best = max(best, float((mine & theirs).sum() / (mine | theirs).sum()))
        out[int(c)] = best
    return out


def cluster_embeddings(
    x: FloatArray,
    *,
    weights: npt.NDArray[np.float64] | None = None,
    k_range: tuple[int, int] = (D.k_min, D.k_max),
    seed: int = D.seed,
    seeds: int = D.seeds,
    on_stage: Callable[[str], None] | None = None,
) -> Clustering:
    """Cluster the rows of ``x`` (``weights``: how many texts each row stands for);
    ``on_stage`` hears ``choosing k`` and ``clustering`` when each is done."""
    from sklearn.metrics import adjusted_rand_score

    w = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=np.float64)
    k, silhouette = _choose_k(x, w, range(k_range[0], k_range[1] + 1), seed)
    if on_stage is not None:
        on_stage("choosing k")
    # Every seed's run is the same procedure as the reported one (best of 3 starts), so the
    # ARI measures how much the reported result depends on its seed.
    runs = [_kmeans(x, w, k, seed + i, 3) for i in range(max(seeds, 1))]
    labels, centers = runs[0]
    ari = None
    stability = {int(c): 1.0 for c in np.unique(labels)}
    if len(runs) > 1:
        # Rows stand for weights[i] texts each: repeat them so the ARI counts texts.
        reps = np.repeat(np.arange(len(x)), w.astype(np.int64))
        ari = float(
            np.mean([adjusted_rand_score(a[0][reps], b[0][reps]) for a, b in combinations(runs, 2)])
        )
        per_run = [_jaccard_best(labels[reps], other[0][reps]) for other in runs[1:]]
        stability = {c: float(np.mean([p[c] for p in per_run])) for c in stability}
    if on_stage is not None:
        on_stage("clustering")
    return Clustering(
        labels=labels,
        k=k,
        silhouette=silhouette,
        ari=ari,
        cluster_stability=stability,
        centers=centers,
    )
