"""Choosing what people label: a stratified random sample of judged traces, written as an
annotation task (JSONL, CSV or a Label Studio import with its labelling config); the people's
answers are read back by ``misstep.labels.read_human_labels``.

Blind: nothing in the task file depends on the judge within a checkpoint (people who see the
judge's label tend to agree with it, and a weight or a stratum names the judge's type). The
judge's labels, each trace's sampling weight (its inverse inclusion probability within its
stratum, N_h / n_h, so estimates from the labelled sample can be weighted back to the judged
population) and its stratum go to the sidecar ``<task file name>.judge.jsonl`` beside it
(``misstep.labels.TaskDesign`` lines, in the sample's order), which misstep reads when the
labels come back. The task's rows are in a random order drawn from a fresh key, never from
``--seed``: the public seed makes the sample's membership reproducible, and an order derived
from it (or the sample's own order, by stratum) would give the strata away.
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from xml.sax.saxutils import quoteattr

import numpy as np
import orjson
from pydantic import BaseModel

from misstep.errors import OptionError
from misstep.labels import NO_ERROR_CHOICE, LabelStatus, StoredLabel, TaskDesign, task_sidecar
from misstep.metrics import DEFAULT_SEED
from misstep.prompts import split_steps
from misstep.rollouts import Trace, extract_answer

__all__ = [
    "NO_ERROR_CHOICE",
    "STRATA_FIELDS",
    "SampleRow",
    "allocate",
    "labelstudio_config",
    "stratified_sample",
    "write_task",
]

STRATA_FIELDS = ("checkpoint", "dataset", "error_type")
"""Fields a sample can be stratified by (``error_type`` is the judge's)."""

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
    """Its stratum without the judge's type, e.g. ``checkpoint=step_400``; ``all`` when only
    the judge's type stratifies (the review queue's, outside blind mode; not in the task)."""
    judge_stratum: str = ""
    """The whole stratum, e.g. ``checkpoint=step_400|error_type=arithmetic`` (sidecar only)."""
    allocation: str
    """How the sample was allocated to strata (``proportional``, ``equal``, or ``plan`` for a
    draw per checkpoint from ``misstep plan``; sidecar only)."""
    weight: float
    """Inverse inclusion probability: N_h / n_h within the stratum, divided by the label
    budget's inclusion probability of the trace when the judged traces were a sample (sidecar
    only: within a checkpoint it tells the judge's strata apart)."""
    judge: str
    """The judge's id (sidecar only)."""
    judge_error_type: str | None
    """The judge's type (sidecar only)."""
    judge_first_error_step: int | None
    """The judge's first error step (sidecar only)."""


_SIDE_FIELDS = (
    "stratum",
    "allocation",
    "weight",
    "judge",
    "judge_error_type",
    "judge_first_error_step",
    "judge_stratum",
)
"""What the sidecar keeps and the task leaves out."""
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
    seed: int = DEFAULT_SEED,
    inclusion: Mapping[str, float] | None = None,
    take: Mapping[str, int] | None = None,
    exclude: Collection[str] = (),
) -> list[SampleRow]:
    """A stratified random sample (without replacement) of the traces whose current label is
    ``ok``. The same inputs and seed give the same sample, whatever the input order.

    ``inclusion`` (trace_id -> the label budget's inclusion probability, ``LabelledRun
    .inclusion``): the judged traces were themselves a sample, so a row's weight is its inverse
    inclusion probability in both draws, ``N_h / n_h / inclusion_prob``.

    ``take`` (stratum name -> traces to draw, e.g. ``{"checkpoint=step_400": 120}`` from a
    ``misstep plan``) replaces ``n`` and the allocation; ``exclude``: traces people already
    labelled, never drawn again (the draw is then a random sample of the rest)."""
    if n < 1:
        raise OptionError(option="n", value=n, allowed="a positive number of traces")
    for field in stratify:
        if field not in STRATA_FIELDS:
            raise OptionError(
                option="stratify", value=field, allowed="fields among " + ", ".join(STRATA_FIELDS)
            )
    if allocation not in ("proportional", "equal"):
        raise OptionError(option="allocation", value=allocation, allowed="proportional, equal")
    pool: dict[str, list[tuple[Trace, StoredLabel]]] = {}
    for trace in traces:
        label = labels.get(trace.trace_id)
        if label is None or label.status != LabelStatus.OK or trace.trace_id in exclude:
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
    counts = (
        [min(int(take.get(s, 0)), len(pool[s])) for s in names]
        if take is not None
        else allocate([len(pool[s]) for s in names], n, allocation)
    )
    rng = np.random.default_rng(seed)
    rows: list[SampleRow] = []
    for name, k in zip(names, counts, strict=True):
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
                    stratum=_visible(name),
                    judge_stratum=name,
                    allocation=allocation if take is None else "plan",
                    weight=len(members) / k / (inclusion or {}).get(trace.trace_id, 1.0),
                    judge=label.judge,
                    judge_error_type=label.error_type,
                    judge_first_error_step=label.first_error_step,
                )
            )
    return rows


