"""The offline discovery: embed, cluster, filter by prevalence, describe each category."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from misstep.defaults import DiscoverDefaults as D
from misstep.discover._cluster import cluster_embeddings
from misstep.discover._embed import Embedding, embed_texts
from misstep.discover._inputs import DiscoverText
from misstep.discover._judge import JudgeDiscoverSettings, judge_assign
from misstep.discover._keywords import ctfidf_keywords
from misstep.discover._result import (
    CheckpointShare,
    DiscoveredCategory,
    Discovery,
    DroppedCluster,
    Example,
)
from misstep.errors import AnalysisError

__all__ = [
    "DISCOVER_STAGES",
    "JUDGE_STAGES",
    "DiscoverConfig",
    "discover",
    "discover_with_judge",
    "wilson",
]

DISCOVER_STAGES = ("embedding", "choosing k", "clustering", "describing")
"""The stages ``discover`` reports through ``on_stage``, in order."""

JUDGE_STAGES = ("proposing and assigning", "describing")
"""The stages ``discover_with_judge`` reports (the first once per round)."""

MIN_TEXTS = 20
SOURCE = "texts"
"""What ``Discovery.source`` says of texts given without a description of where they came
from."""


class DiscoverConfig(BaseModel):
    """Settings of the offline discovery."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    embedding: Embedding = "wordllama"
    """``wordllama`` (static embeddings, ``misstep[discover]``) or ``tfidf`` (LSA)."""
    k_min: int = Field(default=D.k_min, ge=2)
    """Fewest clusters tried."""
    k_max: int = Field(default=D.k_max, ge=2)
    """Most clusters tried (the silhouette picks k in between)."""
    seed: int = D.seed
    """Seed of the first k-means run and of the samples."""
    seeds: int = Field(default=D.seeds, ge=1)
    """k-means runs with seeds ``seed``, ``seed + 1``, ...: their agreement is the stability."""
    min_share: float = Field(default=D.min_share, ge=0.0, le=1.0)
    """Clusters holding less than this share of the texts are dropped (too rare)."""
    max_share: float = Field(default=D.max_share, gt=0.0, le=1.0)
    """Clusters holding at least this share are dropped (too generic)."""


def wilson(count: int, total: int) -> tuple[float, float]:
    """Wilson 95% interval of ``count / total`` ((0, 1) for ``total`` 0)."""
    if total == 0:
        return (0.0, 1.0)
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(count, total, alpha=0.05, method="wilson")
    return (float(low), float(high))


