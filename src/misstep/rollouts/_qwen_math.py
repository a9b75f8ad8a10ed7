"""The Qwen2.5-Math evaluation harness's outputs (and ToRA's, whose ``math_eval.py`` it grew
from), read as the harness writes them.

``math_eval.py`` writes one JSONL per (model, benchmark) to ``{output_dir}/{data_name}/
{split}_{prompt_type}_{num_test_sample}_seed{seed}_t{temperature}_s{start}_e{end}.jsonl``
(``output_dir`` is often ``{model}/math_eval``), beside a ``..._metrics.json``. Each line is a
problem: ``idx``, ``question``, ``gt`` (the gold answer the harness parsed), ``gt_cot``, then
the ``n_sampling`` samples as lists: ``code`` (the responses), ``pred`` (the harness's
extracted answers), ``report`` (tool-execution reports) and, from the Qwen2.5-Math version on,
``score`` (its grade of each ``pred`` against ``gt``); some forks add ``finish_reason``.

One trace per sample: problem_id ``idx``, sample_idx the sample's place in the lists, the
harness's grade (``score``) as ``correct`` and its ``pred`` as ``harness_answer``. The
dataset is the folder the file sits in (the harness names it after the benchmark) unless the
path fields say otherwise. Forks that name a column differently are read with ``--map``
(RealCritic writes the responses to ``reasoning``: ``--map response=reasoning``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from misstep.rollouts._harness import (
    Columns,
    files_under,
    grade_of,
    is_jsonl_name,
    per_sample,
    text_of,
)
from misstep.rollouts._records import Part, Record, iter_json_lines
from misstep.rollouts._rowmap import RowError
from misstep.rollouts._source import MISSING, ReadSpec

__all__ = ["QwenMathEval"]

_DEFAULTS: dict[str, str | tuple[str, ...]] = {
    "problem_id": "idx",
    "problem": "question",
    "gold_answer": "gt",
    "response": "code",
    "harness_answer": "pred",
    "correct": "score",
    "finish_reason": "finish_reason",
    # no column of their own: only --map gives them
    "checkpoint": (),
    "dataset": (),
    "model": (),
}
# Columns written once per sample besides the mapped ones: each trace keeps its own element.
_PER_SAMPLE_EXTRA = ("report",)


class QwenMathEval:
    """``--input-format qwen-math-eval``."""

    name = "qwen-math-eval"
    description = (
        "Qwen2.5-Math / ToRA evaluation harness: a JSONL per model and benchmark with idx, "
        "question, gt, code (the samples), pred, score"
    )
    suffixes = (".jsonl", ".ndjson", ".json")
    table = False
    columns: Mapping[str, str | tuple[str, ...]] = _DEFAULTS
    options: Mapping[str, str] = {}

    def recognises(self, row: Mapping[str, Any]) -> bool:
        """``gt`` and a list ``pred`` beside the harness's ``code``, ``report`` or ``score``."""
        return (
            "gt" in row
            and isinstance(row.get("pred"), list)
            and any(key in row for key in ("code", "report", "score"))
        )

    def files(self, folder: Path) -> list[Path]:
        """Every JSON-lines file under the folder (the metrics files are ``.json``)."""
        return files_under(folder, lambda p: is_jsonl_name(p.name))

    def parts(self, path: Path, spec: ReadSpec) -> list[Part]:
        files = self.files(path) if path.is_dir() else [path]
        columns = Columns(self.columns, spec)
        rename = columns.rename()
        return [(str(file), _records(file, columns), rename) for file in files]


def _records(file: Path, columns: Columns) -> Iterator[Record]:
    dataset = file.absolute().parent.name
    consumed = columns.consumed()
    for line, raw, row in iter_json_lines(file):
        if type(row) is not dict:
            yield line, raw, row
            continue
        try:
            samples = _samples(row, columns, dataset, consumed)
        except RowError as err:
            yield line, raw, err
            continue
        for sample in samples:
            yield line, raw, sample


def _samples(
    row: dict[str, Any], columns: Columns, dataset: str, consumed: set[str]
) -> list[dict[str, Any]]:
    """One trace row per sample of a problem's line."""
    _, responses = columns.get(row, "response")
    if responses is MISSING or responses is None:
        raise RowError("required field is missing", "response")
    if isinstance(responses, str):
        responses = [responses]
    if not isinstance(responses, list) or not responses:
        raise RowError("must be a non-empty list of responses", "response", responses)
    n = len(responses)
    base: dict[str, Any] = {"dataset": dataset}
    for field in ("problem_id", "problem", "gold_answer", "checkpoint", "dataset", "model"):
        _, value = columns.get(row, field)
        if value is not MISSING:
            base[field] = _gold(value) if field == "gold_answer" else text_of(value, field)
    extra = {k: v for k, v in row.items() if k not in consumed and k not in _PER_SAMPLE_EXTRA}
    answers = per_sample(columns.get(row, "harness_answer")[1], n, "harness_answer")
    grades = per_sample(columns.get(row, "correct")[1], n, "correct")
    finishes = per_sample(columns.get(row, "finish_reason")[1], n, "finish_reason")
    own = {k: row[k] for k in _PER_SAMPLE_EXTRA if isinstance(row.get(k), list)}
    out = []
    for i, (response, answer, grade, finish) in enumerate(
        zip(responses, answers, grades, finishes, strict=True)
    ):
        sample = dict(base)
        sample["response"] = response
        sample["sample_idx"] = i
        sample["harness_answer"] = text_of(answer, "harness_answer")
        sample["correct"] = grade_of(grade)
        sample["finish_reason"] = text_of(finish, "finish_reason")
        sample["extra"] = extra | {
            k: v[i] if len(v) == n else v for k, v in own.items()
        }  # fmt: skip
        out.append(sample)
    return out


def _gold(value: Any) -> str | None:
    """``gt`` as the harness parsed it: text or a number; a list of one answer is that
    answer (a list of several is kept as their comma-joined text, as the harness compares a
    tuple)."""
    if isinstance(value, list):
        if len(value) == 1:
            return text_of(value[0], "gold_answer")
        return ", ".join(t for t in (text_of(v, "gold_answer") for v in value) if t is not None)
    return text_of(value, "gold_answer")
