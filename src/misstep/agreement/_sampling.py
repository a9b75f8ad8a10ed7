"""Choosing what people label: a stratified random sample of judged traces, written as an
annotation task (JSONL, CSV or a Label Studio import with its labelling config), and reading
the people's answers back into :class:`~misstep.rollouts.HumanLabel` rows.

Blind by default: the task file never shows the judge's label (people who see it tend to
agree with it); the judge's labels go to a sidecar ``<task file name>.judge.jsonl`` beside it.
Each row's ``weight`` is its inverse inclusion probability within its stratum (N_h / n_h), so
estimates from the labelled sample can be weighted back to the judged population.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from xml.sax.saxutils import quoteattr

import numpy as np
import orjson
from pydantic import BaseModel

from misstep.errors import InputFormatError, InvalidRecordError, OptionError
from misstep.labels import HumanLabel, LabelStatus, StoredLabel, human_label_from_row
from misstep.prompts import split_steps
from misstep.rollouts import Trace, extract_answer

__all__ = [
    "NO_ERROR_CHOICE",
    "STRATA_FIELDS",
    "SampleRow",
    "allocate",
    "labelstudio_config",
    "read_annotations",
    "stratified_sample",
    "write_task",
]

STRATA_FIELDS = ("checkpoint", "dataset", "error_type")
"""Fields a sample can be stratified by (``error_type`` is the judge's)."""
NO_ERROR_CHOICE = "no_error"
"""The annotation choice for "this trace has no error" (error_type None, has_error False)."""

Allocation = Literal["proportional", "equal"]
TaskFormat = Literal["jsonl", "csv", "labelstudio"]


class SampleRow(BaseModel):
    """One sampled trace as a person will label it."""

    trace_id: str
    """The trace."""
    checkpoint: str
    """Its checkpoint."""
    dataset: str
    """Its dataset."""
    problem_id: str
    """Its problem."""
    problem: str
    """Problem statement (empty when unknown)."""
    steps: str
    """The steps, one per line as ``[i] text``, numbered from 0 like the judge saw them."""
    final_answer: str
    """The trace's final answer (empty when none was found)."""
    stratum: str
    """Its stratum, e.g. ``checkpoint=step_400|error_type=arithmetic``."""
    allocation: str
    """How the sample was allocated to strata (``proportional`` or ``equal``)."""
    weight: float
    """Inverse inclusion probability within the stratum: N_h / n_h."""
    judge: str
    """The judge's id (sidecar only)."""
    judge_error_type: str | None
    """The judge's type (sidecar only)."""
    judge_first_error_step: int | None
    """The judge's first error step (sidecar only)."""


_SIDE_FIELDS = ("judge", "judge_error_type", "judge_first_error_step")
_EMPTY_FIELDS = ("error_type", "first_error_step", "annotator")


def allocate(sizes: Sequence[int], n: int, allocation: Allocation) -> list[int]:
    """How many items to draw from each stratum of the given sizes, ``n`` in all (or every
    item when there are fewer). Proportional: n * N_h / N, rounded by largest remainder.
    Equal: n / H each, what a small stratum cannot take going to the others."""
    total = sum(sizes)
    if n >= total:
        return list(sizes)
    if allocation == "proportional":
        exact = [n * s / total for s in sizes]
        take = [math.floor(x) for x in exact]
        order = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - take[i]), i))
        for i in order[: n - sum(take)]:
            take[i] += 1
        return take
    take = [0] * len(sizes)
    left = n
    while left > 0:
        open_ = [i for i, s in enumerate(sizes) if take[i] < s]
        share, extra = divmod(left, len(open_))
        for rank, i in enumerate(open_):
            add = min(share + (1 if rank < extra else 0), sizes[i] - take[i])
            take[i] += add
            left -= add
    return take


def _numbered(steps: list[str]) -> str:
    return "\n".join(f"[{i}] {s}" for i, s in enumerate(steps))


