"""Lower layers never import higher ones: rollouts -> taxonomy -> verdict -> labels -> prompts
-> judge -> metrics -> agreement -> discover -> link -> report -> review -> pipelines -> cli.
Checked on the source text (ast), so lazy imports inside functions count too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "misstep"
ORDER = [
    "rollouts",
    "taxonomy",
    "verdict",
    "labels",
    "prompts",
    "judge",
    "metrics",
    "agreement",
    "discover",
    "link",
    "report",
    "review",
    "pipelines",
    "cli",
]


def _imported_layers(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "misstep" and len(parts) > 1 and parts[1] in ORDER:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("layer", ORDER)
def test_layer_imports_only_lower_layers(layer: str) -> None:
    allowed = set(ORDER[: ORDER.index(layer) + 1])
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for used in _imported_layers(path) - allowed:
            bad.append(f"{path.relative_to(PACKAGE)} imports misstep.{used}")
    assert not bad, "layering violated:\n" + "\n".join(bad)


def test_layer_check_sees_a_violation(tmp_path: Path) -> None:
    # The checker must be able to fail: a module importing a higher layer is reported.
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from misstep.cli import app\n", encoding="utf-8")
    assert _imported_layers(module) == {"cli"}


def test_the_judge_imports_nothing_from_storage() -> None:
    # The judge's contract with storage is misstep.verdict (statuses, verdicts, the evidence
    # check); records and manifests are made in misstep.labels, where runs are stored.
    bad = [
        str(path.relative_to(PACKAGE))
        for path in sorted((PACKAGE / "judge").rglob("*.py"))
        if "labels" in _imported_layers(path)
    ]
    assert not bad, "the judge imports misstep.labels:\n" + "\n".join(bad)
