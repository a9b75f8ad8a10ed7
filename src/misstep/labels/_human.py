"""People's labels of traces: ``HumanLabel``, the one record of a person's label whoever made
it, and ``read_human_labels``, the one reader of people's labels whatever wrote them (the
shared human-labels JSONL or CSV, a filled-in ``misstep sample`` task, a Label Studio JSON
export, ``misstep import-labels``, the review app's ``RUN_DIR/human/<annotator>.jsonl``).
``labels/_people.py`` writes them."""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from misstep.errors import InputFormatError, InvalidRecordError
from misstep.labels._design import read_task_design, sampling_weight, task_sidecar
from misstep.labels._latest import label_time
from misstep.rollouts import RowError, iter_json_lines, open_binary
from misstep.taxonomy import CANT_TELL as TAXONOMY_CANT_TELL

__all__ = [
    "ADJUDICATOR",
    "CANT_TELL",
    "HUMAN_LABEL_VERSION",
    "NO_ERROR_CHOICE",
    "HumanLabel",
    "Verdict",
    "human_label_from_row",
    "read_human_labels",
]

HUMAN_LABEL_VERSION = 1
"""Version of the ``HumanLabel`` line format."""
NO_ERROR_CHOICE = "no_error"
"""The answer "this trace has no error" in a task (error_type None, has_error False)."""
CANT_TELL = TAXONOMY_CANT_TELL
"""The choice "I can't tell" (``misstep review``): stored as error_type, first_error_step and
has_error all null, with ``verdict`` ``cant_tell``; it supersedes the person's earlier label of
the trace and takes part in no agreement figure."""
ADJUDICATOR = "adjudicator"
"""The role of a label that settles people's disagreement on a trace (``misstep review
--adjudicate``): ``human_consensus`` takes it as the trace's human label, agreement figures
leave it out."""


Verdict = Literal["error", "no_error", "cant_tell"]
"""A person's answer in ``misstep review``: an error (of a type), no error, or can't tell."""


class HumanLabel(BaseModel):
    """One person's label of one trace: a line of ``../shared/data/*/human_labels.jsonl``, of
    ``misstep import-labels``' output and of the review app's ``RUN_DIR/human/<annotator>.jsonl``
    (whoever wrote it, the fields that do not apply are absent). Written by
    ``write_human_labels`` and ``HumanLabelWriter`` (``human_label_line``: None fields left out),
    read by ``read_human_labels``."""

    model_config = ConfigDict(extra="ignore")

    version: int = HUMAN_LABEL_VERSION
    """Record format version."""
    trace_id: str
    """The labelled trace."""
    annotator: str
    """Who labelled it; several annotators may share one file (the review app keeps one file
    per annotator, named after them)."""
    error_type: str | None = None
    """A taxonomy key, or None for no error, an untyped label or "can't tell" (see
    ``has_error`` and ``verdict``)."""
    first_error_step: int | None = None
    """0-based index of the first wrong step (into ``split_steps`` of the trace); None when
    there is none or it was not given."""
    has_error: bool | None = None
    """Whether the trace has an error at all (None: "can't tell", or not said)."""
    raw_label: str | None = None
    """The annotator's own words, when kept."""
    verdict: Verdict | None = None
    """``error``, ``no_error`` or ``cant_tell`` (the review app's labels; None elsewhere)."""
    note: str | None = None
    """The person's note (review app)."""
    blind: bool | None = None
    """The judge's label had not been shown to this annotator for this trace when the label
    was given (review app, ``--blind``; a recorded reveal makes every later label ``false``);
    None: not recorded."""
    judge: str | None = None
    """Id of the judge configuration whose label the trace had, shown or not (review app)."""
    weight: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    """Sampling weight (finite, above 0): the inverse inclusion probability of the trace in
    the sample it was drawn in (``misstep sample``'s task, the review queue's stratified draw);
    1 outside one."""
    role: Literal["annotator", "adjudicator"] = "annotator"
    """``annotator``: one person's own reading; ``adjudicator``: the decision that settles
    the annotators' disagreement on the trace (``misstep review --adjudicate``), which
    ``human_consensus`` takes as its human label."""
    mapping_method: str | None = None
    """Where the label comes from, or how ``error_type`` was mapped from the source's labels
    (``misstep review`` for the review app's)."""
    created_at: str | None = None
    """When it was given, ISO 8601 (the review app writes UTC to the millisecond; without an
    offset it is read as UTC). Of two labels of a trace the later one wins
    (``labels/_latest.py``: a label without it is earlier than every label with one)."""

    @field_validator("created_at")
    @classmethod
    def _iso_time(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                label_time(value)
            except ValueError:
                raise ValueError(
                    "not an ISO 8601 time (e.g. 2025-01-31T12:00:00.000+00:00)"
                ) from None
        return value


_REQUIRED = ("trace_id", "annotator")
_BOOL_TEXT = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}


