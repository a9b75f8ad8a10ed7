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
"""

from __future__ import annotations

import argparse
import json
import os
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--quality-n", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--embeddings", nargs="+", default=list(EMBEDDINGS))
    parser.add_argument("--distinct", action="store_true", help="make every speed text distinct")
    parser.add_argument("--skip-quality", action="store_true")
    args = parser.parse_args()
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
