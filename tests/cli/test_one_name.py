"""One name means one thing across commands: a flag that several commands take means the same
there, or is in ``ALLOWED`` with the reason (issue 35; ``--judge`` used to name a backend in
``label`` and a run directory in ``agree``, which now says ``--labels``).

What a flag means in a command is read off the typer app as ``--help`` shows it: its metavar
(``RUN_DIR``, ``NAME``, ``FILE``) and its type (``path``, ``int``, ``str``, or an enum's set of
choices; a repeatable option's type is its item's, since repeating is no other meaning). Help
texts differ in wording and are not compared. A short alias (``-o``) stands for one long flag
wherever it is given."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import typer.main

from misstep.cli._reference import _commands, _context
from misstep.cli.app import app

Meaning = tuple[str, str]
"""(metavar, type): what a flag takes, as ``--help`` shows it."""

ALLOWED: dict[str, str] = {
    "--format": "how a command writes its result: stdout's format in every command but sample "
    "(table or text for people, json, csv: each command offers the ones its output has), and "
    "in sample the format of the task file it writes to --out (jsonl, csv, labelstudio); both "
    "mean 'the format of what this command writes'",
    "--k": "k, the samples a vote uses: pass@k and maj@k tabled for several k (link, report, "
    "summary: a list) or the one budget at which voting compares ways of voting (one integer)",
    "--out": "where a command writes: a file (report, sample, import-labels), a run directory "
    "(label, export-requests, select) or an output directory (demo, discover), by what the "
    "command makes",
}
"""Flags allowed more than one meaning, with why it is one name still. Meant to stay tiny."""


def _type(param: Any, ctx: Any) -> str:
    shown = param.display_type(ctx).strip("<>")
    if shown.startswith("list[") and shown.endswith("]"):  # repeatable: the item's type
        shown = shown[len("list[") : -1].lower()
    if "|" in shown:  # an enum: its choices, in any order
        shown = "|".join(sorted(shown.split("|")))
    return shown


def flag_meanings() -> tuple[dict[str, dict[Meaning, list[str]]], dict[str, set[str]]]:
    """``flag -> meaning -> commands`` for every long flag of the app, and ``short alias ->
    the long flags it stands for``."""
    root = typer.main.get_command(app)
    meanings: dict[str, dict[Meaning, list[str]]] = defaultdict(lambda: defaultdict(list))
    aliases: dict[str, set[str]] = defaultdict(set)
    for path, cmd in _commands(root, ["misstep"]):
        ctx = _context(path, cmd, root)
        for param in getattr(cmd, "params", []):
            if param.param_type_name != "option":
                continue
            names = param.opts + param.secondary_opts
            longs = [n for n in names if n.startswith("--")]
            meaning = (param.metavar or "", _type(param, ctx))
            for name in longs:
                meanings[name][meaning].append(" ".join(path[1:]))
            for name in names:
                if not name.startswith("--"):
                    aliases[name].update(longs)
    return meanings, aliases


def test_one_flag_means_one_thing() -> None:
    meanings, _ = flag_meanings()
    several = {flag: dict(m) for flag, m in meanings.items() if len(m) > 1}
    new = {flag: m for flag, m in several.items() if flag not in ALLOWED}
    assert not new, (
        "a flag with two meanings in two commands: rename one, or give the reason in ALLOWED:\n"
        + "\n".join(f"{flag}: {m}" for flag, m in sorted(new.items()))
    )
    stale = sorted(set(ALLOWED) - set(several))
    assert not stale, "one meaning now: remove from ALLOWED in this test:\n" + "\n".join(stale)


def test_a_short_alias_stands_for_one_flag() -> None:
    _, aliases = flag_meanings()
    assert aliases, "the app has short aliases (-o): the walk must see them"
    twice = {alias: longs for alias, longs in aliases.items() if len(longs) != 1}
    assert not twice, f"a short alias for several flags: {twice}"


def test_the_walk_sees_each_meaning() -> None:
    # The check must be able to fail: the flags it reads are the app's, with their meanings.
    meanings, aliases = flag_meanings()
    # --judge: a backend's name only; agree names a label run with --labels.
    assert list(meanings["--judge"]) == [("NAME", "str")]
    assert set(meanings["--judge"][("NAME", "str")]) == {"discover", "label", "select"}
    assert list(meanings["--labels"]) == [("RUN_DIR", "path")]  # agree's repeats: no other
    assert ("", "checkpoint|dataset") in meanings["--by"]
    assert len(meanings["--format"]) > 1 and aliases["-o"] == {"--out"}