def _visible(stratum: str) -> str:
    """The stratum without the judge's type: what a blind task may show."""
    parts = [p for p in stratum.split("|") if not p.startswith("error_type=")]
    return "|".join(parts) or "all"


def _task_row(row: SampleRow, annotator: str = "") -> dict[str, Any]:
    data = row.model_dump(exclude=set(_SIDE_FIELDS))
    data.update(dict.fromkeys(_EMPTY_FIELDS, ""))
    data["annotator"] = annotator
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
    rows: Sequence[SampleRow],
    out: str | Path,
    *,
    fmt: TaskFormat,
    categories: Sequence[str],
    assigned: Mapping[str, Sequence[str]] | None = None,
) -> list[Path]:
    """Write the annotation task (its rows in a random order from a fresh key), its sidecar
    (the weights, strata and judge labels, in the sample's order) and, for Label Studio, the
    labelling config. Returns the paths written, the task file first, the sidecar last.

    ``assigned`` (trace_id -> people, ``assign_annotators``): one row per trace and person,
    its ``annotator`` filled in (JSONL and CSV; Label Studio assigns its tasks itself)."""
    path = Path(out)
    if assigned is not None and fmt == "labelstudio":
        raise OptionError(
            option="--annotators",
            value=",".join(sorted({a for people in assigned.values() for a in people})),
            allowed="with --format jsonl or csv",
            hint="Label Studio spreads tasks over its own users (project settings, overlap)",
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    sidecar = task_sidecar(path)
    written = [path]
    people = assigned or {}
    shown = [(row, who) for row in rows for who in (people.get(row.trace_id) or [""])]
    # A fresh key, not --seed: the order must not be computable by anyone who knows the seed.
    random.SystemRandom().shuffle(shown)
    if fmt == "jsonl":
        with path.open("wb") as fh:
            for row, who in shown:
                fh.write(orjson.dumps(_task_row(row, who)) + b"\n")
    elif fmt == "csv":
        with path.open("w", encoding="utf-8", newline="") as fh:
            fields = [f for f in SampleRow.model_fields if f not in _SIDE_FIELDS]
            writer = csv.DictWriter(fh, fieldnames=[*fields, *_EMPTY_FIELDS])
            writer.writeheader()
            for row, who in shown:
                writer.writerow(_task_row(row, who))
    elif fmt == "labelstudio":
        tasks = [{"data": row.model_dump(exclude=set(_SIDE_FIELDS))} for row, _ in shown]
        path.write_bytes(orjson.dumps(tasks, option=orjson.OPT_INDENT_2))
        config = path.with_name(f"{path.name}.labelstudio.xml")
        config.write_text(labelstudio_config(categories), encoding="utf-8")
        written.append(config)
    else:
        raise OptionError(option="fmt", value=fmt, allowed="jsonl, csv, labelstudio")
    with sidecar.open("wb") as fh:
        for row in rows:
            side = TaskDesign(
                trace_id=row.trace_id,
                weight=row.weight,
                stratum=row.judge_stratum,
                allocation=row.allocation,
                judge=row.judge,
                error_type=row.judge_error_type,
                first_error_step=row.judge_first_error_step,
            )
            fh.write(orjson.dumps(side.model_dump(mode="json")) + b"\n")
    written.append(sidecar)
    return written