def _natural(value: str) -> list[tuple[int, int | str]]:
    return [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", value) if p]


def _slug(words: list[str], taken: set[str], parts: int = 2) -> str:
    # Keys must match the taxonomy's KEY_PATTERN: the first two keywords that have ASCII
    # letters (a cluster of texts in another script gets a numbered ``found_<n>``).
    kept = [p for p in (re.sub(r"[^a-z0-9]", "", w.lower()) for w in words) if p][:parts]
    base = ("found_" + "_".join(kept))[:56] if kept else "found"
    key, n = base, 2
    while key in taken:
        key, n = f"{base}_{n}", n + 1
    taken.add(key)
    return key


def _per_checkpoint(items: list[DiscoverText], member: np.ndarray) -> list[CheckpointShare]:
    totals = Counter(t.checkpoint for t in items if t.checkpoint is not None)
    counts = Counter(t.checkpoint for t, m in zip(items, member, strict=True) if m and t.checkpoint)
    out = []
    for ck in sorted(totals, key=_natural):
        c, n = counts.get(ck, 0), totals[ck]
        out.append(CheckpointShare(checkpoint=ck, count=c, total=n, share=c / n, ci=wilson(c, n)))
    return out


def _describe(
    items: list[DiscoverText],
    labels: np.ndarray,
    distances: np.ndarray,
    stability: dict[int, float] | None,
    config: DiscoverConfig,
    taken: set[str],
    named: list[tuple[str, str]] | None = None,
) -> tuple[list[DiscoveredCategory], list[DroppedCluster]]:
    texts = [t.text for t in items]
    keywords = ctfidf_keywords(texts, labels)
    n = len(items)
    kept: list[DiscoveredCategory] = []
    dropped: list[DroppedCluster] = []
    sizes = Counter(int(c) for c in labels)
    for c, size in sizes.most_common():
        if c < 0:  # texts the judge put in no type
            continue
        share = size / n
        words = keywords.get(c, [])
        if share < config.min_share or share >= config.max_share:
            reason = "too rare" if share < config.min_share else "too generic"
            dropped.append(DroppedCluster(keywords=words, size=size, share=share, reason=reason))
            continue
        member = labels == c
        rows = np.flatnonzero(member)
        nearest = rows[np.argsort(distances[rows], kind="stable")]
        examples, seen = [], set()
        for i in nearest:
            if items[i].text in seen:
                continue
            seen.add(items[i].text)
            examples.append(Example(id=items[i].id, text=items[i].text, quote=items[i].quote))
            if len(examples) == 3:
                break
        shown = ", ".join(words[:3]) or "no distinguishing word"
        name = f"Found: {shown}"
        criterion = (
            f"The explanation is about {shown}, as in the examples (an offline cluster: check "
            "the members and rewrite this before relabelling)."
        )
        key_words = words
        if named is not None:
            name, criterion = named[c]
            key_words = name.split()
        kept.append(
            DiscoveredCategory(
                key=_slug(key_words, taken, parts=2 if named is None else 4),
                name=name,
                criterion=criterion,
                keywords=words,
                size=size,
                share=share,
                ci=wilson(size, n),
                stability=None if stability is None else stability.get(c, 1.0),
                per_checkpoint=_per_checkpoint(items, member),
                examples=examples,
                members=[items[i].id for i in rows],
            )
        )
    return kept, dropped


def discover(
    items: list[DiscoverText],
    config: DiscoverConfig | None = None,
    *,
    source: str = SOURCE,
    taken_keys: list[str] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> Discovery:
    """Propose categories for ``items`` offline. ``taken_keys`` (the run's taxonomy keys) are
    never proposed again. Raises ``AnalysisError`` for fewer than 20 texts."""
    cfg = config or DiscoverConfig()
    _check_enough(items)
    stage = on_stage or (lambda _name: None)
    # Duplicates are embedded and clustered once, weighted by how often they occur.
    norm = [" ".join(t.text.lower().split()) for t in items]
    distinct = sorted(set(norm))
    index = {t: i for i, t in enumerate(distinct)}
    row_of = np.fromiter((index[t] for t in norm), dtype=np.int64, count=len(norm))
    weights = np.bincount(row_of, minlength=len(distinct)).astype(np.float64)
    if len(distinct) <= cfg.k_min:
        raise AnalysisError(
            f"the {len(items)} texts hold only {len(distinct)} distinct text(s): too few to "
            f"cluster into {cfg.k_min} or more groups",
            hint="a rules-judge run writes the same explanation for every `other` label: "
            "relabel with a model judge (--judge openai), pass --types all, or use --texts",
        )
    x = embed_texts(distinct, cfg.embedding, seed=cfg.seed)
    stage("embedding")
    k_max = max(cfg.k_min, min(cfg.k_max, len(distinct) - 1))
    clustering = cluster_embeddings(
        x,
        weights=weights,
        k_range=(cfg.k_min, k_max),
        seed=cfg.seed,
        seeds=cfg.seeds,
        on_stage=stage,
    )
    labels = clustering.labels[row_of]
    distances = np.linalg.norm(x - clustering.centers[clustering.labels], axis=1)[row_of]
    categories, dropped = _describe(
        items, labels, distances, clustering.cluster_stability, cfg, set(taken_keys or [])
    )
    stage("describing")
    return Discovery(
        source=source,
        embedding=cfg.embedding,
        texts=len(items),
        distinct_texts=len(distinct),
        k=clustering.k,
        silhouette=clustering.silhouette,
        seeds=cfg.seeds,
        stability_ari=clustering.ari,
        min_share=cfg.min_share,
        max_share=cfg.max_share,
        categories=categories,
        dropped=dropped,
        unassigned=sum(d.size for d in dropped),
    )


def _check_enough(items: list[DiscoverText]) -> None:
    if len(items) < MIN_TEXTS:
        raise AnalysisError(
            f"discover needs at least {MIN_TEXTS} texts to cluster, got {len(items)}",
            hint="label more traces, pass --types all, or give a larger --texts file",
        )


def discover_with_judge(
    items: list[DiscoverText],
    settings: JudgeDiscoverSettings,
    config: DiscoverConfig | None = None,
    *,
    source: str = SOURCE,
    taken_keys: list[str] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> Discovery:
    """Propose categories with a judge server: its names and criteria, its assignments; the
    prevalence filter, keywords, intervals and examples as offline. Raises
    ``AnalysisError`` for fewer than 20 texts, ``JudgeUnavailableError`` for no server."""
    cfg = config or DiscoverConfig()
    _check_enough(items)
    stage = on_stage or (lambda _name: None)
    labels, types, rounds = judge_assign(items, settings, on_round=stage)
    categories, dropped = _describe(
        items,
        labels,
        np.zeros(len(items)),
        None,
        cfg,
        set(taken_keys or []),
        named=types,
    )
    stage("describing")
    return Discovery(
        source=source,
        embedding="judge",
        texts=len(items),
        distinct_texts=len({t.text for t in items}),
        k=len(types),
        silhouette=None,
        seeds=1,
        stability_ari=None,
        min_share=cfg.min_share,
        max_share=cfg.max_share,
        categories=categories,
        dropped=dropped,
        unassigned=int((labels < 0).sum()) + sum(d.size for d in dropped),
        judge_rounds=[
            {
                "proposed": [name for name, _ in r.proposed],
                "assigned": r.assigned,
                "used_embeddings": r.used_embeddings,
            }
            for r in rounds
        ],
    )
