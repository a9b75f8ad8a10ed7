"""The later of two labels of a trace, by ``created_at`` (``labels/_latest.py``): one rule for
the consensus, agree's raters and the review app's state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from misstep.agreement import human_raters
from misstep.errors import InvalidRecordError
from misstep.labels import (
    HumanLabel,
    current_labels,
    human_consensus,
    label_time,
    read_human_labels,
    supersedes,
)


def lab(who: str, kind: str | None, at: str | None, *, trace: str = "t", **kw: Any) -> HumanLabel:
    return HumanLabel(trace_id=trace, annotator=who, error_type=kind, created_at=at, **kw)


def adj(who: str, kind: str | None, at: str | None, **kw: Any) -> HumanLabel:
    return lab(who, kind, at, role="adjudicator", **kw)


def test_time_decides_then_the_reading_order() -> None:
    early = lab("a", "arithmetic", "2025-01-01T10:00:00.000+00:00")
    late = lab("a", "misread", "2025-01-01T10:00:00.001+00:00")
    assert supersedes(late, early) and not supersedes(early, late)
    # the same instant written in another offset is the same time: the one read later wins
    same = lab("a", "other", "2025-01-01T11:00:00.000+01:00")
    assert supersedes(same, early) and supersedes(early, same)
    # no time: earlier than any timed label; two without: the one read later
    bare, bare2 = lab("a", "other", None), lab("a", "misread", None)
    assert supersedes(early, bare) and not supersedes(bare, early)
    assert supersedes(bare2, bare) and supersedes(bare, bare2)
    # naive times are UTC
    assert label_time("2025-01-01T10:00:00") == label_time("2025-01-01T10:00:00+00:00")
    assert label_time(None) is None


def test_the_later_adjudication_wins_whatever_the_file_order() -> None:
    people = [lab("x", "arithmetic", None), lab("y", "misread", None)]
    # amy decides later than zed, but her file is read first (amy.jsonl < zed.jsonl)
    amy = adj("amy", "other", "2025-01-02T09:00:00.000+00:00")
    zed = adj("zed", "arithmetic", "2025-01-01T09:00:00.000+00:00")
    assert human_consensus([*people, amy, zed]).types == {"t": "other"}
    assert human_consensus([*people, zed, amy]).types == {"t": "other"}
    _, decided = current_labels([*people, amy, zed])
    assert decided == [amy]
    # A later "can't tell" withdraws the decision: the people's tie is back.
    unsure = adj("bob", None, "2025-01-03T09:00:00.000+00:00")
    back = human_consensus([*people, amy, zed, unsure])
    assert back.types == {} and back.tied == ["t"]
    # A decision without a time is earlier than every timed one.
    old = adj("old", "misread", None)
    assert human_consensus([*people, amy, old]).types == {"t": "other"}


def test_a_persons_later_label_by_time_in_the_consensus_and_agree() -> None:
    # Two files of one person read in the other order than written.
    later = lab("x", "misread", "2025-01-02T00:00:00+00:00")
    earlier = lab("x", "arithmetic", "2025-01-01T00:00:00+00:00")
    assert human_consensus([later, earlier]).types == {"t": "misread"}
    assert human_raters([later, earlier])["x"]["t"].error_type == "misread"
    # "no error" given later leaves no type
    clean = lab("x", None, "2025-01-03T00:00:00+00:00", has_error=False)
    assert human_consensus([later, clean, earlier]).types == {}


def test_a_bad_time_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"trace_id": "t", "annotator": "a", "error_type": "arithmetic", '
        '"created_at": "yesterday"}\n',
        encoding="utf-8",
    )
    with pytest.raises(InvalidRecordError) as info:
        read_human_labels(path)
    err = info.value
    assert (err.line, err.field) == (1, "created_at") and "ISO 8601" in str(err)
