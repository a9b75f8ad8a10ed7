"""How a source is read: its format, the fields its paths carry, and where its columns go.

:class:`ReadSpec` is the one description of a reading that every layer passes on: the CLI
builds it from ``--input-format``, ``--path-fields`` and ``--map``; ``read_traces`` and
``load_graded`` take it (or its text form, :meth:`ReadSpec.text`, which is what a label run's
manifest and the graded-table cache record: a bare format name when only the format is given,
so that runs recorded before these options read the same).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "MAP_FIELDS",
    "MISSING",
    "PATH_FIELDS",
    "PathTemplate",
    "ReadSpec",
    "lookup",
    "parse_column_map",
]

# Trace fields a column can be mapped onto (``--map FIELD=COLUMN``).
MAP_FIELDS = (
    "problem_id",
    "response",
    "checkpoint",
    "step",
    "dataset",
    "sample_idx",
    "trace_id",
    "problem",
    "gold_answer",
    "pred_answer",
    "harness_answer",
    "correct",
    "finish_reason",
    "num_tokens",
    "model",
)
# Trace fields a path can carry (``--path-fields``); any other name goes to ``extra``.
PATH_FIELDS = ("checkpoint", "dataset", "model", "step", "sample_idx")
_INT_PATH_FIELDS = frozenset({"step", "sample_idx"})
# Fields of a trace's content: never taken from a path.
_NOT_FROM_PATH = frozenset(MAP_FIELDS) - frozenset(PATH_FIELDS)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


class _Missing:
    """The value of a column a row does not hold (distinct from a JSON null)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def lookup(row: Mapping[str, Any], column: str) -> Any:
    """The value of ``column`` in ``row``: a key, or a dotted path into nested objects and
    lists (``doc.answer``, ``resps.0``); :data:`MISSING` where the row does not hold it. A
    key that contains dots itself is found first."""
    if column in row:
        return row[column]
    value: Any = row
    for part in column.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif (
            isinstance(value, list)
            and part.lstrip("-").isdigit()
            and -len(value) <= int(part) < len(value)
        ):
            value = value[int(part)]
        else:
            return MISSING
    return value


def parse_column_map(text: str | None) -> dict[str, str]:
    """``FIELD=COLUMN,FIELD=COLUMN`` as a dict; ValueError saying what is wrong."""
    if text is None or not text.strip():
        return {}
    out: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        field, sep, column = item.partition("=")
        field, column = field.strip(), column.strip()
        if not sep or not field or not column:
            raise ValueError(f"{item.strip()!r} is not FIELD=COLUMN")
        if field in out:
            raise ValueError(f"{field!r} is mapped twice")
        out[field] = column
    return out


