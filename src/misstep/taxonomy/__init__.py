"""The taxonomy of errors as data: the built-in ``math-v1`` and users' YAML files."""

from misstep.taxonomy._load import BUILTIN_TAXONOMY, load_taxonomy
from misstep.taxonomy._model import CANT_TELL, Category, Taxonomy

__all__ = ["BUILTIN_TAXONOMY", "CANT_TELL", "Category", "Taxonomy", "load_taxonomy"]
