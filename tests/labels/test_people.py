"""People's label files: one line format whoever writes them (the review app, import-labels),
old lines read as new ones, validated names, torn tails repaired, concurrent appends whole,
reveals."""

from __future__ import annotations

import threading
from pathlib import Path

import orjson
import pytest

from misstep.errors import LabelStoreError, OptionError
from misstep.labels import (
    HumanLabel,
    HumanLabelWriter,
    Reveal,
    RevealIndex,
    check_annotator,
    human_label_line,
    read_human_labels,
    read_reveals,
    write_human_labels,
)


def _label(i: int, annotator: str = "ann") -> HumanLabel:
    return HumanLabel(
        trace_id=f"t{i}", annotator=annotator, error_type="arithmetic", verdict="error", note=str(i)
    )


# A review app line as misstep wrote it before people's labels had one model (every field, the
# null ones too), and an import-labels line of then (no version, no review fields).
OLD_REVIEW = (
    b'{"version":1,"trace_id":"t1","annotator":"ann","error_type":null,'
    b'"first_error_step":null,"has_error":false,"verdict":"no_error","note":null,"blind":true,'
    b'"judge":"rules:x","weight":2.5,"role":"annotator","mapping_method":"misstep review",'
    b'"created_at":"2025-01-02T03:04:05.678+00:00"}\n'
)
OLD_IMPORT = (
    b'{"trace_id":"t2","annotator":"labelstudio:1","error_type":"misread","has_error":true,'
    b'"weight":3.0,"role":"annotator"}\n'
)


def test_the_line_format() -> None:
    # Fields in the model's order, None ones left out: the old review line less its nulls.
    old = HumanLabel.model_validate_json(OLD_REVIEW)
    assert human_label_line(old) == (
        b'{"version":1,"trace_id":"t1","annotator":"ann","has_error":false,'
        b'"verdict":"no_error","blind":true,"judge":"rules:x","weight":2.5,"role":"annotator",'
        b'"mapping_method":"misstep review","created_at":"2025-01-02T03:04:05.678+00:00"}\n'
    )
    # An imported label gains its version and nothing else.
    imported = HumanLabel.model_validate_json(OLD_IMPORT)
    assert human_label_line(imported) == b'{"version":1,' + OLD_IMPORT[1:]