def stratified_sample(
    traces: Iterable[Trace],
    labels: Mapping[str, StoredLabel],
    *,
    n: int,
    stratify: Sequence[str] = ("checkpoint", "error_type"),
    allocation: Allocation = "proportional",
    seed: int = 0,
) -> list[SampleRow]:
    """A stratified random sample (without replacement) of the traces whose current label is
    ``ok``. The same inputs and seed give the same sample, whatever the input order."""
    if n < 1:
        raise OptionError(option="--n", value=n, allowed="a positive number of traces")
    for field in stratify:
        if field not in STRATA_FIELDS:
            raise OptionError(
                option="--stratify", value=field, allowed="fields among " + ", ".join(STRATA_FIELDS)
            )
    if allocation not in ("proportional", "equal"):
        raise OptionError(option="--allocation", value=allocation, allowed="proportional, equal")
    pool: dict[str, list[tuple[Trace, StoredLabel]]] = {}
    for trace in traces:
        label = labels.get(trace.trace_id)
        if label is None or label.status != LabelStatus.OK:
            continue
        values = {
            "checkpoint": trace.checkpoint,
            "dataset": trace.dataset,
            "error_type": label.error_type or "",
        }
        stratum = "|".join(f"{f}={values[f]}" for f in stratify) or "all"
        pool.setdefault(stratum, []).append((trace, label))
    names = sorted(pool)
    for name in names:
        pool[name].sort(key=lambda pair: pair[0].trace_id)
    take = allocate([len(pool[s]) for s in names], n, allocation)
    rng = np.random.default_rng(seed)
    rows: list[SampleRow] = []
    for name, k in zip(names, take, strict=True):
        members = pool[name]
        if k == 0:
            continue
        picked = sorted(rng.choice(len(members), size=k, replace=False).tolist())
        for i in picked:
            trace, label = members[i]
            answer = trace.pred_answer
            if answer is None:
                answer = extract_answer(trace.response).answer
            rows.append(
                SampleRow(
                    trace_id=trace.trace_id,
                    checkpoint=trace.checkpoint,
                    dataset=trace.dataset,
                    problem_id=trace.problem_id,
                    problem=trace.problem or "",
                    steps=_numbered(split_steps(trace)),
                    final_answer=answer or "",
                    stratum=name,
                    allocation=allocation,
                    weight=len(members) / k,
                    judge=label.judge,
                    judge_error_type=label.error_type,
                    judge_first_error_step=label.first_error_step,
                )
            )
    return rows


def _task_row(row: SampleRow) -> dict[str, Any]:
    data = row.model_dump(exclude=set(_SIDE_FIELDS))
    data.update(dict.fromkeys(_EMPTY_FIELDS, ""))
    return data


def labelstudio_config(categories: Sequence[str]) -> str:
    """Label Studio labelling config: the trace, one choice per taxonomy key (and
    ``no_error``), and the first wrong step as a number."""
    choices = "\n".join(
        f"    <Choice value={quoteattr(c)}/>" for c in [*categories, NO_ERROR_CHOICE]
    )
    return f"""<View>
  <Header value="Problem"/>
  <Text name="problem" value="$problem"/>
  <Header value="Final answer"/>
  <Text name="final_answer" value="$final_answer"/>
  <Header value="Solution steps (numbered from 0)"/>
  <Text name="trace" value="$steps"/>
  <Header value="Error type"/>
  <Choices name="error_type" toName="trace" choice="single" required="true">
{choices}
  </Choices>
  <Header value="First wrong step (0-based; leave empty when there is no error)"/>
  <Number name="first_error_step" toName="trace" min="0"/>
</View>
"""