def read_human_labels(
    path: str | Path, *, keys: Collection[str] | None = None, sidecar: str | Path | None = None
) -> list[HumanLabel]:
    """All people's labels of a file: JSONL (``.gz`` or not), CSV, or a Label Studio JSON
    export (``.json``).

    The weights of a ``misstep sample`` task come from its sidecar (``labels/_design.py``):
    ``sidecar``, else ``<file name>.judge.jsonl`` beside the file when there is one; a label
    of a trace the sidecar does not hold is an error there. Without one, a row's own
    ``weight`` (tasks written before the sidecar held it), else 1.

    Fields: ``trace_id`` and ``annotator`` (required), ``error_type`` (empty is None;
    ``no_error`` means has_error False), ``first_error_step``, ``has_error`` (true/false,
    1/0 or yes/no), ``weight`` (default 1), ``raw_label``, ``mapping_method``; other fields
    (a task's problem and steps) are ignored. A row nobody labelled yet (no error_type,
    first_error_step nor has_error) is skipped; a row with a type or step and no has_error
    has an error. With ``keys`` (the run's taxonomy) an error_type outside them is an error.
    A bad row raises :class:`InvalidRecordError` naming file, line (task number for Label
    Studio), field, value and what is allowed.
    """
    p = Path(path)
    if not p.is_file():
        raise InputFormatError(path=p, reason="no such file")
    allowed = None if keys is None else list(keys)
    name = p.name.lower().removesuffix(".gz")
    if name.endswith(".json"):
        rows: Iterator[tuple[int, dict[str, Any]]] = _labelstudio_rows(p)
    elif name.endswith(".csv"):
        rows = iter(_csv_rows(p))
    else:
        rows = _jsonl_rows(p)
    side = Path(sidecar) if sidecar is not None else task_sidecar(p)
    design = read_task_design(side) if sidecar is not None or side.is_file() else None
    labels: list[HumanLabel] = []
    for line, row in rows:
        label = _labelled_row(p, line, row, allowed)
        if label is None:
            continue
        if design is not None:
            found = design.get(label.trace_id)
            if found is None:
                raise InvalidRecordError(
                    path=p,
                    line=line,
                    field="trace_id",
                    value=label.trace_id,
                    reason=f"not a trace of the task's sidecar {side}",
                    hint="pass the sidecar of the task these labels answer (--sidecar)",
                )
            if found.weight is not None:
                label = label.model_copy(update={"weight": found.weight})
        labels.append(label)
    return labels


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _labelled_row(
    path: Path, line: int, row: Mapping[str, Any], keys: list[str] | None
) -> HumanLabel | None:
    """One row as a label, None for a row nobody labelled yet."""
    if _blank(row.get("trace_id")):
        _required(path, line, row, "trace_id")
    # "Can't tell" (from `misstep review`) holds no type, step or flag, yet it is a label: it
    # supersedes the person's earlier label of the trace and rates nothing.
    if row.get("verdict") != CANT_TELL and all(
        _blank(row.get(k)) for k in ("error_type", "first_error_step", "has_error")
    ):
        return None
    fixed = {k: (None if _blank(v) else v) for k, v in row.items()}
    if fixed.get("error_type") == NO_ERROR_CHOICE:
        fixed["error_type"] = None
        if fixed.get("has_error") is None:
            fixed["has_error"] = False
    error_type = fixed.get("error_type")
    if keys is not None and error_type is not None and error_type not in keys:
        raise InvalidRecordError(
            path=path,
            line=line,
            field="error_type",
            value=error_type,
            reason="not a key of the run's taxonomy; allowed: "
            + ", ".join([*keys, NO_ERROR_CHOICE]),
            hint="use one of the taxonomy's keys (or pass the taxonomy the run was labelled with)",
        )
    flag = fixed.get("has_error")
    if isinstance(flag, str):
        parsed = _BOOL_TEXT.get(flag.strip().lower())
        if parsed is None:
            raise InvalidRecordError(
                path=path,
                line=line,
                field="has_error",
                value=flag,
                reason="must be true/false, 1/0 or yes/no",
            )
        fixed["has_error"] = parsed
    if fixed.get("has_error") is None and (
        error_type is not None or fixed.get("first_error_step") is not None
    ):
        fixed["has_error"] = True
    return human_label_from_row(path, line, {k: v for k, v in fixed.items() if v is not None})


