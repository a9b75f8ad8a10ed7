"""The offline discovery: intervals, keywords, clustering on separable topics, the
prevalence filter, stability, per-checkpoint prevalence and the candidate taxonomy."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from misstep.discover import (
    PLANTED_KEY,
    DiscoverConfig,
    DiscoverText,
    candidate_taxonomy,
    ctfidf_keywords,
    discover,
    planted_set,
    wilson,
    write_taxonomy,
)
from misstep.discover._planted import _PHRASES
from misstep.errors import AnalysisError
from misstep.taxonomy import load_taxonomy

# Three topics with disjoint vocabularies (plus random fillers), 60% / 36% / 4% of the texts.
_TOPICS = {
    "carry": ["carry", "digit", "column", "addition", "tens"],
    "sign": ["negative", "minus", "sign", "flipped", "subtracting"],
    "rare": ["probability", "dice", "coin", "outcomes", "chance"],
}
_FILLER = ["the", "step", "was", "here", "then", "so", "wrong", "it"]


def _topic_texts(n: int, seed: int) -> tuple[list[DiscoverText], list[str]]:
    rng = np.random.default_rng(seed)
    items, truth = [], []
    for i in range(n):
        u = rng.random()
        topic = "carry" if u < 0.60 else "sign" if u < 0.96 else "rare"
        words = list(rng.choice(_TOPICS[topic], size=4)) + list(rng.choice(_FILLER, size=3))
        rng.shuffle(words)
        ck = f"step{1 + i % 4}"
        items.append(DiscoverText(id=f"x{i}", text=" ".join(words), checkpoint=ck))
        truth.append(topic)
    return items, truth


def _f1(members: list[str], truth_ids: set[str]) -> float:
    tp = len(set(members) & truth_ids)
    return 2 * tp / (len(members) + len(truth_ids)) if tp else 0.0


def test_wilson_by_hand() -> None:
    # 10/100: centre (10 + 1.96²/2) / (100 + 1.96²) = 11.92 / 103.84 = 0.11480; half-width
    # 1.96 * sqrt(0.1 * 0.9 / 100 + 1.96² / (4 * 100²)) / (1 + 1.96² / 100)
    # = 1.96 * sqrt(0.0009 + 0.00009604) / 1.03842 = 0.05957: (0.0552, 0.1744).
    low, high = wilson(10, 100)
    assert abs(low - 0.0552) < 5e-4 and abs(high - 0.1744) < 5e-4
    assert wilson(0, 0) == (0.0, 1.0)


def test_ctfidf_keywords_by_hand() -> None:
    # Cluster 0 says "carry" twice, cluster 1 says "sign" twice; "wrong" is in both, so it
    # ranks below each cluster's own word.
    texts = ["carry wrong", "carry", "sign wrong", "sign"]
    kw = ctfidf_keywords(texts, np.array([0, 0, 1, 1]))
    assert kw[0][0] == "carry" and kw[1][0] == "sign"
    assert kw[0].index("wrong") > 0 and "sign" not in kw[0]


def test_separable_topics_are_found_by_tfidf() -> None:
    # Topics that differ by their words: TF-IDF/LSA finds each (wordllama does not here: its
    # static vectors split the 60% topic; measured in benchmarks/bench_discover.py).
    items, truth = _topic_texts(600, seed=1)
    d = discover(items, DiscoverConfig(embedding="tfidf", seed=0, k_max=6))
    ids = {t: {it.id for it, tr in zip(items, truth, strict=True) if tr == t} for t in _TOPICS}
    for topic in ("carry", "sign"):
        assert max(_f1(c.members, ids[topic]) for c in d.categories) >= 0.9, topic
    # The 4% topic is under min_share 5%: never a category of its own.
    assert all(_f1(c.members, ids["rare"]) < 0.5 for c in d.categories)
    assert d.unassigned == sum(x.size for x in d.dropped)
    assert d.stability_ari is not None and d.stability_ari >= 0.9
    assert sum(c.size for c in d.categories) + d.unassigned == len(items)


def test_too_rare_cluster_is_dropped() -> None:
    # Two wordings per topic, topics with no word in common: 60% / 36% / 4% of 600 texts.
    wordings = {
        "carry": ["carry digit column", "carry digit tens"],
        "sign": ["negative minus sign", "negative minus flipped"],
        "rare": ["dice coin chance", "dice coin outcomes"],
    }
    counts = {"carry": 360, "sign": 216, "rare": 24}
    items = [
        DiscoverText(id=f"{topic}{i}", text=wordings[topic][i % 2])
        for topic, n in counts.items()
        for i in range(n)
    ]
    d = discover(items, DiscoverConfig(embedding="tfidf", k_min=3, k_max=3))
    # k = 3 gives each topic its cluster; the 4% one is under min_share 5%: dropped.
    (dropped,) = d.dropped
    assert dropped.reason == "too rare" and dropped.size == 24 and dropped.share == 0.04
    assert d.unassigned == 24 and sorted(c.size for c in d.categories) == [216, 360]


def test_too_generic_cluster_is_dropped() -> None:
    items, _ = _topic_texts(300, seed=2)
    d = discover(items, DiscoverConfig(embedding="tfidf", k_min=2, k_max=2, max_share=0.5))
    # With two clusters, the 60% topic is at or above max_share 0.5: dropped as too generic.
    assert any(x.reason == "too generic" and x.share >= 0.5 for x in d.dropped)
    assert all(c.share < 0.5 for c in d.categories)


def test_per_checkpoint_prevalence_counts_by_brute_force() -> None:
    items, _ = _topic_texts(400, seed=3)
    d = discover(items, DiscoverConfig(embedding="tfidf", seed=0, k_max=4))
    by_ck = Counter(t.checkpoint for t in items)
    ck_of = {t.id: t.checkpoint for t in items}
    for c in d.categories:
        counts = Counter(ck_of[m] for m in c.members)
        assert [p.checkpoint for p in c.per_checkpoint] == ["step1", "step2", "step3", "step4"]
        for p in c.per_checkpoint:
            assert p.count == counts[p.checkpoint] and p.total == by_ck[p.checkpoint]
            assert p.ci == wilson(p.count, p.total)
        assert len(c.examples) == 3 and {e.id for e in c.examples} <= set(c.members)
        assert re.fullmatch(r"found_[a-z0-9_]+", c.key)


def test_too_few_texts_is_an_analysis_error() -> None:
    items, _ = _topic_texts(10, seed=0)
    with pytest.raises(AnalysisError, match="at least 20 texts"):
        discover(items, DiscoverConfig(embedding="tfidf"))


def test_candidate_taxonomy_adds_before_other_and_loads(tmp_path: Path) -> None:
    items, _ = _topic_texts(300, seed=4)
    base = load_taxonomy(None)
    d = discover(items, DiscoverConfig(embedding="tfidf", k_max=3), taken_keys=base.keys)
    cand = write_taxonomy(candidate_taxonomy(base, d), tmp_path / "t.yaml")
    assert cand.keys == [*base.keys[:-1], *(c.key for c in d.categories), "other"]
    assert cand.version != base.version and cand.hash != base.hash
    assert cand == load_taxonomy(tmp_path / "t.yaml")


def test_planted_phrasings_share_no_content_word() -> None:
    # The planted category's phrasings (both pools) share no word of 3+ letters outside a
    # short list of function words: bag-of-words cannot join them.
    stop = {"the", "and", "for", "with", "from", "into", "was", "way", "where", "though"}
    words = [
        {w for w in re.findall(r"[a-z]{3,}", p.lower()) if w not in stop}
        for pool in _PHRASES[PLANTED_KEY]
        for p in pool
    ]
    for i, a in enumerate(words):
        for b in words[i + 1 :]:
            assert not (a & b), (a, b)


def test_planted_share_rises_across_checkpoints() -> None:
    ps = planted_set(8000, seed=0, split="held_out")
    share = {
        ck: np.mean(
            [t == PLANTED_KEY for t, c in zip(ps.truth, ps.checkpoints, strict=True) if c == ck]
        )
        for ck in sorted(set(ps.checkpoints))
    }
    values = list(share.values())
    # Drawn at 4%, 8%, 12%, 16% (linspace(0.04, 0.16, 4)); 2,000 texts each: SE <= 0.8 pp.
    assert values == sorted(values)
    assert abs(float(np.mean([t == PLANTED_KEY for t in ps.truth])) - 0.10) < 0.01


def _planted_f1(split: str, seed: int) -> float:
    ps = planted_set(3000, seed=seed, split=split)  # type: ignore[arg-type]
    items = [
        DiscoverText(id=i, text=t, checkpoint=c)
        for i, t, c in zip(ps.ids, ps.texts, ps.checkpoints, strict=True)
    ]
    d = discover(items, DiscoverConfig(seed=seed))
    truth = {i for i, t in zip(ps.ids, ps.truth, strict=True) if t == PLANTED_KEY}
    return max((_f1(c.members, truth) for c in d.categories), default=0.0)


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="not reached: the offline path (wordllama SIF + k-means) splits the planted category "
    "by phrasing; held-out F1 measured 0.41-0.59, no variant of bench_discover.py --variants "
    "reached 0.8 on all dev sets, nor did all-MiniLM-L6-v2 on unseen pools (docs/discover.md)",
)
def test_planted_category_recovered_on_unseen_phrasings() -> None:
    # The target: one category with membership F1 >= 0.8 on phrasings never seen.
    assert _planted_f1("held_out", seed=11) >= 0.8


def test_wordllama_sif_by_brute_force_ignores_padding() -> None:
    # SIF rebuilt one text at a time (tokenizer.encode pads nothing alone), with plain dicts:
    # embed_texts encodes in one padded batch and must count the real tokens only. The set
    # holds one long text, so padding would fill most of every other text's batch row.
    pytest.importorskip("wordllama")
    import wordllama
    from wordllama import WordLlama

    from misstep.discover import embed_texts

    texts = sorted(set(planted_set(300, seed=5).texts))
    texts.append(" ".join(["The method is then discussed at length."] * 30))
    model = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    vectors = np.asarray(model.embedding, dtype=np.float64)
    ids = [model.tokenizer.encode(t, add_special_tokens=False).ids for t in texts]
    freq = Counter(i for row in ids for i in row)
    total = sum(freq.values())
    rows = []
    for row in ids:
        w = [1e-3 / (1e-3 + freq[i] / total) for i in row]
        rows.append(sum(wi * vectors[i] for wi, i in zip(w, row, strict=True)) / sum(w))
    x = np.array(rows)
    x -= x.mean(axis=0)
    pc = np.linalg.svd(x, full_matrices=False)[2][0]
    x -= np.outer(x @ pc, pc)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    got = embed_texts(texts, "wordllama", seed=0)
    assert np.allclose(got, x, atol=1e-4)
