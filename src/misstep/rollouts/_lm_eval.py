"""lm-evaluation-harness's per-sample logs (``--log_samples``), read as the harness writes them.

``EvaluationTracker.save_results_samples`` writes ``{output_path}/{model_name_sanitized}/
samples_{task}_{date}.jsonl``: one line per (document, filter) with ``doc_id``, ``doc`` (the
dataset's row), ``target`` (as text), ``arguments`` (the prompt), ``resps`` (per request, the
generations, as text), ``filtered_resps`` (per request, what the filter kept: the answer it
extracted), ``filter``, ``metrics`` (the metric names) and each metric's value (e.g.
``exact_match``). A task with several filters (GSM8K's ``strict-match`` and
``flexible-extract``) writes each document once per filter, the same generations each time.

One trace per generation of a generation task (``generate_until``): problem_id ``doc_id``,
the dataset the task (from the file's name) and the checkpoint the folder the file sits in
(the harness names it after the model) unless the path fields say otherwise. One filter's
rows are read: the file's first, or the one ``--map filter=NAME`` names; its metric (the
first of ``metrics``, or ``--map correct=METRIC``) becomes ``correct`` and its filtered answer
``harness_answer``. The gold is ``target``, with GSM8K's worked solution cut to what follows
its last ``####``. With several generations per document (``repeats``) the harness grades the
filtered answer once for the document (a majority, or the first), not each generation: the
grade and answer are kept in ``extra`` and misstep grades each generation itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from misstep.rollouts._harness import Columns, files_under, grade_of, text_of
from misstep.rollouts._records import Part, Record, iter_json_lines
from misstep.rollouts._rowmap import RowError
from misstep.rollouts._source import MISSING, ReadSpec, lookup

__all__ = ["LmEvalHarness"]

_FILE = re.compile(
    r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl(?:\.gz)?$"
)
_DEFAULTS: dict[str, str | tuple[str, ...]] = {
    "problem_id": "doc_id",
    # the dataset's own name for the problem text, in the tasks misstep's users run
    "problem": ("doc.problem", "doc.question", "doc.Problem", "doc.Question", "doc.input"),
    "gold_answer": "target",
    "response": "resps",
    "harness_answer": "filtered_resps",
    # no column of their own: only --map gives them
    "checkpoint": (),
    "dataset": (),
    "model": (),
    "correct": (),
}
# Metrics that grade one answer, in the order a row without ``metrics`` is searched.
_METRICS = ("exact_match", "acc", "math_verify", "is_equiv", "correct")
_CONSUMED = frozenset({"doc_id", "target", "resps", "filtered_resps", "filter", "metrics"})


class LmEvalHarness:
    """``--input-format lm-eval-harness``."""

    name = "lm-eval-harness"
    description = (
        "lm-evaluation-harness --log_samples: samples_<task>_<date>.jsonl with doc_id, doc, "
        "target, resps, filtered_resps, filter and metric fields"
    )
    suffixes = (".jsonl", ".ndjson", ".json")
    table = False
    columns: Mapping[str, str | tuple[str, ...]] = _DEFAULTS
    options: Mapping[str, str] = {
        "filter": "the filter whose rows are read (default: the file's first)"
    }

    def recognises(self, row: Mapping[str, Any]) -> bool:
        return {"doc_id", "resps", "filtered_resps"} <= row.keys()

    def files(self, folder: Path) -> list[Path]:
        """The ``samples_<task>_<date>.jsonl`` files under the folder."""
        return files_under(folder, lambda p: _FILE.match(p.name) is not None)

    def parts(self, path: Path, spec: ReadSpec) -> list[Part]:
        files = self.files(path) if path.is_dir() else [path]
        columns = Columns(self.columns, spec)
        rename = columns.rename()
        chosen = spec.columns.get("filter")
        return [(str(f), _records(f, columns, chosen), rename) for f in files]


def _records(file: Path, columns: Columns, chosen: str | None) -> Iterator[Record]:
    named = _FILE.match(file.name)
    where = file.absolute()
    base = {
        "dataset": named.group("task") if named else file.name.split(".", 1)[0],
        "checkpoint": where.parent.name,
    }
    for line, raw, row in iter_json_lines(file):
        if type(row) is not dict:
            yield line, raw, row
            continue
        name = row.get("filter")
        if chosen is None:
            chosen = name  # the file's first filter
        if name != chosen:
            continue  # the same generations under another filter
        try:
            samples = _samples(row, columns, base)
        except RowError as err:
            yield line, raw, err
            continue
        for sample in samples:
            yield line, raw, sample


def _samples(row: dict[str, Any], columns: Columns, base: dict[str, str]) -> list[dict[str, Any]]:
    column, resps = columns.get(row, "response")
    generations = _generations(resps, column)
    n = len(generations)
    out: dict[str, Any] = dict(base)
    for field in ("problem_id", "problem", "checkpoint", "dataset", "model"):
        _, value = columns.get(row, field)
        if value is not MISSING:
            out[field] = text_of(value, field)
    _, target = columns.get(row, "gold_answer")
    out["gold_answer"] = _gold(text_of(target, "gold_answer"))
    metric, value = _metric(row, columns)
    grade = grade_of(value, metric) if metric is not None else None
    _, filtered = columns.get(row, "harness_answer")
    answer = _first(filtered)
    extra = {k: v for k, v in row.items() if k not in _CONSUMED and k != metric}
    extra["filter"] = row.get("filter")
    if n == 1:
        out["correct"] = grade
        out["harness_answer"] = answer
    elif metric is not None:
        # One grade for the document's filtered answer, not per generation.
        extra["harness_answer"] = answer
        extra[metric] = value
    rows = []
    for i, text in enumerate(generations):
        sample = dict(out)
        sample["response"] = text
        sample["sample_idx"] = i
        sample["extra"] = extra
        rows.append(sample)
    return rows


def _generations(resps: Any, column: str | None) -> list[str]:
    """The first request's generations: ``resps`` is ``[[text, ...]]`` for a generation task,
    ``[[[logprob, is_greedy]], ...]`` for a log-likelihood one."""
    field = "response"
    if resps is MISSING or resps is None:
        raise RowError("required field is missing", field)
    first = resps[0] if isinstance(resps, list) and resps else resps
    if isinstance(first, str):
        return [first]
    if isinstance(first, list) and first and all(isinstance(g, str) for g in first):
        return list(first)
    raise RowError(
        f"{column or 'resps'} holds no generated text (a log-likelihood task? misstep reads "
        "generate_until tasks)",
        field,
        resps,
    )


def _metric(row: Mapping[str, Any], columns: Columns) -> tuple[str | None, Any]:
    names = columns.names("correct")
    if not names:
        listed = row.get("metrics")
        names = tuple(listed) if isinstance(listed, list) else _METRICS
    for name in names:
        value = lookup(row, str(name))
        if value is not MISSING:
            return str(name), value
    return None, MISSING


def _first(filtered: Any) -> str | None:
    """The first request's filtered answer."""
    value = filtered[0] if isinstance(filtered, list) and filtered else filtered
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else None
    return text_of(value, "harness_answer") if value is not MISSING else None


def _gold(target: str | None) -> str | None:
    """GSM8K's target is its worked solution ending ``#### 72``: the gold is what follows."""
    if target is not None and "####" in target:
        return target.rsplit("####", 1)[1].strip()
    return target
