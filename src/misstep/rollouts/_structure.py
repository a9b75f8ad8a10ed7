"""Answers made of elements (tuples, intervals, sets, lists, systems of equations), read into a
skeleton and its atoms without math-verify, so that grading compares them element by element.

``parse_structure(body)`` reads a normalised answer (a canonical key's text) such as
``(\\frac{1}{3},-2,5)``, ``[0,3)``, ``\\{1,2\\}``, ``1,2,5,8,9``, ``(1,1),(3,3)`` or
``a=\\frac{2}{5},b=10``: its top-level elements are separated by commas or semicolons (as
math-verify reads both); an element is a group (``(...)``, ``[...]`` with any closing bracket,
``\\{...\\}``) holding two or more elements, or an atom, or an equation of atoms. The
``skeleton`` is the text with every atom replaced by ``#`` (and ``;`` by ``,``); the atoms are
left to the caller to value. It returns None for anything else: one element only, a set of one
element (math-verify compares ``\\{5\\}`` with ``5``), an empty element, unbalanced brackets,
unions, ``\\pm``, or an atom holding a bracket that opens a group of several elements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Interval", "Structure", "parse_structure", "parse_union"]

_MAX_ATOMS = 64
_OPENERS = ("\\{", "(", "[", "{")
_CLOSERS = ("\\}", ")", "]", "}")
# Forms whose meaning math-verify gives by rules of its own (unions simplify, ± expands, sets
# are written by comprehension): left to math-verify.
_OPERATORS = r"cap|pm|mp|mid|in|notin|setminus|leq?|geq?|neq?|lt|gt|to"
_UNSUPPORTED = re.compile(rf"\\(?:cup|{_OPERATORS})(?![a-zA-Z])|[±|<>%]")


@dataclass(frozen=True, slots=True)
class Structure:
    """An answer read as elements."""

    skeleton: str
    """The answer with each atom replaced by ``#``: two answers with the same skeleton have
    the same shape (``(#,#]``, ``#,#,#``, ``#=#,#=#``)."""
    atoms: tuple[str, ...]
    """The atoms' texts, in order."""
    flat: bool
    """A list or a set of atoms (no nested group, no equation): math-verify compares it as a
    set, in any order."""


def _token_at(text: str, i: int, tokens: tuple[str, ...]) -> str | None:
    for token in tokens:
        if text.startswith(token, i):
            return token
    return None


def _split_top(text: str, separators: tuple[str, ...] = (",", ";")) -> list[str] | None:
    """``text`` split at its top-level separators (commas and semicolons by default; brackets
    of any kind nest), or None when its brackets do not balance."""
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(text):
        opener = _token_at(text, i, _OPENERS)
        if opener is not None:
            depth += 1
            i += len(opener)
            continue
        closer = _token_at(text, i, _CLOSERS)
        if closer is not None:
            depth -= 1
            if depth < 0:
                return None
            i += len(closer)
            continue
        separator = _token_at(text, i, separators) if depth == 0 else None
        if separator is not None:
            parts.append(text[start:i])
            i += len(separator)
            start = i
            continue
        i += 1
    if depth != 0:
        return None
    parts.append(text[start:])
    return parts


def _group(element: str) -> tuple[str, str, str] | None:
    """(opener, inside, closer) when the whole element is one bracketed group."""
    opener = _token_at(element, 0, _OPENERS[:3])
    if opener is None:
        return None
    depth = 0
    i = 0
    while i < len(element):
        token = _token_at(element, i, _OPENERS)
        if token is not None:
            depth += 1
            i += len(token)
            continue
        token = _token_at(element, i, _CLOSERS)
        if token is not None:
            depth -= 1
            i += len(token)
            if depth == 0:
                if i != len(element) or token == "}":
                    return None
                return opener, element[len(opener) : i - len(token)], token
            continue
        i += 1
    return None


class _Reader:
    def __init__(self) -> None:
        self.atoms: list[str] = []
        self.nested = False
        self.equation = False

    def elements(self, parts: list[str]) -> str | None:
        out: list[str] = []
        for part in parts:
            skeleton = self.element(part)
            if skeleton is None:
                return None
            out.append(skeleton)
        return ",".join(out)

    def element(self, text: str) -> str | None:
        if not text:
            return None
        group = _group(text)
        if group is not None:
            opener, inside, closer = group
            parts = _split_top(inside)
            if parts is None:
                return None
            if len(parts) >= 2 or opener == "\\{":
                if len(parts) < 2:
                    return None  # {5} is 5 to math-verify
                self.nested = True
                inner = self.elements(parts)
                return None if inner is None else opener + inner + closer
        if "=" in text:
            self.equation = True
            sides = [self.atom(side) for side in text.split("=")]
            return None if None in sides else "=".join(s for s in sides if s is not None)
        return self.atom(text)

    def atom(self, text: str) -> str | None:
        if not text or "\\{" in text or len(self.atoms) >= _MAX_ATOMS:
            return None
        self.atoms.append(text)
        return "#"


def parse_structure(body: str) -> Structure | None:
    """The answer's skeleton and atoms (module docstring), or None."""
    if _UNSUPPORTED.search(body):
        return None
    parts = _split_top(body)
    if parts is None:
        return None
    reader = _Reader()
    if len(parts) == 1:
        group = _group(body)
        if group is None:
            return None
        skeleton = reader.element(body)
        if skeleton is None or not reader.nested:
            return None
    else:
        skeleton = reader.elements(parts)
    if skeleton is None:
        return None
    hashes = ",".join("#" * len(reader.atoms))
    flat = not reader.equation and skeleton in (hashes, "\\{" + hashes + "\\}")
    return Structure(skeleton, tuple(reader.atoms), flat)


@dataclass(frozen=True, slots=True)
class Interval:
    """One interval of a union, as written."""

    low: str
    """Its left endpoint's text."""
    high: str
    """Its right endpoint's text."""
    low_closed: bool
    """Whether it opens with ``[``."""
    high_closed: bool
    """Whether it closes with ``]``."""


_UNION = "\\cup"
# Inside a union only intervals of plain endpoints are read; anything else is math-verify's.
_NOT_IN_UNION = re.compile(rf"\\(?:mathbb|{_OPERATORS})(?![a-zA-Z])|[±|<>%=]")


def parse_union(body: str) -> tuple[Interval, ...] | None:
    """The intervals of a union of intervals (``(-\\infty,5)\\cup(5,\\infty)``,
    ``[0,1]\\cup(2,3)``), or None for anything else (no top-level ``\\cup``, a set, a tuple
    of three, a comma inside an endpoint). math-verify reads it as a sympy ``Union``: a set."""
    if _UNION not in body or _NOT_IN_UNION.search(body):
        return None
    parts = _split_top(body, (_UNION,))
    if parts is None or len(parts) < 2 or len(parts) > _MAX_ATOMS:
        return None
    out: list[Interval] = []
    for part in parts:
        group = _group(part)
        if group is None:
            return None
        opener, inside, closer = group
        ends = _split_top(inside)
        if opener not in "([" or closer not in ")]" or ends is None or len(ends) != 2:
            return None
        low, high = ends
        if not low or not high or _UNION in inside:
            return None
        out.append(Interval(low, high, opener == "[", closer == "]"))
    return tuple(out)
