"""A default is written once: at most 2 (parameter, literal default) pairs repeat across the
signatures of ``src/misstep``, and those are named in ``ALLOWED`` (empty now). A value that
several functions or commands share comes from its single source instead: ``misstep/defaults.py``
(``DEFAULT_SEED``, ``AnalysisDefaults``, ``JudgeDefaults``, ``SampleDefaults``,
``ReviewDefaults``, ...), ``metrics.DEFAULT_N_BOOT`` / ``LEVEL`` / ``DEFAULT_SEED``, a config
model's field, or a module's named constant.

The rule, checked on the source text (ast): every ``def``, ``async def`` and ``lambda``; a pair
is a parameter's name and its default's value when the default is a literal
(``ast.literal_eval`` reads it: numbers, strings, tuples of them; ``-1`` too). A default that
names something (``DEFAULT_SEED``, ``J.max_tokens``) is no literal and is not counted.
Sentinels are not settings and are not counted: ``None``, ``True``/``False`` and an empty
string, tuple, list or dict ("not given", "off", "none"); every other literal is, ``0`` and
``0.0`` included (``seed=0``, ``port=0``, ``overlap=0.0`` are choices someone made). A pair
repeats when it is the default in more than one signature. Class attributes (pydantic and
dataclass fields) are not signatures: their defaults have one place by construction."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "misstep"
MAX_REPEATED = 2

# (parameter, repr(default)) -> why it stays written twice. At most MAX_REPEATED entries;
# meant to stay empty.
ALLOWED: dict[tuple[str, str], str] = {}


def _is_sentinel(value: object) -> bool:
    if value is None or isinstance(value, bool):
        return True
    return isinstance(value, str | tuple | list | dict | frozenset | set) and len(value) == 0


def literal_defaults(path: Path, name: str) -> dict[tuple[str, str], list[str]]:
    """``(parameter, repr(default)) -> ["name:line function", ...]`` for each literal,
    non-sentinel default of ``path``'s signatures."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        args = node.args
        positional = args.posonlyargs + args.args
        pairs = list(
            zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
        )
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d]
        for arg, default in pairs:
            try:
                value = ast.literal_eval(default)
            except ValueError:
                continue  # a name, a call: not a literal
            if not _is_sentinel(value):
                where = getattr(node, "name", "lambda")
                found[(arg.arg, repr(value))].append(f"{name}:{node.lineno} {where}")
    return found


def repeated_defaults(folder: Path) -> dict[tuple[str, str], list[str]]:
    """The pairs of ``folder``'s modules (and below) that are the default in more than one
    signature, with where."""
    everywhere: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(folder.rglob("*.py")):
        name = path.relative_to(folder).as_posix()
        for pair, where in literal_defaults(path, name).items():
            everywhere[pair] += where
    return {pair: where for pair, where in everywhere.items() if len(where) > 1}


def test_a_default_is_written_once() -> None:
    assert len(ALLOWED) <= MAX_REPEATED, f"at most {MAX_REPEATED} repeated defaults may stay"
    repeated = repeated_defaults(PACKAGE)
    new = {f"{p}={v}": where for (p, v), where in repeated.items() if (p, v) not in ALLOWED}
    assert not new, (
        "a literal default written in several signatures: give it one source "
        "(misstep/defaults.py, metrics.DEFAULT_*, a config model, a named constant):\n"
        + "\n".join(f"{pair}: {', '.join(where)}" for pair, where in sorted(new.items()))
    )
    stale = sorted(f"{p}={v}" for p, v in set(ALLOWED) - set(repeated))
    assert not stale, "written once now: remove from ALLOWED in this test:\n" + "\n".join(stale)


def test_the_check_sees_a_repeat(tmp_path: Path) -> None:
    # The check must be able to fail: seed=0 and timeout 5.0 twice are reported; None, False,
    # (), a default that names a constant, and a pair written once are not.
    (tmp_path / "a.py").write_text(
        "def f(x, seed=0, *, timeout_s=5.0, k=None, flat=False, names=()):\n    pass\n"
        "async def g(seed=0, n=-1, level=LEVEL):\n    pass\n",
        encoding="utf-8",
    )
    (tmp_path / "b.py").write_text(
        "h = lambda timeout_s=5.0, k=None, flat=False, names=(), level=LEVEL: 0\n",
        encoding="utf-8",
    )
    assert repeated_defaults(tmp_path) == {
        ("seed", "0"): ["a.py:1 f", "a.py:3 g"],
        ("timeout_s", "5.0"): ["a.py:1 f", "b.py:1 lambda"],
    }
