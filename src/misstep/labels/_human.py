"""People's labels of traces: the ``HumanLabel`` shape and ``read_human_labels`` (JSONL or CSV)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from misstep.errors import InputFormatError, InvalidRecordError
from misstep.rollouts._formats import open_binary
from misstep.rollouts._readers import iter_json_lines
from misstep.rollouts._rowmap import RowError

__all__ = ["HumanLabel", "human_label_from_row", "read_human_labels"]


class HumanLabel(BaseModel):
    """One person's label of one trace, as in ``../shared/data/*/human_labels.jsonl``."""

    model_config = ConfigDict(extra="ignore")

    trace_id: str
    """The labelled trace."""
    annotator: str
    """Who labelled it; several annotators may share one file."""
    error_type: str | None = None
    """A taxonomy key, or None for no error or an untyped label (see ``has_error``)."""
    first_error_step: int | None = None
    """0-based index of the first wrong step; None when there is none."""
    has_error: bool | None = None
    """Whether the trace has an error at all."""
    raw_label: str | None = None
    """The annotator's own words, when kept."""
    mapping_method: str | None = None
    """How ``error_type`` was mapped from the source's labels."""
    weight: float = 1.0
    """Sampling weight carried from ``misstep sample`` (inverse inclusion probability)."""


_REQUIRED = ("trace_id", "annotator")
_BOOL_TEXT = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}


def read_human_labels(path: str | Path) -> list[HumanLabel]:
    """All labels of a ``human_labels`` file (JSONL, ``.gz`` or not, or CSV).

    Fields: ``trace_id`` and ``annotator`` (required), ``error_type`` (an empty string is
    None), ``first_error_step``, ``has_error``, ``weight`` (default 1), ``raw_label``,
    ``mapping_method``. A bad row raises :class:`InvalidRecordError` with file, line, field.
    """
    p = Path(path)
    if not p.is_file():
        raise InputFormatError(path=p, reason="no such file")
    name = p.name.lower().removesuffix(".gz")
    labels: list[HumanLabel] = []
    if name.endswith(".csv"):
        for line, row in _csv_rows(p):
            labels.append(human_label_from_row(p, line, row))
        return labels
    for line, raw, row in iter_json_lines(p):
        if isinstance(row, RowError):
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            raise InvalidRecordError(path=p, line=line, reason=row.reason, value=text)
        labels.append(human_label_from_row(p, line, row))
    return labels


def _csv_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    with io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", newline="") as text:
        reader = csv.reader(text)
        header = next(reader, None)
        if header is None:
            return rows
        last = reader.line_num
        for cells in reader:
            line, last = last + 1, reader.line_num
            if not cells:
                continue
            if len(cells) != len(header):
                raise InvalidRecordError(
                    path=path,
                    line=line,
                    reason=f"{len(cells)} cells where the header has {len(header)}",
                )
            row: dict[str, Any] = {}
            for key, cell in zip(header, cells, strict=True):
                if cell == "" and key != "error_type":
                    continue  # empty cell = missing
                row[key] = cell
            if "has_error" in row:
                flag = _BOOL_TEXT.get(str(row["has_error"]).strip().lower())
                if flag is None:
                    raise InvalidRecordError(
                        path=path,
                        line=line,
                        field="has_error",
                        value=row["has_error"],
                        reason="must be true/false, 1/0 or yes/no",
                    )
                row["has_error"] = flag
            rows.append((line, row))
    return rows


def human_label_from_row(path: str | Path, line: int, row: dict[str, Any]) -> HumanLabel:
    """Validate one row of a human-labels file; errors name ``path``, ``line`` and the field."""
    for name in _REQUIRED:
        value = row.get(name)
        if value is None:
            raise InvalidRecordError(
                path=path, line=line, field=name, reason="required field is missing"
            )
        if isinstance(value, str) and not value.strip():
            raise InvalidRecordError(
                path=path, line=line, field=name, value=value, reason="required field is empty"
            )
    fixed = dict(row)
    if fixed.get("error_type") == "":
        fixed["error_type"] = None
    raw_label = fixed.get("raw_label")
    # ProcessBench keeps its label as a number (the step index): keep it as text.
    if isinstance(raw_label, int | float) and not isinstance(raw_label, bool):
        fixed["raw_label"] = str(raw_label)
    if fixed.get("weight", 1.0) is None:
        del fixed["weight"]
    try:
        label = HumanLabel.model_validate(fixed)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        field = str(err["loc"][0]) if err["loc"] else None
        raise InvalidRecordError(
            path=path,
            line=line,
            field=field,
            value=row.get(field) if field else None,
            reason=str(err["msg"]),
        ) from None
    if not (math.isfinite(label.weight) and label.weight > 0):
        raise InvalidRecordError(
            path=path,
            line=line,
            field="weight",
            value=row.get("weight"),
            reason="must be a positive finite number",
        )
    if label.first_error_step is not None and label.first_error_step < 0:
        raise InvalidRecordError(
            path=path,
            line=line,
            field="first_error_step",
            value=label.first_error_step,
            reason="must be a 0-based step index (>= 0) or empty",
        )
    return label
