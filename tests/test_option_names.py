"""Domain code names fields, only ``cli/`` names flags: no ``OptionError`` outside ``cli/``
names an option starting with ``--``. ``cli._errors.flag_of`` (``FIELD_FLAGS``) turns a field
into its flag where a command reports the error, so a Python caller reads ``overlap=1.5`` and
a person at the command line ``--overlap=1.5``.

Checked on the source text (ast), outside ``cli/``: the ``option=`` of every call (an
``OptionError``, or a helper that passes its ``option`` on to one) and the default of every
parameter named ``option``, where either is a string or an f-string that starts with ``--``;
and every positional argument that is a flag and nothing else (``named(names,
"--annotators")``; a sentence that mentions a flag, as a note does, is not an option)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "misstep"

FLAG = re.compile(r"--[a-z][a-z0-9-]*(/--[a-z][a-z0-9-]*)*")
"""A string that is a flag (or two, ``--host/--port``) and nothing else."""

# Meant to stay empty: a domain error that must name a flag maps its field in FIELD_FLAGS.
ALLOWED: set[str] = set()


def _text(node: ast.expr | None) -> str | None:
    """The literal text of a string or the literal start of an f-string, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def flags_named(path: Path) -> list[str]:
    """``line: flag`` for each option named as a flag in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        texts: list[tuple[int, str | None]] = []
        if isinstance(node, ast.Call):
            texts = [(node.lineno, _text(kw.value)) for kw in node.keywords if kw.arg == "option"]
            texts += [
                (node.lineno, text)
                for text in map(_text, node.args)
                if text is not None and FLAG.fullmatch(text)
            ]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = args.posonlyargs + args.args
            with_default = positional[len(positional) - len(args.defaults) :]
            pairs = list(zip(with_default, args.defaults, strict=True))
            pairs += list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
            texts = [(node.lineno, _text(d)) for a, d in pairs if a.arg == "option"]
        found += [f"{line}: {text}" for line, text in texts if text and text.startswith("--")]
    return sorted(found, key=lambda hit: int(hit.split(":")[0]))


def test_domain_errors_name_fields_not_flags() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name.startswith("cli/"):
            continue
        offenders.update({f"{name}:{hit}": hit for hit in flags_named(path)})
    new = sorted(set(offenders) - ALLOWED)
    assert not new, (
        "domain code names a flag; name the field (cli._errors.FIELD_FLAGS maps it when "
        "its flag is not the field with dashes):\n" + "\n".join(new)
    )
    stale = sorted(ALLOWED - set(offenders))
    assert not stale, "names a field now: remove from ALLOWED in this test:\n" + "\n".join(stale)


def test_the_check_sees_a_flag(tmp_path: Path) -> None:
    # The check must be able to fail: a flag in an error, a flag as a helper's default, an
    # f-string flag; a field name and a flag-looking value are not reported.
    module = tmp_path / "m.py"
    module.write_text(
        "def f(x, option='--labels'):\n"
        "    raise OptionError(option='--overlap', value=x, allowed='a share')\n"
        "def g(x):\n"
        "    raise OptionError(option=f'--{x}', value='--y', allowed='--z')\n"
        "def h(x, option='labels'):\n"
        "    raise OptionError(option='overlap', value=x, allowed='with --annotators')\n"
        "def i(names):\n"
        "    check(names, '--annotators')\n"
        "    notes.append('--k given twice')\n",
        encoding="utf-8",
    )
    assert flags_named(module) == ["1: --labels", "2: --overlap", "4: --", "8: --annotators"]


def test_every_field_flag_is_a_flag() -> None:
    # The mapping itself: every field named there becomes a flag of the CLI.
    from misstep.cli._errors import FIELD_FLAGS, flag_of

    assert all(flag.startswith("--") for flag in FIELD_FLAGS.values())
    assert flag_of("address") == "--host/--port" and flag_of("overlap") == "--overlap"
    assert flag_of("judge name") == "judge name"  # not a field: as it is
