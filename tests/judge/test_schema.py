"""The label schema generated from the taxonomy, and the JSON schema sent to servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from misstep.judge import EVIDENCE_MAX_CHARS, LABEL_FIELDS, label_json_schema, label_model
from misstep.labels import StoredLabel
from misstep.taxonomy import load_taxonomy

# the order the judge writes them in: the step, the quote and the reasoning before the category
FIELDS = ["first_error_step", "evidence", "explanation", "error_type", "confidence"]


def good(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "error_type": "arithmetic",
        "first_error_step": 2,
        "evidence": "18 - 6 = 13",
        "explanation": "18 - 6 is 12.",
        "confidence": 0.8,
    }
    base.update(over)
    return base


def test_the_verdict_label_fields_are_the_schema_s_and_a_record_holds_them() -> None:
    # what storage copies from an ok verdict (LABEL_FIELDS) is what the judge writes, and a
    # stored record has a field for each
    assert sorted(LABEL_FIELDS) == sorted(FIELDS)
    assert set(LABEL_FIELDS) <= set(StoredLabel.model_fields)


def test_model_accepts_a_good_label() -> None:
    model = label_model(load_taxonomy())
    label = model.model_validate(good())
    assert label.model_dump() == good()


@pytest.mark.parametrize(
    "bad",
    [
        {"error_type": "typo"},
        {"error_type": "Arithmetic"},
        {"first_error_step": -1},
        {"confidence": 1.5},
        {"confidence": -0.1},
        {"evidence": "x" * (EVIDENCE_MAX_CHARS + 1)},
        {"extra_field": 1},
    ],
)
def test_model_rejects(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        label_model(load_taxonomy()).model_validate(good(**bad))


def test_model_requires_every_field() -> None:
    model = label_model(load_taxonomy())
    for name in FIELDS:
        data = good()
        del data[name]
        with pytest.raises(ValidationError):
            model.model_validate(data)


def test_model_is_cached_per_taxonomy_hash(tmp_path: Path) -> None:
    assert label_model(load_taxonomy()) is label_model(load_taxonomy())
    path = tmp_path / "t.yaml"
    path.write_text(
        "id: t\nversion: 1\ncategories:\n  - {key: slip, definition: d}\n", encoding="utf-8"
    )
    custom = label_model(load_taxonomy(path))
    assert custom is not label_model(load_taxonomy())
    assert custom.model_validate(good(error_type="slip")).error_type == "slip"  # type: ignore[attr-defined]
    with pytest.raises(ValidationError):
        custom.model_validate(good())  # arithmetic is not a key of this taxonomy


def test_json_schema_is_flat_strict_and_complete() -> None:
    tax = load_taxonomy()
    schema = label_json_schema(tax)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == FIELDS
    assert schema["required"] == FIELDS
    assert schema["properties"]["error_type"]["enum"] == tax.keys
    assert schema["properties"]["error_type"]["type"] == "string"
    assert schema["properties"]["first_error_step"] == {
        "description": schema["properties"]["first_error_step"]["description"],
        "minimum": 0,
        "title": "First Error Step",
        "type": "integer",
    }
    for name in FIELDS:
        assert schema["properties"][name]["description"]
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text and "anyOf" not in text


def test_json_schema_is_a_fresh_copy() -> None:
    tax = load_taxonomy()
    label_json_schema(tax)["properties"]["error_type"]["enum"].append("injected")
    assert "injected" not in label_json_schema(tax)["properties"]["error_type"]["enum"]


def test_the_wire_schema_bounds_the_explanation_the_model_does_not() -> None:
    from misstep.judge import EXPLANATION_MAX_CHARS

    taxonomy = load_taxonomy(None)
    schema = label_json_schema(taxonomy)
    assert schema["properties"]["explanation"]["maxLength"] == EXPLANATION_MAX_CHARS == 400
    # the rules judge writes longer explanations through the same model: never refused
    long = {"error_type": taxonomy.keys[0], "first_error_step": 0, "evidence": "x",
            "explanation": "y" * 1000, "confidence": 0.5}  # fmt: skip
    assert label_model(taxonomy).model_validate(long).explanation == "y" * 1000  # type: ignore[attr-defined]
