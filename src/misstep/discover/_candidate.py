"""The candidate taxonomy: the run's taxonomy plus the proposed types, with a new version,
written as YAML that ``misstep label --taxonomy`` reads."""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

from misstep.discover._result import Discovery
from misstep.taxonomy import Category, Taxonomy, load_taxonomy

__all__ = ["candidate_taxonomy", "write_taxonomy"]

_FALLBACK_KEYS = ("other", "undetermined")  # kept last: the judge's "none of the above"
_EXAMPLE_CHARS = 200


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXAMPLE_CHARS else text[: _EXAMPLE_CHARS - 3] + "..."


def candidate_taxonomy(base: Taxonomy, discovery: Discovery) -> Taxonomy:
    """``base`` with one category per discovered one, inserted before its fallback category
    (``other``/``undetermined``) when it has one; the version becomes
    ``<base version>+discover.<6 hex digits of the proposed keys>``."""
    added = [
        Category(
            key=c.key,
            name=c.name,
            definition=c.criterion,
            rules=[
                "Proposed by misstep discover from "
                f"{c.size} texts ({100 * c.share:.0f}% of those clustered); "
                f"distinguishing words: {', '.join(c.keywords[:6]) or '-'}."
            ],
            examples=[_short(e.quote or e.text) for e in c.examples[:2]],
        )
        for c in discovery.categories
    ]
    keys = base.keys
    cut = next((i for i, k in enumerate(keys) if k in _FALLBACK_KEYS), len(keys))
    categories = [*base.categories[:cut], *added, *base.categories[cut:]]
    digest = hashlib.sha256(",".join(c.key for c in added).encode()).hexdigest()[:6]
    return Taxonomy(
        id=base.id,
        version=f"{base.version}+discover.{digest}",
        description=base.description,
        categories=categories,
    )


def write_taxonomy(taxonomy: Taxonomy, path: str | Path) -> Taxonomy:
    """Write ``taxonomy`` as YAML and read it back with ``load_taxonomy`` (the loader
    ``label --taxonomy`` uses), so a file that would not load is never left unnoticed."""
    p = Path(path)
    text = yaml.safe_dump(
        taxonomy.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=96
    )
    p.write_text(
        "# Candidate taxonomy written by `misstep discover`: read and rename the proposed\n"
        "# categories, then relabel with `misstep label --taxonomy THIS_FILE`.\n" + text,
        encoding="utf-8",
    )
    return load_taxonomy(p)
