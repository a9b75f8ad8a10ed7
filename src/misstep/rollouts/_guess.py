"""What a file misstep cannot read is told: the formats misstep knows, the keys of the file's
first row, and the ``--map`` that would most likely read it (a guess from the keys' names)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from misstep.errors import InputFormatError
from misstep.rollouts._source import MAP_FIELDS, MISSING, lookup

__all__ = ["guess_map", "unreadable_rows"]

# misstep's field -> the names other tools give it, most telling first.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "problem_id": (
        "id", "idx", "qid", "question_id", "problem_idx", "problem_index", "uid", "unique_id",
        "doc_id", "task_id", "example_id", "pid", "index",
    ),
    "response": (
        "output", "completion", "generation", "generated_text", "model_output",
        "model_response", "response_text", "prediction_text", "reasoning", "answer_text",
        "text", "code", "content",
    ),
    "gold_answer": (
        "gold", "gt", "ground_truth", "expected_answer", "reference_answer", "answer",
        "target", "label", "reference",
    ),
    "problem": ("question", "prompt", "input", "query", "problem_text", "instruction"),
    "correct": ("is_correct", "correctness", "score", "acc", "accuracy", "passed", "reward"),
    "pred_answer": ("pred", "prediction", "predicted_answer", "extracted_answer", "final_answer"),
    "checkpoint": ("ckpt", "model_name", "model"),
    "sample_idx": ("sample", "sample_index", "seed"),
}  # fmt: skip
_REQUIRED = ("problem_id", "response")
_SHOWN_KEYS = 24


def _columns(row: Mapping[str, Any]) -> list[str]:
    """The row's keys, and one level into objects (``doc.question``)."""
    out = []
    for key, value in row.items():
        out.append(str(key))
        if isinstance(value, Mapping):
            out += [f"{key}.{sub}" for sub in value]
    return out


def guess_map(row: Mapping[str, Any]) -> dict[str, str]:
    """misstep's field -> the column of ``row`` that most likely holds it, for the fields the
    row does not hold under misstep's own name. A row without an id column is given its
    problem text as the id (the same text is the same problem)."""
    columns = _columns(row)
    by_lower = {c.lower(): c for c in columns}
    leaf = {c.rsplit(".", 1)[-1].lower(): c for c in reversed(columns)}
    taken = set(row) & set(MAP_FIELDS)  # misstep's own names are read as they are
    out: dict[str, str] = {}
    for field, names in _SYNONYMS.items():
        if field in row:
            continue
        for name in names:
            column = by_lower.get(name) or leaf.get(name)
            if column is not None and column not in taken and column not in out.values():
                out[field] = column
                break
    if "problem_id" not in row and "problem_id" not in out:
        text = out.get("problem") or ("problem" if "problem" in row else None)
        if text is not None:
            out["problem_id"] = text
    return out


def unreadable_rows(
    where: str,
    row: Mapping[str, Any],
    missing: list[str],
    formats: Mapping[str, str],
    given: Mapping[str, str],
) -> InputFormatError:
    """The error of a file whose first row (as read, before ``given``, the ``--map`` the
    user gave) lacks the ``missing`` required fields: the formats misstep knows (name ->
    description), the row's keys, and the ``--map`` to try."""
    keys = list(row)
    shown = ", ".join(keys[:_SHOWN_KEYS]) + (", ..." if len(keys) > _SHOWN_KEYS else "")
    known = "; ".join(f"{name} ({text})" for name, text in formats.items())
    guess = guess_map(row)
    guess.update({f: c for f, c in given.items() if lookup(row, c) is not MISSING})
    wanted = [f for f in missing if f not in guess]
    if not wanted:
        text = ",".join(f"{field}={column}" for field, column in guess.items())
        advice = f"it would likely read with --map {text}"
    else:
        advice = (
            f"no column looks like {' or '.join(wanted)}: name the columns with --map "
            "FIELD=COLUMN,... (e.g. --map problem_id=id,response=output)"
        )
    return InputFormatError(
        path=where,
        reason=f"cannot read its rows: the first row has no {' and no '.join(missing)} "
        f"(its keys: {shown or 'none'})",
        hint=f"{advice}; misstep reads these formats (--input-format): {known}",
    )
