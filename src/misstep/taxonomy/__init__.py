"""The taxonomy of errors as data: the built-in ``math-v1`` and users' YAML files."""

from misstep.taxonomy._load import BUILTIN_TAXONOMY, load_taxonomy
from misstep.taxonomy._model import Category, Taxonomy

__all__ = ["BUILTIN_TAXONOMY", "Category", "Taxonomy", "load_taxonomy"]
