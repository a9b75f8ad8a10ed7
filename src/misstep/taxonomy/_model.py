"""The shape of a taxonomy: categories with definitions, decision rules and examples."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

__all__ = ["CANT_TELL", "KEY_PATTERN", "Category", "Taxonomy"]

# Keys become enum values in the JSON schema and CLI choices: keep them identifier-like.
KEY_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"

CANT_TELL = "cant_tell"
"""The answer "I can't tell": a person's in ``misstep review`` (``labels.CANT_TELL``), and the
judge's answer that it cannot find the error: a choice of the reply's ``error_type``
(``Taxonomy.reply_choices``) that is never a category (no taxonomy may use it as a key).
The exchange stores it as the status ``abstained``, with no type and no step."""


class Category(BaseModel):
    """One error category of a taxonomy."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    key: str = Field(pattern=KEY_PATTERN)
    """Machine name: lowercase letters, digits and underscores, starting with a letter."""
    name: str = ""
    """Human-readable name; defaults to the key."""
    definition: str = Field(min_length=1)
    """What the category means, in one or two sentences."""
    rules: list[str] = Field(default_factory=list)
    """Decision rules that separate this category from its neighbours."""
    examples: list[str] = Field(default_factory=list)
    """One or two short examples."""


class Taxonomy(BaseModel):
    """A versioned set of error categories; the one source of labels, prompt and CLI choices."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    id: str = Field(min_length=1)
    """Name of the taxonomy, e.g. ``math-v1``."""
    version: int | str
    """Version of the taxonomy."""
    description: str = ""
    """What the categories classify; shown to the judge."""
    categories: list[Category] = Field(min_length=1)
    """The categories, in the order the prompt shows them."""

    _hash: str = PrivateAttr(default="")
    _source: str | None = PrivateAttr(default=None)

    def model_post_init(self, __context: Any) -> None:
        # Canonical JSON of the parsed content: stable across key order and YAML formatting.
        canonical = json.dumps(
            self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        self._hash = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]

    @property
    def keys(self) -> list[str]:
        """The category keys, in file order."""
        return [c.key for c in self.categories]

    @property
    def reply_choices(self) -> list[str]:
        """What a judge's reply may give as its ``error_type``: the keys, then ``CANT_TELL``
        (the schema's enum and the prompt's list; never a type of a stored label)."""
        return [*self.keys, CANT_TELL]

    @property
    def choices(self) -> list[str]:
        """The values a CLI option naming an error type accepts (the keys)."""
        return self.keys

    @property
    def hash(self) -> str:
        """12 hex digits of sha256 over the canonical JSON of the taxonomy's content."""
        return self._hash

    @property
    def source(self) -> str | None:
        """The absolute path of the YAML file it was loaded from; None for the built-in one
        (a label run records it, so that every analysis reads the run's own taxonomy)."""
        return self._source

    def category(self, key: str) -> Category:
        """The category with this key; KeyError when there is none."""
        for c in self.categories:
            if c.key == key:
                return c
        raise KeyError(key)
