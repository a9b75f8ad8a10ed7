"""The CLI reference (docs/cli.md), generated from the typer app so that it cannot drift.

Regenerate with ``python -m misstep.cli._reference docs/cli.md``; ``tests/cli/test_reference.py``
fails when the file differs from what this module writes. It walks the command tree of the typer
app (every command and group, every argument and option, hidden ones included) and writes each
with its help text, its type or choices, its default and its bounds, as ``--help`` shows them.
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
import typer.main

from misstep.cli.app import app

REGENERATE = "python -m misstep.cli._reference docs/cli.md"
WIDTH = 100

_HEADER = f"""\
# CLI reference

<!-- Generated from the typer app by `{REGENERATE}`;
     do not edit by hand: tests/cli/test_reference.py fails when this file is stale. -->

Every command and option of `misstep`, with the help text, type (or choices), default and bounds
that `misstep COMMAND --help` prints. Every command also takes `--help`. The pages of this site
explain what the commands compute; this page is the list.
"""


def _escape(text: str) -> str:
    """Markdown-safe text: characters that Markdown would read as markup are escaped, except
    inside backtick code spans, which the help texts use for names."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # the even parts lie outside code spans
        part = parts[i].replace("\\", "\\\\")
        for ch in "*_[]<>|":
            part = part.replace(ch, "\\" + ch)
        parts[i] = part
    if len(parts) % 2 == 0:  # an unpaired backtick: keep it literal
        parts[-2] = parts[-2] + "\\`" + parts.pop()
    return "`".join(parts)


def _wrap(text: str, first: str = "", rest: str = "") -> list[str]:
    """Wrap one paragraph to WIDTH, never breaking a word (a URL stays whole)."""
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )


def _paragraphs(text: str) -> list[str]:
    """The paragraphs of a command's docstring, each joined into one line."""
    text = inspect.cleandoc(text.replace("\b", ""))
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def _commands(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    """Every command of the tree, depth first, each group before its commands."""
    yield path, cmd
    for name in sorted(getattr(cmd, "commands", {})):
        yield from _commands(cmd.commands[name], [*path, name])


def _context(path: list[str], cmd: Any, root: Any) -> Any:
    """A click-style context for `cmd` (needed to render defaults and types); no parsing."""
    ctx = root.context_class(root, info_name=path[0])
    node = root
    for name in path[1:]:
        node = node.commands[name]
        ctx = node.context_class(node, info_name=name, parent=ctx)
    return ctx


def _option_lines(param: Any, ctx: Any) -> list[str]:
    record = param.get_help_record(ctx)
    if record is None:  # --help leaves hidden options out; the reference lists them
        decl, help_text = ", ".join(param.opts), param.help or ""
        if param.default is not None and not param.is_flag:
            help_text += f" [default: {getattr(param.default, 'value', param.default)}]"
    else:
        decl, help_text = record
    # "[default: x; x>=1; required]" as --help appends it, apart from the text itself.
    extras = ""
    m = re.search(r"\s*\[([^\[\]]*)\]\s*$", help_text)
    if m and any(k in m.group(1) for k in ("default:", "required", "x>", "x<", "env var:")):
        extras, help_text = m.group(1), help_text[: m.start()]
    facts = []
    if param.is_flag:
        facts.append("flag")
    if param.multiple:
        facts.append("repeatable")
    if extras:
        facts.append(extras)
    if param.hidden:
        facts.append("hidden")
    head = f"- `{decl}`" + (f" ({_escape('; '.join(facts))})" if facts else "")
    body = _escape(" ".join(help_text.split()))
    return _wrap(f"{head}: {body}" if body else head, rest="  ")


def _argument_lines(param: Any, ctx: Any) -> list[str]:
    name = param.metavar or param.name.upper()
    kind = param.display_type(ctx).strip("<>")
    facts = [kind, "required" if param.required else "optional"]
    if param.multiple or (param.nargs is not None and param.nargs != 1):
        facts.append("one or more")
    head = f"- `{name}` ({_escape('; '.join(facts))})"
    body = _escape(" ".join((param.help or "").split()))
    return _wrap(f"{head}: {body}" if body else head, rest="  ")


def render(application: typer.Typer = app) -> str:
    """The whole reference as Markdown, lines at most WIDTH characters where words allow."""
    root = typer.main.get_command(application)
    lines = [_HEADER]
    for path, cmd in _commands(root, ["misstep"]):
        ctx = _context(path, cmd, root)
        name = " ".join(path)
        lines.append(f"## `{name}`\n")
        if cmd.help:
            for para in _paragraphs(cmd.help):
                lines.extend(_wrap(_escape(para)))
                lines.append("")
        # typer writes an argument as {name}; the reference names it as its metavar, upper case.
        pieces = re.sub(
            r"\{(\w+)\}", lambda m: m.group(1).upper(), " ".join(cmd.collect_usage_pieces(ctx))
        )
        lines.append("```text")
        lines.append(f"{name} {pieces}".rstrip())
        lines.append("```\n")
        if getattr(cmd, "commands", None):
            lines.append("Commands:\n")
            for sub in sorted(cmd.commands):
                sub_help = cmd.commands[sub].help or ""
                short = (_paragraphs(sub_help) or [""])[0]
                anchor = "misstep-" + "-".join([*path[1:], sub])
                lines.extend(_wrap(f"- [`{sub}`](#{anchor}): {_escape(short)}", rest="  "))
            lines.append("")
        arguments = [p for p in cmd.params if p.param_type_name == "argument"]
        options = [p for p in cmd.params if p.param_type_name == "option"]
        if arguments:
            lines.append("Arguments:\n")
            for p in arguments:
                lines.extend(_argument_lines(p, ctx))
            lines.append("")
        if options:
            lines.append("Options:\n")
            for p in options:
                lines.extend(_option_lines(p, ctx))
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the reference to the path given (``-`` or nothing: stdout)."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if not args or args[0] == "-":
        sys.stdout.write(text)
    else:
        Path(args[0]).write_text(text, encoding="utf-8")
        sys.stderr.write(f"wrote {args[0]}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
