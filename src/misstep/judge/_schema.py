"""The label schema a judge must fill, generated from the taxonomy (never written by hand)."""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from misstep.taxonomy import CANT_TELL, Taxonomy

__all__ = ["EVIDENCE_MAX_CHARS", "EXPLANATION_MAX_CHARS", "label_json_schema", "label_model"]

EVIDENCE_MAX_CHARS = 300
"""Longest evidence quote the schema allows. A bounded string in xgrammar admits no escape
(no backslash, no quote, no newline): the quote is a fragment of the step without them. Of
the 2,221 ProcessBench first-error steps, 83% hold a backslash (LaTeX) but 98.6% hold a run of
20 or more characters free of backslashes, quotes and newlines to quote from; the bound also
ends a reply that would loop inside the quote."""
EXPLANATION_MAX_CHARS = 400
"""Longest explanation the schema sent to a model allows (one or two sentences; plain prose,
so no escapes are needed): a small model that repeats one sentence inside the string is
stopped by the grammar at this length instead of running to ``max_tokens``. A bound of the
wire schema only (``label_json_schema``): the rules judge's own explanations may be longer."""

_MODELS: dict[str, type[BaseModel]] = {}


def label_model(taxonomy: Taxonomy) -> type[BaseModel]:
    """The pydantic model of one label under ``taxonomy``; cached per taxonomy hash.

    Fields, in this order (the order the judge writes them in): ``first_error_step``
    (int >= 0), ``evidence`` (short verbatim quote), ``explanation``, ``error_type`` (one of the
    taxonomy's keys, or ``taxonomy.CANT_TELL``: the judge cannot find the error, which the
    exchange stores as the status ``abstained``, never as a type), ``confidence`` (0 to 1).
    """
    cached = _MODELS.get(taxonomy.hash)
    if cached is not None:
        return cached
    # the reply's choices: the taxonomy's keys and "cant_tell" (taxonomy.reply_choices), one
    # enum, so a model that finds no error says so instead of picking a type (a second field
    # would be a choice the grammar forces before the step is found)
    error_type: Any = Literal[tuple(taxonomy.reply_choices)]
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
            Field(
                description="Category of the first error: one of "
                + ", ".join(taxonomy.keys)
                + f"; {CANT_TELL} when you cannot find the error"
            ),
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
    ``additionalProperties: false``, an ``enum`` of the taxonomy's keys and ``cant_tell``
    (no ``$ref``), the
    quote and the explanation bounded in length (``EVIDENCE_MAX_CHARS``,
    ``EXPLANATION_MAX_CHARS``)."""
    schema = copy.deepcopy(label_model(taxonomy).model_json_schema())
    schema["required"] = list(schema["properties"])
    schema["additionalProperties"] = False
    schema["properties"]["explanation"]["maxLength"] = EXPLANATION_MAX_CHARS
    return schema
