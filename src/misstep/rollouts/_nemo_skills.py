"""NeMo-Skills' generation outputs (``ns eval``, ``ns generate``), read as it writes them.

``ns eval`` writes ``{output_dir}/eval-results/{benchmark}/output-rs{seed}.jsonl``, one file
per random seed (one sample of every problem each), or ``output.jsonl`` for a greedy run,
beside a ``metrics.json``. Each line is one problem's generation, in the benchmark's order:
the input row's fields (``problem``, ``expected_answer``, sometimes ``id``), ``generation``,
and what the evaluator added: ``predicted_answer`` and ``symbolic_correct`` (math), or a
judge's ``judgement`` text (``Judgement: Yes``), or ``is_correct``.

One trace per line: problem_id ``id`` where the rows carry one, else the line's place in the
file (the same problem in every seed's file); sample_idx the seed (0 for ``output.jsonl``);
the dataset the folder the file sits in (the harness names it after the benchmark) unless
the path fields say otherwise. ``correct`` is the harness's grade, as NeMo-Skills' math
metrics read it: ``symbolic_correct``, else the ``judgement``, else ``is_correct`` (``--map
correct=judgement`` picks one); ``predicted_answer`` is kept as ``harness_answer``. A folder
holding both ``output.jsonl`` and ``output-rs*.jsonl`` for one benchmark is refused: a greedy
run and a sampled run do not vote together.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from misstep.errors import InputFormatError
from misstep.rollouts._harness import Columns, files_under, grade_of, text_of
from misstep.rollouts._records import Part, Record, iter_json_lines
from misstep.rollouts._rowmap import RowError
from misstep.rollouts._source import MISSING, ReadSpec

__all__ = ["NemoSkills"]

_FILE = re.compile(r"^output(?:-rs(?P<seed>\d+))?\.jsonl(?:\.gz)?$")
_DEFAULTS: dict[str, str | tuple[str, ...]] = {
    "problem_id": "id",
    "problem": ("problem", "question"),
    "gold_answer": "expected_answer",
    "response": "generation",
    "harness_answer": "predicted_answer",
    "correct": ("symbolic_correct", "judgement", "is_correct"),
    "finish_reason": "finish_reason",
    "num_tokens": "num_generated_tokens",
    # no column of their own: only --map gives them
    "checkpoint": (),
    "dataset": (),
    "model": (),
}


class NemoSkills:
    """``--input-format nemo-skills``."""

    name = "nemo-skills"
    description = (
        "NeMo-Skills: output-rs<seed>.jsonl (a sample per file) or output.jsonl with problem, "
        "expected_answer, generation, predicted_answer, symbolic_correct / judgement"
    )
    suffixes = (".jsonl", ".ndjson", ".json")
    table = False
    columns: Mapping[str, str | tuple[str, ...]] = _DEFAULTS
    options: Mapping[str, str] = {}

    def recognises(self, row: Mapping[str, Any]) -> bool:
        return "generation" in row and bool({"expected_answer", "predicted_answer"} & row.keys())

    def files(self, folder: Path) -> list[Path]:
        """The ``output.jsonl`` and ``output-rs<seed>.jsonl`` files under the folder."""
        return files_under(folder, lambda p: _FILE.match(p.name) is not None)

    def parts(self, path: Path, spec: ReadSpec) -> list[Part]:
        files = self.files(path) if path.is_dir() else [path]
        _one_kind_per_folder(files)
        columns = Columns(self.columns, spec)
        rename = columns.rename()
        return [(str(f), _records(f, columns), rename) for f in files]


def _one_kind_per_folder(files: list[Path]) -> None:
    kinds: dict[Path, set[bool]] = defaultdict(set)
    for file in files:
        named = _FILE.match(file.name)
        kinds[file.parent].add(bool(named and named.group("seed") is not None))
    for folder, seen in kinds.items():
        if len(seen) > 1:
            raise InputFormatError(
                path=folder,
                reason="holds both output.jsonl (a greedy run) and output-rs*.jsonl (sampled "
                "runs): they do not vote together",
                hint="read one of them: move the other out of the folder, or pass the file",
            )


def _records(file: Path, columns: Columns) -> Iterator[Record]:
    named = _FILE.match(file.name)
    seed = named.group("seed") if named else None
    base: dict[str, Any] = {
        "dataset": file.absolute().parent.name,
        "sample_idx": int(seed) if seed is not None else 0,
    }
    consumed = columns.consumed()
    index = -1
    for line, raw, row in iter_json_lines(file):
        index += 1
        if type(row) is not dict:
            yield line, raw, row
            continue
        try:
            yield line, raw, _trace_row(row, columns, base, index, consumed)
        except RowError as err:
            yield line, raw, err


def _trace_row(
    row: dict[str, Any], columns: Columns, base: dict[str, Any], index: int, consumed: set[str]
) -> dict[str, Any]:
    out = dict(base)
    _, pid = columns.get(row, "problem_id")
    out["problem_id"] = text_of(pid, "problem_id") if pid is not MISSING else str(index)
    for field in ("problem", "gold_answer", "response", "harness_answer", "finish_reason"):
        _, value = columns.get(row, field)
        if value is not MISSING:
            out[field] = text_of(value, field) if field != "response" else value
    for field in ("checkpoint", "dataset", "model"):
        _, value = columns.get(row, field)
        if value is not MISSING:
            out[field] = text_of(value, field)
    column, grade = columns.get(row, "correct")
    out["correct"] = grade_of(grade, column or "correct")
    _, tokens = columns.get(row, "num_tokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        out["num_tokens"] = tokens
    out["extra"] = {k: v for k, v in row.items() if k not in consumed}
    return out
