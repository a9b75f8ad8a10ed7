"""``misstep discover``: find the error types a taxonomy misses, from the judge's explanations
or from free texts, offline (static embeddings and k-means), and propose them as a candidate
taxonomy."""

from misstep.discover._candidate import candidate_taxonomy, write_taxonomy
from misstep.discover._cluster import Clustering, cluster_embeddings
from misstep.discover._discover import (
    DISCOVER_STAGES,
    JUDGE_STAGES,
    DiscoverConfig,
    discover,
    discover_with_judge,
    wilson,
)
from misstep.discover._embed import EMBEDDINGS, Embedding, embed_texts, wordllama_available
from misstep.discover._inputs import DiscoverText, read_texts_file, texts_from_labels
from misstep.discover._judge import JudgeDiscoverSettings, JudgeRound
from misstep.discover._keywords import ctfidf_keywords
from misstep.discover._planted import PLANTED_KEY, PlantedSet, planted_set
from misstep.discover._result import (
    CATEGORIES_VERSION,
    CheckpointShare,
    DiscoveredCategory,
    Discovery,
    DroppedCluster,
    Example,
)

__all__ = [
    "CATEGORIES_VERSION",
    "DISCOVER_STAGES",
    "EMBEDDINGS",
    "JUDGE_STAGES",
    "PLANTED_KEY",
    "CheckpointShare",
    "Clustering",
    "DiscoverConfig",
    "DiscoverText",
    "DiscoveredCategory",
    "Discovery",
    "DroppedCluster",
    "Embedding",
    "Example",
    "JudgeDiscoverSettings",
    "JudgeRound",
    "PlantedSet",
    "candidate_taxonomy",
    "cluster_embeddings",
    "ctfidf_keywords",
    "discover",
    "discover_with_judge",
    "embed_texts",
    "planted_set",
    "read_texts_file",
    "texts_from_labels",
    "wilson",
    "wordllama_available",
    "write_taxonomy",
]