def _required(path: Path, line: int, row: Mapping[str, Any], name: str) -> None:
    value = row.get(name)
    raise InvalidRecordError(
        path=path,
        line=line,
        field=name,
        value=value if value is not None else None,
        reason="required field is missing" if value is None else "required field is empty",
    )


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, raw, row in iter_json_lines(path):
        if isinstance(row, RowError):
            if not raw.endswith(b"\n"):
                # A last line cut mid-write (a full disk, a kill): its write failed, so it was
                # never acknowledged; the next append repairs the file (labels/_tail.py), and
                # until then every reader reads the whole lines before it.
                continue
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            raise InvalidRecordError(path=path, line=line, reason=row.reason, value=text)
        yield line, row


def _labelstudio_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """A Label Studio JSON export as rows, one per (task, annotation); the line is the
    task's number."""
    try:
        tasks = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputFormatError(path=path, reason=f"not JSON: {exc}") from None
    if not isinstance(tasks, list):
        raise InputFormatError(
            path=path,
            reason="a Label Studio export is a JSON list of tasks",
            hint="export the project from Label Studio as JSON (not JSON-MIN)",
        )
    for number, task in enumerate(tasks, start=1):
        data = task.get("data", {}) if isinstance(task, dict) else {}
        if not isinstance(data, dict) or _blank(data.get("trace_id")):
            raise InvalidRecordError(
                path=path, line=number, field="data.trace_id", reason="task without a trace_id"
            )
        for annotation in task.get("annotations", []) or []:
            if annotation.get("was_cancelled"):
                continue
            who = annotation.get("completed_by")
            if isinstance(who, dict):
                who = who.get("email") or who.get("id")
            row: dict[str, Any] = {
                "trace_id": data["trace_id"],
                "annotator": None if who is None else f"labelstudio:{who}",
            }
            if "weight" in data:  # tasks written before the weights moved to the sidecar
                row["weight"] = data["weight"]
            for result in annotation.get("result", []) or []:
                value = result.get("value", {})
                if result.get("from_name") == "error_type" and value.get("choices"):
                    row["error_type"] = value["choices"][0]
                elif result.get("from_name") == "first_error_step" and "number" in value:
                    row["first_error_step"] = value["number"]
            yield number, row


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
    if "weight" in fixed:
        fixed["weight"] = sampling_weight(fixed["weight"], path=path, line=line)
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
    if label.first_error_step is not None and label.first_error_step < 0:
        raise InvalidRecordError(
            path=path,
            line=line,
            field="first_error_step",
            value=label.first_error_step,
            reason="must be a 0-based step index (>= 0) or empty",
        )
    return label