class PathTemplate:
    """A ``--path-fields`` template, matched against the last segments of a file's path.

    Segments are separated by ``/``; in a segment ``{name}`` takes a field's value, ``*``
    matches anything, and other text must be there as written. ``{checkpoint}/math_eval/
    {dataset}/*`` on ``out/qwen-7b/math_eval/gsm8k/test.jsonl`` gives checkpoint ``qwen-7b``
    and dataset ``gsm8k``.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        segments = [s for s in text.strip().strip("/").split("/")]
        if not segments or any(not s for s in segments):
            raise ValueError("a template of path segments separated by '/', e.g. {dataset}/*")
        self.names: list[str] = []
        self._patterns = [self._segment(s) for s in segments]

    def _segment(self, segment: str) -> re.Pattern[str]:
        if segment == "**":
            raise ValueError("'**' is not allowed: '*' stands for one path segment")
        out = []
        pos = 0
        for match in _PLACEHOLDER.finditer(segment):
            out.append(_literal(segment[pos : match.start()]))
            name = match.group(1).strip()
            if not _NAME.fullmatch(name):
                raise ValueError(f"{{{name}}} is not a field name")
            if name in self.names:
                raise ValueError(f"{{{name}}} appears twice")
            if name in _NOT_FROM_PATH:
                raise ValueError(
                    f"{{{name}}} is a trace's content, not something a path can carry "
                    f"(fields a path can carry: {', '.join(PATH_FIELDS)}; other names go to "
                    "extra)"
                )
            self.names.append(name)
            out.append(f"(?P<{name}>.+?)")
            pos = match.end()
        out.append(_literal(segment[pos:]))
        pattern = "".join(out)
        if "{" in segment[pos:] or "}" in segment[pos:]:
            raise ValueError(f"unbalanced braces in {segment!r}")
        return re.compile(pattern)

    def match(self, path: Path) -> dict[str, Any] | None:
        """The fields ``path`` carries, or None when its last segments do not match."""
        parts = path.parts
        n = len(self._patterns)
        if len(parts) < n:
            return None
        fields: dict[str, Any] = {}
        for pattern, part in zip(self._patterns, parts[-n:], strict=True):
            found = pattern.fullmatch(part)
            if found is None:
                return None
            fields.update(found.groupdict())
        for name in _INT_PATH_FIELDS & fields.keys():
            digits = re.search(r"\d+$", fields[name])
            if digits is None:
                return None  # {step} must end in digits: global_step_400, checkpoint-400
            fields[name] = int(digits.group())
        return fields


def _literal(text: str) -> str:
    if "{" in text or "}" in text:
        raise ValueError(f"unbalanced braces in {text!r}")
    return ".*".join(re.escape(piece) for piece in text.split("*"))


class ReadSpec(BaseModel):
    """How one source is read. Built once (the CLI builds it from its options), passed to
    ``read_traces`` and ``load_graded`` whole or as its :meth:`text`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str | None = None
    """The format's name (``misstep.rollouts.INPUT_FORMATS``); None: recognised from the
    path's suffix and the first row's fields."""
    path_fields: str | None = None
    """A template of the last segments of each file's path whose ``{field}`` parts become
    the traces' fields, e.g. ``{checkpoint}/math_eval/{dataset}/*``; they win over the same
    fields in the rows."""
    columns: dict[str, str] = Field(default_factory=dict)
    """Trace field -> the source's column (a key, or a dotted path such as ``doc.answer``).
    For a table format it names the columns that hold misstep's fields; for a harness's
    format it overrides where the harness's reader looks (``response=reasoning``)."""

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from misstep.rollouts._registry import INPUT_FORMATS

        name = value.strip().lower()
        if name not in INPUT_FORMATS:
            allowed = ", ".join(INPUT_FORMATS)
            raise ValueError(f"unknown input format {value!r}: use one of {allowed}")
        return name

    @field_validator("path_fields")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        PathTemplate(value)  # raises ValueError saying what is wrong
        return value.strip()

    @model_validator(mode="after")
    def _known_columns(self) -> ReadSpec:
        from misstep.rollouts._registry import reader_options

        extra = reader_options(self.format)
        for field, column in self.columns.items():
            if field not in MAP_FIELDS and field not in extra:
                allowed = ", ".join([*MAP_FIELDS, *extra])
                raise ValueError(f"{field!r} is not a field misstep reads (fields: {allowed})")
            if not column.strip():
                raise ValueError(f"{field}= names no column")
        return self

    @cached_property
    def template(self) -> PathTemplate | None:
        """The compiled ``path_fields``."""
        return PathTemplate(self.path_fields) if self.path_fields else None

    def text(self) -> str | None:
        """The stored form: the format's name alone (or None) when nothing else is set, else
        the spec as sorted JSON. :meth:`of` reads both back."""
        if self.path_fields is None and not self.columns:
            return self.format
        data = self.model_dump(exclude_defaults=True)
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode()

    @classmethod
    def of(cls, value: ReadSpec | str | Mapping[str, Any] | None) -> ReadSpec:
        """A spec from what callers hold: a spec, its :meth:`text`, a format's name, a dict (a
        manifest's record) or None (everything recognised)."""
        if value is None:
            return cls()
        if isinstance(value, ReadSpec):
            return value
        if isinstance(value, Mapping):
            return cls.model_validate(value)
        text = value.strip()
        if text.startswith("{"):
            return cls.model_validate_json(text)
        return cls(format=text)