def test_old_and_new_lines_read_the_same(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_bytes(OLD_REVIEW + OLD_IMPORT)
    new = tmp_path / "new.jsonl"
    assert write_human_labels(new, read_human_labels(old)) == 2
    assert new.read_bytes() != old.read_bytes()
    assert read_human_labels(new) == read_human_labels(old)
    first = read_human_labels(new)[0]
    assert (first.error_type, first.has_error, first.verdict, first.blind, first.weight) == (
        None,
        False,
        "no_error",
        True,
        2.5,
    )
    # Written in place, replacing what was there.
    assert write_human_labels(new, read_human_labels(old)[1:]) == 1
    assert new.read_bytes() == b'{"version":1,' + OLD_IMPORT[1:]


@pytest.mark.parametrize(
    "name",
    [
        *("", ".", "..", "../x", "a/b", "a\\b", ".hidden", "a b", "x" * 65, "a\x00b", "é"),
        # What a missing name becomes as text: never a person (issue 34, item 5).
        *("None", "none", "NULL", "null", "undefined", "NaN", "nil", "true", "False"),
    ],
)
def test_bad_annotator_names(name: str) -> None:
    with pytest.raises(OptionError):
        check_annotator(name)


@pytest.mark.parametrize("name", ["alice", "Bob.Smith", "a@b.org", "r2-d2_x+1", "x" * 64])
def test_good_annotator_names(name: str) -> None:
    assert check_annotator(name) == name


def test_torn_tail_is_cut_and_a_whole_record_kept(tmp_path: Path) -> None:
    writer = HumanLabelWriter(tmp_path)
    path = writer.append(_label(1))
    # A kill while writing could leave a fragment: the next append removes it.
    with open(path, "ab") as fh:
        fh.write(b'{"trace_id": "t2", "annot')
    writer.append(_label(3))
    assert [h.trace_id for h in read_human_labels(path)] == ["t1", "t3"]
    # A complete record that lost only its newline is kept and gets one.
    with open(path, "ab") as fh:
        fh.write(orjson.dumps(_label(4).model_dump(mode="json")))
    writer.append(_label(5))
    assert [h.trace_id for h in read_human_labels(path)] == ["t1", "t3", "t4", "t5"]


def test_threads_append_whole_lines(tmp_path: Path) -> None:
    writer = HumanLabelWriter(tmp_path)
    # Two writer objects (as two servers on one run would have) and four threads each.
    other = HumanLabelWriter(tmp_path)

    def write(w: HumanLabelWriter, base: int) -> None:
        for i in range(50):
            w.append(_label(base + i))

    threads = [
        threading.Thread(target=write, args=(w, 1000 * k))
        for k, w in enumerate([writer, other] * 4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = (tmp_path / "human" / "ann.jsonl").read_bytes().splitlines()
    ids = sorted(orjson.loads(x)["trace_id"] for x in lines)
    # 8 threads x 50 labels, each exactly once: 400 lines.
    assert ids == sorted(f"t{1000 * k + i}" for k in range(8) for i in range(50))


def test_repair_at_start(tmp_path: Path) -> None:
    writer = HumanLabelWriter(tmp_path)
    path = writer.append(_label(1))
    with open(path, "ab") as fh:
        fh.write(b'{"trace_id": "t2", "ann')
    HumanLabelWriter(tmp_path).repair()  # what the server does when it starts
    assert [h.trace_id for h in read_human_labels(path)] == ["t1"]


def test_reveals_go_to_their_own_folder(tmp_path: Path) -> None:
    writer = HumanLabelWriter(tmp_path)
    writer.append(_label(1))
    path = writer.append(Reveal(trace_id="t1", annotator="ann", judge="j"))
    assert path == tmp_path / "human" / "reveals" / "ann.jsonl"
    # No reader of people's labels takes a reveal for a label.
    assert [h.trace_id for h in read_human_labels(tmp_path / "human" / "ann.jsonl")] == ["t1"]
    with open(path, "ab") as fh:
        fh.write(b'{"trace_id": "t2", "ann')  # a cut last line: never acknowledged, skipped
    assert [(r.annotator, r.trace_id, r.judge) for r in read_reveals(tmp_path)] == [
        ("ann", "t1", "j")
    ]
    with open(path, "ab") as fh:
        fh.write(b"\n" + orjson.dumps({"trace_id": "t3", "annotator": "ann"}) + b"\n")
    with pytest.raises(LabelStoreError):  # a broken line in the middle is not a cut one
        read_reveals(tmp_path)
    assert read_reveals(tmp_path / "nothing") == []


def test_reveals_are_read_from_the_directory_by_every_reader(tmp_path: Path) -> None:
    """Two servers on one run (two writers, two indexes): a reveal written by one is known to
    the other at its next question (issue 34, item 5)."""
    one, two = HumanLabelWriter(tmp_path), HumanLabelWriter(tmp_path)
    index_one, index_two = RevealIndex(tmp_path), RevealIndex(tmp_path)
    assert index_two.of("ann") == frozenset() and not index_two.has("ann", "t1")
    one.append(Reveal(trace_id="t1", annotator="ann"))
    assert index_two.has("ann", "t1") and index_one.has("ann", "t1")
    two.append(Reveal(trace_id="t2", annotator="ann"))
    assert index_one.of("ann") == {"t1", "t2"}
    # Nobody else's, and never a request without a name.
    assert index_one.of("bob") == frozenset() and index_one.of(None) == frozenset()
    # Many at once (an adjudicator shown the judge's answers): one write, all of them read.
    two.append_reveals([Reveal(trace_id=f"u{i}", annotator="carol") for i in range(300)])
    assert len(index_one.of("carol")) == 300
    assert [r.trace_id for r in read_reveals(tmp_path, "ann")] == ["t1", "t2"]
    assert read_reveals(tmp_path, "dave") == []
    with pytest.raises(ValueError, match="one person"):
        one.append_reveals(
            [Reveal(trace_id="t", annotator="a"), Reveal(trace_id="t", annotator="b")]
        )


def test_a_cut_last_line_is_read_past_until_the_next_write_repairs_it(tmp_path: Path) -> None:
    """Issue 34, item 11: a full disk left a torn last line that made every read fail until
    the next write. Reads now take the whole lines before it; a bad line that ends in a
    newline (not a cut write) is still an error naming file and line."""
    from misstep.errors import InvalidRecordError
    from misstep.labels import read_human_labels

    whole = {"trace_id": "t1", "annotator": "ann", "error_type": "arithmetic",
             "first_error_step": 1}  # fmt: skip
    path = tmp_path / "ann.jsonl"
    path.write_text(
        orjson.dumps(whole).decode() + "\n" + '{"trace_id": "t2", "annot', encoding="utf-8"
    )
    assert [x.trace_id for x in read_human_labels(path)] == ["t1"]
    path.write_text(
        orjson.dumps(whole).decode() + "\n" + '{"trace_id": "t2", "annot\n', encoding="utf-8"
    )
    with pytest.raises(InvalidRecordError, match="line 2"):
        read_human_labels(path)
