"""What ``misstep discover`` clusters: free texts with an id, an optional checkpoint and quote.

Two sources: a JSONL file (``--texts``: ``id``, ``text``, optional ``checkpoint``, ``quote``)
or a label run (the judge's explanation of each trace of the chosen error types, with its
quote as evidence)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from misstep.errors import InputFormatError, InvalidRecordError, OptionError
from misstep.labels import LabelStatus, read_labels

__all__ = ["DiscoverText", "read_texts_file", "texts_from_labels"]


@dataclass(frozen=True)
class DiscoverText:
    """One text to cluster."""

    id: str
    text: str
    checkpoint: str | None = None
    quote: str | None = None
    error_type: str | None = None


def read_texts_file(path: str | Path) -> list[DiscoverText]:
    """Read a JSONL file of ``{"id", "text", "checkpoint"?, "quote"?}`` rows; blank lines are
    skipped. A row without a string ``id`` and a non-empty string ``text`` raises
    ``InvalidRecordError`` naming the line; a repeated id raises too."""
    p = Path(path)
    try:
        lines = p.read_bytes().splitlines()
    except OSError as exc:
        raise InputFormatError(path=p, reason=f"cannot read it: {exc.strerror or exc}") from None
    out: list[DiscoverText] = []
    seen: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise InvalidRecordError(
                path=p, line=number, field="(row)", reason="not a JSON object"
            ) from None
        if not isinstance(row, dict):
            raise InvalidRecordError(path=p, line=number, field="(row)", reason="not an object")
        rid, text = row.get("id"), row.get("text")
        if isinstance(rid, int) and not isinstance(rid, bool):
            rid = str(rid)
        if not isinstance(rid, str) or not rid:
            raise InvalidRecordError(
                path=p, line=number, field="id", value=rid, reason="needs a non-empty string"
            )
        if not isinstance(text, str) or not text.strip():
            raise InvalidRecordError(
                path=p, line=number, field="text", value=text, reason="needs a non-empty string"
            )
        if rid in seen:
            raise InvalidRecordError(
                path=p, line=number, field="id", value=rid, reason="repeats an earlier id"
            )
        seen.add(rid)
        ck, quote = row.get("checkpoint"), row.get("quote")
        out.append(
            DiscoverText(
                id=rid,
                text=text,
                checkpoint=None if ck is None else str(ck),
                quote=quote if isinstance(quote, str) else None,
            )
        )
    return out


def texts_from_labels(
    labels: str | Path, *, types: list[str] | None, keys: list[str], judge: str | None = None
) -> list[DiscoverText]:
    """The judge's explanations of the ``ok`` labels of ``types`` (None: every type), each
    with its quote. ``keys`` are the run's taxonomy keys: a type outside them raises
    ``OptionError``. A label without an explanation is skipped (nothing to cluster)."""
    for t in types or []:
        if t not in keys:
            raise OptionError(option="types", value=t, allowed=", ".join(keys))
    wanted = set(types) if types is not None else None
    out: list[DiscoverText] = []
    for trace_id, rec in sorted(read_labels(labels, judge=judge).items()):
        if rec.status is not LabelStatus.OK or rec.error_type is None:
            continue
        if wanted is not None and rec.error_type not in wanted:
            continue
        text = (rec.explanation or "").strip()
        if not text:
            continue
        out.append(
            DiscoverText(
                id=trace_id,
                text=text,
                checkpoint=rec.checkpoint,
                quote=rec.evidence,
                error_type=rec.error_type,
            )
        )
    return out
