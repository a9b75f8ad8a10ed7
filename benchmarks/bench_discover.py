"""``misstep discover`` offline: speed on 10^5 texts, and how well each embedding recovers a
planted category. Prints one JSON object.

Usage: python benchmarks/bench_discover.py [--n 100000] [--quality-n 3000] [--seeds 3]

- ``speed``: per embedding, ``discover`` on ``--n`` planted texts (wall seconds per stage and in
  all, distinct texts, peak RSS); ``--distinct`` makes every text distinct (the planted
  texts repeat, and duplicates are embedded once). The target is under 60 s for 10^5 texts
  on 2 cores; ``cores`` says how many this process could use.
- ``quality``: per embedding and split (``dev``: the phrasings the method was chosen on;
  ``held_out``: phrasings never looked at while choosing), over ``--seeds`` planted sets of
  ``--quality-n`` texts: the best membership F1 of one proposed category against the planted
  one (1 = recovered exactly), the k chosen and the stability (ARI across k-means seeds).
- ``topics``: the same F1 on three topics that differ by their words (60/36/4%), for the two
  topics above the 5% prevalence filter.
- ``variants`` (``--variants``, ``dev`` phrasings only, never ``held_out``): the search of
  issue 29's follow-up for a configuration reaching F1 0.8. Each embedding variant is crossed
  with each clustering variant on the distinct texts (duplicates weighted for k-means) and
  scored with the same 5%..75% prevalence filter as ``discover``; embeddings are built here
  from wordllama's token vectors, so the package itself is not changed by trying them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np

from misstep.discover import (
    EMBEDDINGS,
    PLANTED_KEY,
    DiscoverConfig,
    DiscoverText,
    discover,
    planted_set,
)

_TOPICS = {
    "carry": ["carry", "digit", "column", "addition", "tens"],
    "sign": ["negative", "minus", "sign", "flipped", "subtracting"],
    "rare": ["probability", "dice", "coin", "outcomes", "chance"],
}
_FILLER = ["the", "step", "was", "here", "then", "so", "wrong", "it"]


def _items(n: int, seed: int, split: str) -> tuple[list[DiscoverText], set[str]]:
    ps = planted_set(n, seed=seed, split=split)  # type: ignore[arg-type]
    items = [
        DiscoverText(id=i, text=t, checkpoint=c)
        for i, t, c in zip(ps.ids, ps.texts, ps.checkpoints, strict=True)
    ]
    return items, {i for i, t in zip(ps.ids, ps.truth, strict=True) if t == PLANTED_KEY}


def _best_f1(members: list[list[str]], truth: set[str]) -> float:
    best = 0.0
    for m in members:
        tp = len(set(m) & truth)
        if tp:
            best = max(best, 2 * tp / (len(m) + len(truth)))
    return round(best, 3)


def _speed(n: int, embedding: str, distinct: bool) -> dict[str, Any]:
    items, _ = _items(n, 0, "dev")
    if distinct:  # every text distinct: no saving from embedding duplicates once
        items = [
            DiscoverText(id=t.id, text=f"{t.text} (case {t.id})", checkpoint=t.checkpoint)
            for t in items
        ]
    marks: list[tuple[str, float]] = []
    start = time.perf_counter()
    d = discover(
        items,
        DiscoverConfig(embedding=embedding, seed=0),  # type: ignore[arg-type]
        on_stage=lambda name: marks.append((name, time.perf_counter())),
    )
    total = time.perf_counter() - start
    stages, last = {}, start
    for name, t in marks:
        stages[name] = round(t - last, 2)
        last = t
    return {
        "texts": n,
        "distinct_texts": d.distinct_texts,
        "seconds": round(total, 2),
        "stages_s": stages,
        "k": d.k,
        "categories": len(d.categories),
    }


def _quality(n: int, seeds: int, embedding: str, split: str) -> dict[str, Any]:
    runs = []
    for seed in range(seeds):
        items, truth = _items(n, 100 + seed, split)
        d = discover(items, DiscoverConfig(embedding=embedding, seed=seed))  # type: ignore[arg-type]
        runs.append(
            {
                "f1": _best_f1([c.members for c in d.categories], truth),
                "k": d.k,
                "ari": None if d.stability_ari is None else round(d.stability_ari, 3),
            }
        )
    f1 = [r["f1"] for r in runs]
    return {"f1_mean": round(float(np.mean(f1)), 3), "f1_min": min(f1), "runs": runs}


def _topics(embedding: str) -> dict[str, float]:
    rng = np.random.default_rng(1)
    items, truth = [], []
    for i in range(600):
        u = rng.random()
        topic = "carry" if u < 0.60 else "sign" if u < 0.96 else "rare"
        words = list(rng.choice(_TOPICS[topic], size=4)) + list(rng.choice(_FILLER, size=3))
        rng.shuffle(words)
        items.append(DiscoverText(id=f"x{i}", text=" ".join(words)))
        truth.append(topic)
    d = discover(items, DiscoverConfig(embedding=embedding, seed=0, k_max=6))  # type: ignore[arg-type]
    members = [c.members for c in d.categories]
    return {
        t: _best_f1(members, {it.id for it, tr in zip(items, truth, strict=True) if tr == t})
        for t in ("carry", "sign")
    }


def _wordllama_vectors() -> tuple[Any, np.ndarray]:
    import wordllama
    from wordllama import WordLlama

    model = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    return model, np.asarray(model.embedding, dtype=np.float64)


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.asarray(x / norms)


def _pooled(texts: list[str], weighting: str, dims: int, pcs: int) -> np.ndarray:
    # The package's SIF with its knobs exposed: token weighting, truncated dims (wordllama's
    # vectors are Matryoshka-trained), principal directions removed.
    import scipy.sparse as sp

    model, vectors = _wordllama_vectors()
    vectors = vectors[:, :dims]
    enc = model.tokenizer.encode_batch(texts, add_special_tokens=False)
    cols = np.array([i for e in enc for i, m in zip(e.ids, e.attention_mask, strict=True) if m])
    rows = np.repeat(np.arange(len(texts)), [sum(e.attention_mask) for e in enc])
    counts = sp.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(texts), len(vectors)))
    counts.sum_duplicates()
    freq = np.asarray(counts.sum(axis=0)).ravel()
    df = np.asarray((counts > 0).sum(axis=0)).ravel()
    weights = {
        "sif": 1e-3 / (1e-3 + freq / freq.sum()),
        "idf": np.log((1 + len(texts)) / (1 + df)) + 1,
        "mean": np.ones(len(vectors)),
    }[weighting]
    weighted = counts @ sp.diags(weights)
    totals = np.maximum(np.asarray(weighted.sum(axis=1)).ravel(), 1e-12)
    x = np.asarray(sp.diags(1 / totals) @ weighted @ vectors)
    x -= x.mean(axis=0)
    if pcs:
        _, _, vt = np.linalg.svd(x[:2000], full_matrices=False)
        x -= (x @ vt[:pcs].T) @ vt[:pcs]
    return _unit(x)


def _soft_tfidf(texts: list[str]) -> np.ndarray:
    # TF-IDF over words, each word also counting for its 10 nearest words of the texts'
    # vocabulary in wordllama space ("semantic smoothing"), then LSA: "minutes" and
    # "seconds" then share a column although the texts share no word.
    import scipy.sparse as sp
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(sublinear_tf=True, stop_words="english", token_pattern=r"\b[a-z]{2,}\b")
    x = vec.fit_transform(texts)
    words = list(vec.get_feature_names_out())
    model, vectors = _wordllama_vectors()
    enc = model.tokenizer.encode_batch([" " + w for w in words], add_special_tokens=False)
    wv = _unit(
        np.stack(
            [
                vectors[np.asarray(e.ids)[np.asarray(e.attention_mask) == 1]].mean(axis=0)
                for e in enc
            ]
        )
    )
    sim = wv @ wv.T
    np.fill_diagonal(sim, -1.0)
    k = min(10, len(words) - 1)
    near = np.argpartition(-sim, k, axis=1)[:, :k]
    rows, cols = np.repeat(np.arange(len(words)), k), near.ravel()
    graph = sp.csr_matrix((sim[rows, cols].clip(0), (rows, cols)), shape=sim.shape)
    smoothed = x @ (sp.identity(len(words)) + graph.maximum(graph.T))
    z = _unit(TruncatedSVD(min(100, len(words) - 1), random_state=0).fit_transform(smoothed))
    return _unit(z - z.mean(axis=0))


def _no_digits(texts: list[str]) -> list[str]:
    # Numbers are the problem's values, not the kind of error: they tie "Converted 45 minutes"
    # to "Computed 45 times 12" by a shared token.
    return [re.sub(r"\d+", " ", t) for t in texts]


_EMBED_VARIANTS = {
    "sif (package default)": lambda t: _pooled(t, "sif", 256, 1),
    "sif, no PC removed": lambda t: _pooled(t, "sif", 256, 0),
    "sif, 3 PCs removed": lambda t: _pooled(t, "sif", 256, 3),
    "sif, 128 dims": lambda t: _pooled(t, "sif", 128, 1),
    "sif, 64 dims": lambda t: _pooled(t, "sif", 64, 1),
    "idf-weighted mean": lambda t: _pooled(t, "idf", 256, 1),
    "idf-weighted mean, 128 dims": lambda t: _pooled(t, "idf", 128, 1),
    "idf-weighted mean, 128 dims, digits removed": lambda t: _pooled(_no_digits(t), "idf", 128, 1),
    "sif, digits removed": lambda t: _pooled(_no_digits(t), "sif", 256, 1),
    "plain mean, 128 dims, digits removed": lambda t: _pooled(_no_digits(t), "mean", 128, 1),
    "plain mean": lambda t: _pooled(t, "mean", 256, 1),
    "tfidf + wordllama word-neighbour smoothing": _soft_tfidf,
}


def _kmeans_silhouette(x: np.ndarray, w: np.ndarray, seed: int) -> np.ndarray:
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    scores = {
        k: silhouette_score(x, KMeans(k, n_init=1, random_state=seed).fit_predict(x, None, w))
        for k in range(2, 16)
    }
    best = max(scores, key=lambda k: scores[k])
    return np.asarray(KMeans(best, n_init=3, random_state=seed).fit_predict(x, None, w))


def _agglomerative(x: np.ndarray, threshold: float, linkage: str) -> np.ndarray:
    from sklearn.cluster import AgglomerativeClustering

    model = AgglomerativeClustering(
        n_clusters=None, distance_threshold=threshold, metric="cosine", linkage=linkage
    )
    return np.asarray(model.fit_predict(x))


def _overcluster_merge(x: np.ndarray, w: np.ndarray, seed: int, threshold: float) -> np.ndarray:
    # 40 k-means clusters, then centroids closer than ``threshold`` (cosine distance, average
    # linkage) merged: the scalable form of agglomerative clustering.
    from sklearn.cluster import KMeans

    km = KMeans(min(40, len(x) - 1), n_init=3, random_state=seed).fit(x, None, w)
    merged = _agglomerative(_unit(km.cluster_centers_), threshold, "average")
    return np.asarray(merged[km.labels_])


def _clusterings() -> dict[str, Any]:
    from sklearn.cluster import HDBSCAN, KMeans

    out: dict[str, Any] = {"k-means, silhouette k (package)": _kmeans_silhouette}
    for k in (6, 8, 10):
        out[f"k-means, k={k}"] = lambda x, w, s, k=k: KMeans(
            k, n_init=3, random_state=s
        ).fit_predict(x, None, w)
    for t in (0.8, 0.9, 0.95):
        out[f"agglomerative average, cosine < {t}"] = lambda x, w, s, t=t: _agglomerative(
            x, t, "average"
        )
    out["agglomerative complete, cosine < 1.0"] = lambda x, w, s: _agglomerative(x, 1.0, "complete")
    for t in (0.8, 0.9):
        out[f"40 k-means clusters merged, cosine < {t}"] = lambda x, w, s, t=t: _overcluster_merge(
            x, w, s, t
        )
    for m in (10, 25, 50):
        out[f"HDBSCAN, min cluster {m}"] = lambda x, w, s, m=m: HDBSCAN(
            min_cluster_size=m, copy=True
        ).fit_predict(x)
    return out


def _variants(n: int, seeds: int, split: str, only: str | None) -> list[dict[str, Any]]:
    # ``split`` stays ``dev`` for the search; ``held_out`` is run once, for the one
    # configuration the dev figures chose (``only``: "embedding::clustering").
    sets = []
    for seed in range(seeds):
        ps = planted_set(n, seed=100 + seed, split=split)  # type: ignore[arg-type]
        norm = [" ".join(t.lower().split()) for t in ps.texts]
        distinct = sorted(set(norm))
        index = {t: i for i, t in enumerate(distinct)}
        row_of = np.array([index[t] for t in norm])
        weights = np.bincount(row_of, minlength=len(distinct)).astype(np.float64)
        truth = np.array([t == PLANTED_KEY for t in ps.truth])
        sets.append((distinct, row_of, weights, truth))
    rows = []
    wanted = None if only is None else tuple(only.split("::"))
    for e_name, embed in _EMBED_VARIANTS.items():
        if wanted is not None and wanted[0] != e_name:
            continue
        xs = [embed(d[0]) for d in sets]
        for c_name, cluster in _clusterings().items():
            if wanted is not None and wanted[1] != c_name:
                continue
            f1 = []
            for seed, ((_, row_of, weights, truth), x) in enumerate(zip(sets, xs, strict=True)):
                labels = np.asarray(cluster(x, weights, seed))[row_of]
                sizes = {c: int((labels == c).sum()) for c in np.unique(labels) if c >= 0}
                kept = [c for c, m in sizes.items() if 0.05 <= m / len(labels) < 0.75]
                ids = [[str(i) for i in np.flatnonzero(labels == c)] for c in kept]
                f1.append(_best_f1(ids, {str(i) for i in np.flatnonzero(truth)}))
            rows.append({"embedding": e_name, "clustering": c_name, "split": split, "f1": f1})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--quality-n", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--embeddings", nargs="+", default=list(EMBEDDINGS))
    parser.add_argument("--distinct", action="store_true", help="make every speed text distinct")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--variants", action="store_true", help="only the variant search")
    parser.add_argument("--split", choices=["dev", "held_out"], default="dev")
    parser.add_argument("--only", help='one variant, "embedding::clustering"')
    args = parser.parse_args()
    if args.variants:
        rows = _variants(args.quality_n, args.seeds, args.split, args.only)
        print(json.dumps({"variants": rows}, indent=2))
        return
    result: dict[str, Any] = {
        "cores": len(os.sched_getaffinity(0)),
        "speed": {},
        "quality": {},
        "topics": {},
    }
    for embedding in args.embeddings:
        result["speed"][embedding] = _speed(args.n, embedding, args.distinct)
        if args.skip_quality:
            continue
        result["quality"][embedding] = {
            split: _quality(args.quality_n, args.seeds, embedding, split)
            for split in ("dev", "held_out")
        }
        result["topics"][embedding] = _topics(embedding)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
