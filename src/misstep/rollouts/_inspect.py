"""Inspect AI's evaluation logs (``.eval``), read through ``inspect_ai``'s own log reader.

``inspect_ai.log.read_eval_log`` (the header: task, model, epochs, the sample ids) and
``read_eval_log_samples`` (one sample at a time, so a large log streams) do the reading; the
extra ``misstep[inspect]`` installs them and is imported only here, when a log is read.

One trace per sample and epoch: problem_id the sample's ``id``, sample_idx its ``epoch`` - 1,
the checkpoint the log's model and the dataset its task (unless the path fields say
otherwise), the response ``output.completion``, the gold ``target`` (the first, where a sample
lists several), the problem its ``input`` (the last user message's text for a chat input).
``correct`` is the first scorer's value (``--map correct=SCORER`` picks another) read by
Inspect's ``value_to_float``: full credit (``C``, 1, true) is correct, anything less is not; a
scorer's ``answer`` is kept as ``harness_answer``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from misstep.errors import InputFormatError
from misstep.rollouts._harness import files_under
from misstep.rollouts._records import Part, Record
from misstep.rollouts._rowmap import RowError
from misstep.rollouts._source import ReadSpec

__all__ = ["InspectLog"]

T = TypeVar("T")

# Sample fields misstep never reads: skipping them keeps a large log's samples small.
_SKIP = {"events", "messages", "store", "attachments", "timelines"}
_RENAME = {
    "problem_id": "id",
    "sample_idx": "epoch",
    "response": "output.completion",
    "gold_answer": "target",
    "problem": "input",
    "correct": "scores",
    "harness_answer": "scores",
}


class InspectLog:
    """``--input-format inspect``."""

    name = "inspect"
    description = "Inspect AI .eval logs (read with inspect_ai, the extra misstep[inspect])"
    suffixes = (".eval",)
    table = False
    columns: Mapping[str, str | tuple[str, ...]] = {}
    options: Mapping[str, str] = {}

    def recognises(self, row: Mapping[str, Any]) -> bool:
        return False  # a log is recognised by its suffix

    def files(self, folder: Path) -> list[Path]:
        """The ``.eval`` logs under the folder."""
        return files_under(folder, lambda p: p.name.lower().endswith(".eval"))

    def parts(self, path: Path, spec: ReadSpec) -> list[Part]:
        _inspect_ai(path)
        unknown = set(spec.columns) - {"correct"}
        if unknown:
            raise InputFormatError(
                path=path,
                reason=f"--map {', '.join(sorted(unknown))}: an Inspect log's fields are read "
                "as Inspect defines them",
                hint="--map correct=SCORER picks the scorer whose value is the grade",
            )
        files = self.files(path) if path.is_dir() else [path]
        scorer = spec.columns.get("correct")
        return [(str(f), _records(f, scorer), _RENAME) for f in files]


def _inspect_ai(path: Path) -> None:
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError:
        raise InputFormatError(
            path=path,
            reason="reading Inspect AI logs needs the inspect_ai package",
            hint="install misstep's extra: pip install 'misstep[inspect]'",
        ) from None


def _off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call one of inspect_ai's synchronous readers. Each runs a coroutine; called where an
    event loop is running (a label run reads its input again inside one) it would patch
    asyncio for the whole process (nest_asyncio), so there it runs in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn(*args, **kwargs)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn, *args, **kwargs).result()


def _records(file: Path, scorer: str | None) -> Iterator[Record]:
    from inspect_ai.log import read_eval_log, read_eval_log_samples

    try:
        header = _off_loop(read_eval_log, str(file), header_only=True)
    except Exception as exc:  # inspect_ai raises many kinds for a file it cannot read
        raise InputFormatError(path=file, reason=f"not a readable Inspect log: {exc}") from exc
    base = {"checkpoint": header.eval.model, "dataset": header.eval.task}
    if header.eval.dataset.sample_ids is None:
        # Older logs list no sample ids: the whole log is read at once.
        log = _off_loop(read_eval_log, str(file), resolve_attachments=True)
        samples: Iterator[Any] = iter(log.samples or [])
    else:
        samples = read_eval_log_samples(
            str(file), all_samples_required=False, resolve_attachments=True, exclude_fields=_SKIP
        )
    n = 0
    while (sample := _off_loop(next, samples, None)) is not None:
        n += 1
        raw = {"id": sample.id, "epoch": sample.epoch}
        try:
            yield n, raw, _trace_row(sample, base, scorer)
        except RowError as err:
            yield n, raw, err


def _trace_row(sample: Any, base: Mapping[str, Any], scorer: str | None) -> dict[str, Any]:
    target = sample.target
    out: dict[str, Any] = dict(base)
    out["problem_id"] = str(sample.id)
    out["sample_idx"] = sample.epoch - 1
    out["response"] = sample.output.completion
    out["gold_answer"] = (target[0] if target else None) if isinstance(target, list) else target
    out["problem"] = _problem_text(sample.input)
    extra: dict[str, Any] = {"epoch": sample.epoch}
    if isinstance(target, list) and len(target) > 1:
        extra["targets"] = list(target)
    if sample.metadata:
        extra["metadata"] = sample.metadata
    scores = sample.scores or {}
    if scores:
        name = scorer if scorer is not None else next(iter(scores))
        if name not in scores:
            raise RowError(
                f"has no scorer {name!r} (its scorers: {', '.join(scores)})", "correct", name
            )
        score = scores[name]
        out["correct"] = _full_credit(score.value)
        out["harness_answer"] = score.answer
        extra["scorer"] = name
        extra["score"] = score.value
    if sample.output.stop_reason == "max_tokens":
        out["finish_reason"] = "length"
    out["extra"] = extra
    return out


def _full_credit(value: Any) -> bool | None:
    from inspect_ai.scorer import value_to_float

    if isinstance(value, dict | list) or value is None:
        return None  # several values: no one grade
    return bool(value_to_float()(value) >= 1.0)


def _problem_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    for message in reversed(value or []):
        if getattr(message, "role", None) == "user":
            text = message.text
            return text if isinstance(text, str) else None
    return None
