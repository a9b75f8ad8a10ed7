"""verl validation dumps: a directory of ``{step}.jsonl`` files.

verl writes them when ``trainer.validation_data_dir`` is set: ``RayPPOTrainer._dump_generations``
writes one JSON object per validation sample to ``{global_steps}.jsonl`` with ``input`` (the
decoded prompt, chat template included), ``output`` (the decoded response), ``gts`` (the
``reward_model.ground_truth`` of the sample; absent in older verl releases), ``score`` (the
sample's reward) and ``step``, plus every per-sample list of the reward function's extra infos
(e.g. ``acc``, ``pred``, ``reward``). Prompts repeated ``val_kwargs.n`` times appear as
consecutive identical ``input`` values.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from misstep.rollouts._rowmap import RowError

__all__ = ["VERL_FIELD_NAMES", "VerlMapper"]

# Trace field -> verl key, so errors name the field the user's file holds.
VERL_FIELD_NAMES = {
    "response": "output",
    "problem": "input",
    "problem_id": "input",
    "gold_answer": "gts",
    "correct": "score",
}
_CONSUMED = frozenset({"input", "output", "gts", "score", "step", "data_source"})


def problem_id_of(prompt: str) -> str:
    """Stable id of a verl prompt: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class VerlMapper:
    """Maps verl rows to Trace rows; numbers samples of one prompt within one step (0, 1, ...)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, str], int] = {}

    def __call__(self, row: dict[str, Any], file_step: int) -> dict[str, Any]:
        prompt = row.get("input")
        if prompt is None:
            raise RowError("required field is missing", "input")
        if not isinstance(prompt, str) or not prompt.strip():
            raise RowError("must be a non-empty string", "input", prompt)
        step = row.get("step", file_step)
        if step is None:
            step = file_step
        if isinstance(step, float) and step.is_integer():
            step = int(step)
        if not isinstance(step, int) or isinstance(step, bool):
            raise RowError("must be an integer training step", "step", step)
        pid = problem_id_of(prompt)
        key = (step, pid)
        sample_idx = self._seen.get(key, 0)
        self._seen[key] = sample_idx + 1

        out: dict[str, Any] = {
            "problem_id": pid,
            "problem": prompt,
            "checkpoint": f"global_step_{step}",
            "step": step,
            "sample_idx": sample_idx,
        }
        if "output" in row:
            out["response"] = row["output"]
        extra: dict[str, Any] = {k: v for k, v in row.items() if k not in _CONSUMED}
        source = row.get("data_source")
        if isinstance(source, str) and source:
            out["dataset"] = source
        elif source is not None:
            extra["data_source"] = source
        gts = row.get("gts")
        if isinstance(gts, str):
            out["gold_answer"] = gts
        elif isinstance(gts, int | float) and not isinstance(gts, bool):
            out["gold_answer"] = str(gts)
        elif gts is not None:
            extra["gts"] = gts  # a structured ground truth (list, dict): kept, not guessed at
        score = row.get("score")
        if score is not None:
            if not isinstance(score, int | float) or (
                isinstance(score, float) and math.isnan(score)
            ):
                raise RowError("must be a number (the sample's reward)", "score", score)
            out["correct"] = score > 0
            extra["score"] = score
        out["extra"] = extra
        return out
