"""The link: error-type shifts and other causes against majority-vote failures."""

from misstep.link._findings import Finding
from misstep.link._link import (
    LINK_STAGES,
    CheckpointSummary,
    LinkResult,
    link_analysis,
    read_train_metrics,
)

__all__ = [
    "LINK_STAGES",
    "CheckpointSummary",
    "Finding",
    "LinkResult",
    "link_analysis",
    "read_train_metrics",
]
