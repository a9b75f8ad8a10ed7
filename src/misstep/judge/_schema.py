"""The label schema a judge must fill, generated from the taxonomy (never written by hand)."""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from misstep.taxonomy import Taxonomy

__all__ = ["EVIDENCE_MAX_CHARS", "label_json_schema", "label_model"]

EVIDENCE_MAX_CHARS = 300
"""Longest evidence quote the schema allows."""

_MODELS: dict[str, type[BaseModel]] = {}


def label_model(taxonomy: Taxonomy) -> type[BaseModel]:
    """The pydantic model of one label under ``taxonomy``; cached per taxonomy hash.

    Fields, in this order (the order the judge writes them in): ``first_error_step``
    (int >= 0), ``evidence`` (short verbatim quote), ``explanation``, ``error_type`` (one of the
    taxonomy's keys), ``confidence`` (0 to 1).
    """
    cached = _MODELS.get(taxonomy.hash)
    if cached is not None:
        return cached
    error_type: Any = Literal[tuple(taxonomy.keys)]
    # vLLM's structured output keeps the schema's property order, so the model writes these
    # in this order: the step, the quote and the reasoning first, the category after them,
    # as judges in the field do (the category is not an opening bet to be justified).
    model = create_model(
        "Label",
        __config__=ConfigDict(extra="forbid", title="Label"),
        __doc__=f"The first error of a wrong trace, under taxonomy {taxonomy.id}.",
        first_error_step=(
            int,
            Field(ge=0, description="0-based number of the first wrong step, as shown."),
        ),
        evidence=(
            str,
            Field(
                max_length=EVIDENCE_MAX_CHARS,
                description="A short verbatim quote from that step showing the error.",
            ),
        ),
        explanation=(str, Field(description="One or two sentences on what went wrong.")),
        error_type=(
            error_type,
            Field(description="Category of the first error: one of " + ", ".join(taxonomy.keys)),
        ),
        confidence=(
            float,
            Field(ge=0.0, le=1.0, description="Confidence in this label, from 0 to 1."),
        ),
    )
    _MODELS[taxonomy.hash] = model
    return model


def label_json_schema(taxonomy: Taxonomy) -> dict[str, Any]:
    """The JSON schema sent as ``response_format``: a flat object, every field required,
    ``additionalProperties: false`` and an ``enum`` of the taxonomy's keys (no ``$ref``)."""
    schema = copy.deepcopy(label_model(taxonomy).model_json_schema())
    schema["required"] = list(schema["properties"])
    schema["additionalProperties"] = False
    return schema
