"""Load a taxonomy from YAML (the built-in ``math-v1.yaml`` or a user's file)."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from misstep.errors import TaxonomyError
from misstep.taxonomy._model import CANT_TELL, Taxonomy

__all__ = ["BUILTIN_TAXONOMY", "load_taxonomy"]

BUILTIN_TAXONOMY = "math-v1"
"""Name of the taxonomy used when none is given (``math-v1.yaml`` inside this package)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses duplicate mapping keys instead of keeping the last one."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def _field_of(loc: tuple[int | str, ...], data: Any) -> str:
    """Dotted field path of a validation error, naming the category by key when known."""
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int) and isinstance(node, list) and 0 <= item < len(node):
            node = node[item]
            key = node.get("key") if isinstance(node, dict) else None
            parts.append(f"[{item}]" + (f"({key})" if isinstance(key, str) else ""))
            continue
        parts.append(("." if parts else "") + str(item))
        node = node.get(item) if isinstance(node, dict) else None
    return "".join(parts)


def _parse(text: str, source: str) -> Taxonomy:
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise TaxonomyError(path=source, reason=f"not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise TaxonomyError(
            path=source, reason=f"expected a mapping at the top, got {type(data).__name__}"
        )
    try:
        taxonomy = Taxonomy.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise TaxonomyError(
            path=source, field=_field_of(tuple(err["loc"]), data), reason=err["msg"]
        ) from None
    seen: set[str] = set()
    for i, key in enumerate(taxonomy.keys):
        if key in seen:
            raise TaxonomyError(
                path=source, field=f"categories[{i}].key", reason=f"duplicate category key {key!r}"
            )
        if key == CANT_TELL:
            raise TaxonomyError(
                path=source,
                field=f"categories[{i}].key",
                reason=f"{key!r} is reserved: it is the judge's answer that it cannot tell, "
                "stored as the status 'abstained', never a category; rename the category",
            )
        seen.add(key)
    return taxonomy


@functools.lru_cache(maxsize=1)
def _builtin() -> Taxonomy:
    text = (resources.files("misstep.taxonomy") / f"{BUILTIN_TAXONOMY}.yaml").read_text("utf-8")
    return _parse(text, f"<built-in {BUILTIN_TAXONOMY}>")


def load_taxonomy(path: str | Path | None = None) -> Taxonomy:
    """Load a taxonomy YAML file; ``None`` loads the built-in ``math-v1``.

    Raises TaxonomyError naming the file and the field for a file that cannot be read, is not
    YAML, misses keys, has invalid or duplicate category keys, or has no categories.
    """
    if path is None:
        return _builtin()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaxonomyError(
            path=p,
            reason=f"cannot read the file: {exc.strerror or exc}",
            hint="pass an existing YAML file to --taxonomy, or leave it out for math-v1",
        ) from None
    except UnicodeDecodeError:
        raise TaxonomyError(path=p, reason="the file is not UTF-8 text") from None
    taxonomy = _parse(text, str(p))
    taxonomy._source = str(p.resolve())
    return taxonomy
