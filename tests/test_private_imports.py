"""No package reaches into another package's private module: ``from misstep.x._y import ...``
(or ``from misstep.x import _name``) outside package ``x`` is refused. A name another package
needs is exported by its owner's ``__init__``. Checked on the source text (ast), so imports
inside functions count too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "misstep"

# Empty, and meant to stay so: a name another package needs is exported by its owner's __init__.
ALLOWED: set[str] = set()


def private_imports(path: Path, package: str | None) -> list[str]:
    """``misstep.x._y.name`` for every private name ``path`` imports from a package other than
    ``package`` (its own)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules: list[tuple[str, list[str]]] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [(node.module, [alias.name for alias in node.names])]
        elif isinstance(node, ast.Import):
            modules = [(alias.name, [""]) for alias in node.names]
        for module, names in modules:
            parts = module.split(".")
            if parts[0] != "misstep" or len(parts) < 2 or parts[1] == package:
                continue
            for name in names:
                dotted = [*parts, name] if name else parts
                if any(p.startswith("_") and not p.startswith("__") for p in dotted[1:]):
                    found.append(".".join(dotted))
    return found


def _offenders() -> set[str]:
    out: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        package = rel.parts[0] if len(rel.parts) > 1 else None
        out.update(f"{rel.as_posix()}: {name}" for name in private_imports(path, package))
    return out


def test_no_cross_package_private_import() -> None:
    offenders = _offenders()
    new = sorted(offenders - ALLOWED)
    assert not new, "import these from the owning package's __init__:\n" + "\n".join(new)
    stale = sorted(ALLOWED - offenders)
    assert not stale, "fixed: remove from ALLOWED in this test:\n" + "\n".join(stale)


def test_private_import_check_sees_one(tmp_path: Path) -> None:
    # The check must be able to fail: each form of reaching into a private module is reported,
    # and a package's own private modules and public names are not.
    module = tmp_path / "m.py"
    module.write_text(
        "from misstep.labels._store import labels_path\n"
        "from misstep.pipelines import _private\n"
        "import misstep.judge._openai\n"
        "from misstep.judge import JudgeConfig\n"
        "from misstep.cli._errors import quote\n",
        encoding="utf-8",
    )
    assert private_imports(module, "cli") == [
        "misstep.labels._store.labels_path",
        "misstep.pipelines._private",
        "misstep.judge._openai",
    ]
