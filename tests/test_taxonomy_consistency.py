"""The label schema, the prompt's category section and the CLI's choices come from one file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from misstep.judge import label_json_schema, label_model
from misstep.prompts import render_judge_prompt
from misstep.rollouts import Trace
from misstep.taxonomy import CANT_TELL, Taxonomy, load_taxonomy

CUSTOM = """\
id: custom-test
version: 7
categories:
  - key: sign_slip
    name: Sign slip
    definition: a sign dropped
    rules: [only signs]
    examples: ["-(3 - 4) = -1"]
  - key: unit_mixup
    definition: units confused
  - key: off_by_one
    definition: a count off by one
"""


def prompt_categories(taxonomy: Taxonomy) -> list[str]:
    trace = Trace(problem_id="p", response="2 + 2 = 5")
    system = render_judge_prompt(taxonomy, trace, "5").messages[0]["content"]
    headers = re.findall(r"^## (\w+)", system, flags=re.MULTILINE)
    listed = re.search(r'"error_type": one of ([\w, ]+);', system)
    assert listed is not None
    assert listed.group(1).split(", ") == headers
    return headers


def check_agree(taxonomy: Taxonomy) -> None:
    enum = label_json_schema(taxonomy)["properties"]["error_type"]["enum"]
    model = label_model(taxonomy)
    # the schema's enum and the prompt's list: the keys, then "cannot tell" (never a key)
    assert enum == [*prompt_categories(taxonomy), CANT_TELL] == taxonomy.reply_choices
    assert prompt_categories(taxonomy) == taxonomy.keys == taxonomy.choices
    assert CANT_TELL not in taxonomy.keys
    for key in taxonomy.keys:
        model.model_validate(
            {
                "error_type": key,
                "first_error_step": 0,
                "evidence": "",
                "explanation": "",
                "confidence": 0.5,
            }
        )


def test_custom_taxonomy_drives_everything(tmp_path: Path) -> None:
    path = tmp_path / "custom.yaml"
    path.write_text(CUSTOM, encoding="utf-8")
    taxonomy = load_taxonomy(path)
    assert taxonomy.keys == ["sign_slip", "unit_mixup", "off_by_one"]
    check_agree(taxonomy)
    system = render_judge_prompt(taxonomy, Trace(problem_id="p", response="x"), None).messages[0]
    assert "a sign dropped" in system["content"] and "-(3 - 4) = -1" in system["content"]
    assert "arithmetic" not in system["content"]


def test_builtin_taxonomy_keys_and_agreement() -> None:
    taxonomy = load_taxonomy()
    assert taxonomy.keys == [
        "arithmetic",
        "misread",
        "theorem_misuse",
        "broken_derivation",
        "other",
    ]
    check_agree(taxonomy)


@pytest.mark.parametrize("edit", [("sign_slip", "renamed_key"), ("units confused", "changed")])
def test_any_edit_changes_the_hash_that_labels_carry(tmp_path: Path, edit: tuple[str, str]) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(CUSTOM, encoding="utf-8")
    b.write_text(CUSTOM.replace(*edit), encoding="utf-8")
    assert load_taxonomy(a).hash != load_taxonomy(b).hash
