"""Loading taxonomies: the built-in one, users' files, bad files and the content hash."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from misstep.errors import TaxonomyError
from misstep.taxonomy import BUILTIN_TAXONOMY, Category, Taxonomy, load_taxonomy

GOOD = """\
id: tiny
version: 2
description: two categories
categories:
  - key: slip
    name: Slip
    definition: a small mistake
    rules: [only small ones]
    examples: ["2 + 2 = 5"]
  - key: other
    definition: anything else
"""


def write(tmp_path: Path, text: str, name: str = "tax.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_builtin_loads_with_its_five_keys() -> None:
    tax = load_taxonomy()
    assert tax.id == BUILTIN_TAXONOMY == "math-v1"
    assert tax.keys == ["arithmetic", "misread", "theorem_misuse", "broken_derivation", "other"]
    assert tax.choices == tax.keys
    for cat in tax.categories:
        assert isinstance(cat, Category)
        assert cat.definition and cat.rules and cat.examples


def test_builtin_is_package_data() -> None:
    # The wheel ships the package directory whole; the file is read through importlib.resources.
    resource = resources.files("misstep.taxonomy") / "math-v1.yaml"
    assert resource.is_file()
    assert load_taxonomy(Path(str(resource))).hash == load_taxonomy().hash


def test_user_file_loads(tmp_path: Path) -> None:
    tax = load_taxonomy(write(tmp_path, GOOD))
    assert tax.keys == ["slip", "other"]
    assert tax.version == 2
    assert tax.category("slip").examples == ["2 + 2 = 5"]
    assert tax.category("other").name == ""
    with pytest.raises(KeyError):
        tax.category("nope")


def test_hash_is_12_hex_and_stable_across_layout(tmp_path: Path) -> None:
    reordered = """\
categories:
  - definition:   a small mistake
    examples:
      - "2 + 2 = 5"
    key: slip
    rules:
      - only small ones
    name: Slip
  - {key: other, definition: anything else}
version: 2
description: two categories
id: tiny
"""
    a = load_taxonomy(write(tmp_path, GOOD, "a.yaml"))
    b = load_taxonomy(write(tmp_path, reordered, "b.yaml"))
    assert a.hash == b.hash
    assert len(a.hash) == 12 and int(a.hash, 16) >= 0


def test_hash_changes_with_content(tmp_path: Path) -> None:
    a = load_taxonomy(write(tmp_path, GOOD, "a.yaml"))
    b = load_taxonomy(write(tmp_path, GOOD.replace("a small mistake", "a tiny mistake"), "b.yaml"))
    c = load_taxonomy(write(tmp_path, GOOD.replace("version: 2", "version: 3"), "c.yaml"))
    assert len({a.hash, b.hash, c.hash}) == 3
    assert load_taxonomy().hash != a.hash


def test_taxonomy_built_in_code_matches_file_hash() -> None:
    tax = load_taxonomy()
    rebuilt = Taxonomy.model_validate(tax.model_dump())
    assert rebuilt.hash == tax.hash


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        (GOOD.replace("id: tiny\n", ""), "id", "Field required"),
        (GOOD.replace("    definition: anything else\n", ""), "categories[1](other).definition",
         "Field required"),
        (GOOD.replace("key: slip", "key: Slip-Up"), "categories[0](Slip-Up).key", "pattern"),
        (GOOD.replace("key: slip", "key: other"), "categories[1].key", "duplicate category key"),
        ("id: tiny\nversion: 1\ncategories: []\n", "categories", "at least 1"),
        (GOOD + "colour: blue\n", "colour", "Extra inputs"),
        (GOOD.replace("definition: a small mistake", "definition: ''"),
         "categories[0](slip).definition", "at least 1"),
    ],
)  # fmt: skip
def test_bad_files_name_path_and_field(tmp_path: Path, text: str, field: str, reason: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(TaxonomyError) as info:
        load_taxonomy(path)
    assert info.value.field == field
    assert reason in info.value.reason
    assert info.value.path == str(path)
    assert str(path) in str(info.value) and field in str(info.value)
    assert info.value.exit_code == 2


def test_duplicate_yaml_mapping_key_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("version: 2\n", "version: 2\nversion: 3\n"))
    with pytest.raises(TaxonomyError, match=r"line 3.*duplicate key 'version'"):
        load_taxonomy(path)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("- just\n- a list\n", "expected a mapping"),
        ("id: [unclosed\n", "not valid YAML"),
        ("", "expected a mapping"),
    ],
)
def test_not_a_taxonomy(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(TaxonomyError, match=match):
        load_taxonomy(write(tmp_path, text))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TaxonomyError, match="cannot read the file") as info:
        load_taxonomy(tmp_path / "absent.yaml")
    assert info.value.hint is not None and "--taxonomy" in info.value.hint


def test_yaml_tags_are_not_constructed(tmp_path: Path) -> None:
    # A safe loader: python-object tags are refused, never executed.
    text = GOOD.replace(
        "description: two categories", "description: !!python/object/apply:os.system ['echo pwned']"
    )
    with pytest.raises(TaxonomyError, match="not valid YAML"):
        load_taxonomy(write(tmp_path, text))
