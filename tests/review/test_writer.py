"""People's label files: validated names, torn tails repaired, concurrent appends whole."""

from __future__ import annotations

import threading
from pathlib import Path

import orjson
import pytest

from misstep.errors import OptionError
from misstep.labels import read_human_labels
from misstep.review import HumanLabelWriter, ReviewLabel, check_annotator


def _label(i: int, annotator: str = "ann") -> ReviewLabel:
    return ReviewLabel(
        trace_id=f"t{i}", annotator=annotator, error_type="arithmetic", verdict="error", note=str(i)
    )


@pytest.mark.parametrize(
    "name", ["", ".", "..", "../x", "a/b", "a\\b", ".hidden", "a b", "x" * 65, "a\x00b", "é"]
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
