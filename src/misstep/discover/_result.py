"""What ``misstep discover`` writes: ``OUT/categories.json``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CATEGORIES_VERSION",
    "CheckpointShare",
    "DiscoveredCategory",
    "Discovery",
    "DroppedCluster",
    "Example",
]

CATEGORIES_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class Example(_Model):
    """One member shown as an example (the members closest to the cluster's centre)."""

    id: str
    """The text's id (a trace id for a label run)."""
    text: str
    """The text clustered (the judge's explanation for a label run)."""
    quote: str | None = None
    """The judge's quote of the faulty step (label runs), or the row's ``quote``."""


class CheckpointShare(_Model):
    """The category's prevalence in one checkpoint."""

    checkpoint: str
    """The checkpoint."""
    count: int
    """Texts of this checkpoint in the category."""
    total: int
    """Texts of this checkpoint analysed."""
    share: float
    """``count / total``."""
    ci: tuple[float, float]
    """Wilson 95% interval of the share."""


class DiscoveredCategory(_Model):
    """A proposed error type."""

    key: str
    """Proposed taxonomy key (``found_`` and its top keywords)."""
    name: str
    """Human-readable name (its top keywords; rename it before relabelling)."""
    criterion: str
    """One-sentence inclusion criterion."""
    keywords: list[str]
    """Distinguishing words, best first (c-TF-IDF)."""
    size: int
    """Number of members."""
    share: float
    """Members over all texts analysed."""
    ci: tuple[float, float]
    """Wilson 95% interval of ``share``."""
    stability: float | None
    """Mean best Jaccard overlap with a cluster of each other seed's run (1 = always the same
    members); None on the judge path, which runs once."""
    per_checkpoint: list[CheckpointShare]
    """Prevalence per checkpoint, in checkpoint order (empty when texts carry none)."""
    examples: list[Example]
    """Up to three members nearest the centre, with their quotes."""
    members: list[str]
    """Ids of every member."""


class DroppedCluster(_Model):
    """A cluster the prevalence filter removed."""

    keywords: list[str]
    """Its distinguishing words."""
    size: int
    """Number of members."""
    share: float
    """Members over all texts analysed."""
    reason: str
    """``too rare`` (share under ``min_share``) or ``too generic`` (at least ``max_share``)."""


class Discovery(_Model):
    """The result of one ``misstep discover`` run."""

    version: int = CATEGORIES_VERSION
    """Format version of this file."""
    source: str
    """What was clustered: ``texts FILE`` or ``labels RUN_DIR (types)``."""
    embedding: str
    """``wordllama`` or ``tfidf``; ``judge`` when a judge server proposed and assigned."""
    texts: int
    """Texts analysed."""
    distinct_texts: int
    """Distinct texts among them (duplicates are clustered once)."""
    k: int
    """Clusters made before filtering (chosen by the silhouette), or types the judge
    proposed."""
    silhouette: float | None
    """Silhouette of the chosen k on a sample (-1 to 1; higher is better separated); None on
    the judge path."""
    seeds: int
    """k-means runs with different seeds."""
    stability_ari: float | None
    """Mean adjusted Rand index between the seeds' runs (1 = identical; None with one seed)."""
    min_share: float
    """Clusters under this share were dropped as too rare."""
    max_share: float
    """Clusters at or above this share were dropped as too generic."""
    categories: list[DiscoveredCategory] = Field(default_factory=list)
    """The proposed categories, largest first."""
    dropped: list[DroppedCluster] = Field(default_factory=list)
    """Clusters the prevalence filter removed."""
    unassigned: int = 0
    """Texts in dropped clusters, or that the judge assigned to no type."""
    judge_rounds: list[dict[str, object]] = Field(default_factory=list)
    """Judge path: per round the types proposed, texts assigned, and whether the server's
    embeddings chose the sample."""
