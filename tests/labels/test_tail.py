"""The one repair of a JSONL file's cut last line (labels, people's labels, selections)."""

from __future__ import annotations

from pathlib import Path

from misstep.labels import repair_tail


def test_a_whole_file_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    assert repair_tail(path) == 0
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'


def test_a_record_that_lost_only_its_newline_gets_it_back(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}')
    assert repair_tail(path) == 0
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'


def test_a_fragment_is_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": ')
    assert repair_tail(path) == len(b'{"b": ')  # 6 bytes dropped
    assert path.read_bytes() == b'{"a": 1}\n'


def test_a_long_fragment_spanning_several_blocks_is_cut_whole(tmp_path: Path) -> None:
    # 200,000 bytes without a newline: more than three 64 KiB blocks to walk back through.
    fragment = b'{"explanation": "' + b"x" * (200_000 - 17)
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n' + fragment)
    assert repair_tail(path) == 200_000
    assert path.read_bytes() == b'{"a": 1}\n'


def test_a_file_of_one_fragment_becomes_empty(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a"')
    assert repair_tail(path) == 4
    assert path.read_bytes() == b""


def test_a_missing_or_empty_file_is_fine(tmp_path: Path) -> None:
    assert repair_tail(tmp_path / "none.jsonl") == 0
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert repair_tail(tmp_path / "empty.jsonl") == 0