def write_task(
    rows: Sequence[SampleRow], out: str | Path, *, fmt: TaskFormat, categories: Sequence[str]
) -> list[Path]:
    """Write the annotation task, its judge sidecar (and, for Label Studio, the labelling
    config). Returns the paths written, the task file first."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Named after the whole output name: task.jsonl and task.csv get different sidecars.
    sidecar = path.with_name(f"{path.name}.judge.jsonl")
    written = [path]
    if fmt == "jsonl":
        with path.open("wb") as fh:
            for row in rows:
                fh.write(orjson.dumps(_task_row(row)) + b"\n")
    elif fmt == "csv":
        with path.open("w", encoding="utf-8", newline="") as fh:
            fields = [f for f in SampleRow.model_fields if f not in _SIDE_FIELDS]
            writer = csv.DictWriter(fh, fieldnames=[*fields, *_EMPTY_FIELDS])
            writer.writeheader()
            for row in rows:
                writer.writerow(_task_row(row))
    elif fmt == "labelstudio":
        tasks = [{"data": row.model_dump(exclude=set(_SIDE_FIELDS))} for row in rows]
        path.write_bytes(orjson.dumps(tasks, option=orjson.OPT_INDENT_2))
        config = path.with_name(f"{path.name}.labelstudio.xml")
        config.write_text(labelstudio_config(categories), encoding="utf-8")
        written.append(config)
    else:
        raise OptionError(option="--format", value=fmt, allowed="jsonl, csv, labelstudio")
    with sidecar.open("wb") as fh:
        for row in rows:
            side: dict[str, object] = {
                "trace_id": row.trace_id,
                "judge": row.judge,
                "error_type": row.judge_error_type,
                "first_error_step": row.judge_first_error_step,
            }
            fh.write(orjson.dumps(side) + b"\n")
    written.append(sidecar)
    return written


# --- reading the people's answers back ------------------------------------------------------


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _human(path: Path, line: int, row: dict[str, Any], keys: set[str] | None) -> HumanLabel:
    fixed = {k: (None if _blank(v) else v) for k, v in row.items()}
    if fixed.get("error_type") == NO_ERROR_CHOICE:
        fixed["error_type"] = None
        fixed["has_error"] = False
    if fixed.get("annotator") is None:
        raise InvalidRecordError(
            path=path,
            line=line,
            field="annotator",
            reason="a labelled row needs the annotator's id",
            hint="fill in the annotator column of every row you labelled",
        )
    error_type = fixed.get("error_type")
    if keys is not None and error_type is not None and error_type not in keys:
        raise InvalidRecordError(
            path=path,
            line=line,
            field="error_type",
            value=error_type,
            reason="not a key of the taxonomy: " + ", ".join(sorted(keys)),
            hint=f"use one of the taxonomy's keys, or {NO_ERROR_CHOICE!r}",
        )
    flag = fixed.get("has_error")
    if isinstance(flag, str):
        fixed["has_error"] = flag.strip().lower() in ("true", "1", "yes")
    if fixed.get("has_error") is None and (
        error_type is not None or fixed.get("first_error_step") is not None
    ):
        fixed["has_error"] = True
    return human_label_from_row(
        path,
        line,
        {k: v for k, v in fixed.items() if k in HumanLabel.model_fields and v is not None},
    )


def _labelled(row: Mapping[str, Any]) -> bool:
    # "Can't tell" from `misstep review` holds no type, step or flag, yet it is a label: it
    # supersedes the person's earlier label of the trace (and rates nothing).
    if row.get("verdict") == "cant_tell":
        return True
    return not all(_blank(row.get(k)) for k in ("error_type", "first_error_step", "has_error"))


def _rows(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    name = path.name.lower()
    if name.endswith(".csv"):
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            last = reader.line_num
            for row in reader:
                yield last + 1, dict(row)
                last = reader.line_num
        return
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise InvalidRecordError(
                    path=path, line=number, reason=f"not JSON: {str(exc).splitlines()[0]}"
                ) from None
            if not isinstance(row, dict):
                raise InvalidRecordError(path=path, line=number, reason="not a JSON object")
            yield number, row


def _labelstudio(path: Path, keys: set[str] | None) -> list[HumanLabel]:
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
    labels: list[HumanLabel] = []
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
                "weight": data.get("weight", 1.0),
            }
            for result in annotation.get("result", []) or []:
                value = result.get("value", {})
                if result.get("from_name") == "error_type" and value.get("choices"):
                    row["error_type"] = value["choices"][0]
                elif result.get("from_name") == "first_error_step" and "number" in value:
                    row["first_error_step"] = value["number"]
            if _labelled(row):
                labels.append(_human(path, number, row, keys))
    return labels


def read_annotations(path: str | Path, *, keys: Iterable[str] | None = None) -> list[HumanLabel]:
    """People's labels from a filled-in task file (JSONL or CSV, as ``write_task`` wrote it,
    or the shared human-labels shape) or a Label Studio JSON export (``.json``). Rows that
    nobody labelled yet are skipped; ``no_error`` means has_error False; with ``keys`` an
    error type outside the taxonomy is an error naming file and line (task number for
    Label Studio)."""
    p = Path(path)
    if not p.is_file():
        raise InputFormatError(path=p, reason="no such file")
    allowed = None if keys is None else set(keys)
    if p.name.lower().endswith(".json"):
        return _labelstudio(p, allowed)
    return [_human(p, line, row, allowed) for line, row in _rows(p) if _labelled(row)]
