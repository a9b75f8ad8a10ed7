"""One CLI: shared options, checks before any trace is read, exit statuses, the cache, and a
label run that belongs to its input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from misstep import __version__
from misstep.cli.app import app

runner = CliRunner()


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _traces(path: Path, checkpoints: tuple[str, ...] = ("c1", "c2")) -> Path:
    rows = []
    for ck in checkpoints:
        for p in range(3):
            for i in range(4):
                wrong = (i + p) % 2
                rows.append(
                    {
                        "checkpoint": ck,
                        "problem_id": f"p{p}",
                        "sample_idx": i,
                        "gold_answer": "12",
                        "response": "We have 3 * 4 = 13.\n\nSo \\boxed{13}"
                        if wrong
                        else "We have 3 * 4 = 12.\n\nSo \\boxed{12}",
                    }
                )
    return _write(path, rows)


def _label(traces: Path, run: Path) -> None:
    result = runner.invoke(app, ["label", str(traces), "--out", str(run)])
    assert result.exit_code == 0, result.output


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"misstep {__version__}"


def test_help_loads_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from misstep.cli.app import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('pandas', 'numpy', 'scipy', 'sklearn', 'matplotlib', 'pyarrow',"
        " 'misstep.metrics', 'misstep.rollouts', 'misstep.judge') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "HEAVY []" in out


def test_second_command_reads_the_cache_and_no_cache_grades(tmp_path: Path) -> None:
    traces = _traces(tmp_path / "t.jsonl")
    first = runner.invoke(app, ["summary", str(traces), "--format", "json"])
    second = runner.invoke(app, ["coverage", str(traces), "--format", "json"])
    third = runner.invoke(app, ["summary", str(traces), "--format", "json", "--no-cache"])
    assert "24 traces graded" in first.stderr
    assert "24 traces read from the cache" in second.stderr
    assert "24 traces graded" in third.stderr
    assert json.loads(first.stdout) == json.loads(third.stdout)
    listed = runner.invoke(app, ["cache", "list"])
    assert listed.exit_code == 0 and "t.jsonl" in listed.stdout and "1 cached" in listed.stderr
    cleared = runner.invoke(app, ["cache", "clear"])
    assert cleared.exit_code == 0 and "removed 2 file(s)" in cleared.stderr


def test_empty_input_is_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "e.jsonl"
    empty.write_text("", encoding="utf-8")
    for command in (["summary"], ["coverage"]):
        result = runner.invoke(app, [*command, str(empty)])
        assert result.exit_code == 2 and "no traces" in result.stderr


def test_labels_of_another_input_are_refused(tmp_path: Path) -> None:
    mine = _traces(tmp_path / "mine.jsonl")
    other = _traces(tmp_path / "other.jsonl", ("c1",))
    run = tmp_path / "run"
    _label(other, run)
    for args in (
        ["summary", str(mine), "--labels", str(run)],
        ["link", str(mine), "--labels", str(run)],
        ["sample", str(mine), "--labels", str(run), "--out", str(tmp_path / "task.jsonl")],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        # The message names both inputs.
        assert "other.jsonl" in result.stderr and "mine.jsonl" in result.stderr
        assert "Traceback" not in result.output
    # A deliberate subset: the run labels c1 of the same problems, joined by trace_id.
    result = runner.invoke(
        app,
        [
            *("summary", str(mine), "--labels", str(run)),
            *("--labels-from-other-input", "--format", "json"),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = {r["checkpoint"]: r for r in json.loads(result.stdout)}
    assert rows["c1"]["labelled_share"] == 1.0 and rows["c1"]["error_dist"] is not None
    # c2 has wrong traces but none is labelled: "no labels", never 0%.
    assert rows["c2"]["n_labelled"] == 0 and rows["c2"]["error_dist"] is None
    table = runner.invoke(
        app, ["summary", str(mine), "--labels", str(run), "--labels-from-other-input"]
    )
    assert "no labels" in table.stdout


def test_label_into_a_run_of_another_input_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _label(_traces(tmp_path / "a.jsonl"), run)
    before = (run / "labels.jsonl").read_bytes()
    result = runner.invoke(
        app, ["label", str(_traces(tmp_path / "b.jsonl", ("c9",))), "-o", str(run)]
    )
    assert result.exit_code == 2
    assert "a.jsonl" in result.stderr and "b.jsonl" in result.stderr
    assert (run / "labels.jsonl").read_bytes() == before  # nothing appended


def test_bad_output_paths_are_exit_2(tmp_path: Path) -> None:
    traces = _traces(tmp_path / "t.jsonl")
    run = tmp_path / "run"
    _label(traces, run)
    a_file = tmp_path / "file.txt"
    a_file.write_text("x", encoding="utf-8")
    human = _write(
        tmp_path / "h.jsonl", [{"trace_id": "c1/default/p0/1", "annotator": "a", "error_type": "x"}]
    )
    cases = [
        ["sample", str(traces), "--labels", str(run), "--out", str(tmp_path)],
        ["sample", str(traces), "--labels", str(run), "--out", str(a_file / "task.jsonl")],
        ["import-labels", str(human), "--out", str(a_file / "h.jsonl")],
        ["demo", "--out", str(a_file)],
        [
            *("summary", str(traces), "--labels", str(run)),
            *("--human", str(human), "--plot", str(tmp_path)),
        ],
        ["report", str(traces), "--labels", str(run), "--out", str(a_file / "r.html")],
    ]
    for args in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "error:" in result.stderr and "Traceback" not in result.output


def test_missing_labels_is_reported_before_grading(tmp_path: Path) -> None:
    traces = _traces(tmp_path / "t.jsonl")
    result = runner.invoke(app, ["link", str(traces), "--labels", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "--labels" in result.stderr
    assert "graded" not in result.stderr  # stopped before reading a trace


@pytest.mark.parametrize("k", ["a", "0", "1,,x"])
def test_bad_k_is_reported_before_grading(tmp_path: Path, k: str) -> None:
    traces = _traces(tmp_path / "t.jsonl")
    result = runner.invoke(app, ["summary", str(traces), "--k", k])
    assert result.exit_code == 2 and "--k" in result.stderr and "graded" not in result.stderr


def test_rules_judge_correction_is_not_identified(tmp_path: Path) -> None:
    # The rules judge says only arithmetic or other: people's misread and theorem_misuse cannot
    # be told apart from them, so no corrected share is shown for those types.
    traces = _traces(tmp_path / "t.jsonl")
    run = tmp_path / "run"
    _label(traces, run)
    labels = [json.loads(line) for line in (run / "labels.jsonl").read_text().splitlines()]
    ok = [r["trace_id"] for r in labels if r["status"] == "ok"]
    people = ["misread", "theorem_misuse", "arithmetic", "other"]
    human = _write(
        tmp_path / "h.jsonl",
        [{"trace_id": t, "annotator": "a", "error_type": people[i % 4]} for i, t in enumerate(ok)],
    )
    args = ["summary", str(traces), "--labels", str(run), "--human", str(human)]
    args += ["--estimator", "pooled"]  # identification is the pooled inversion's question
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)[0]
    corrected = row["error_dist_corrected"]
    assert corrected["misread"] is None and corrected["theorem_misuse"] is None
    assert corrected["broken_derivation"] is None  # no person gave it
    table = runner.invoke(app, args)
    assert "n/i" in table.stdout and "not identified" in table.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_exit_2_without_traceback(tmp_path: Path) -> None:
    human = _write(
        tmp_path / "h.jsonl", [{"trace_id": "t", "annotator": "a", "error_type": "other"}]
    )
    result = runner.invoke(app, ["import-labels", str(human), "--out", "/dev/full"])
    assert result.exit_code == 2 and "/dev/full" in result.stderr
    assert "Traceback" not in result.output


def test_hints_name_only_options_that_exist(tmp_path: Path) -> None:
    human = tmp_path / "h.jsonl"
    human.write_text('{"annotator": "a", "error_type": "other"}\n', encoding="utf-8")
    for args in (["agree", "--human", str(human)], ["import-labels", str(human), "-o", "x"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "--skip-invalid" not in result.stderr, result.stderr
    traces = tmp_path / "t.jsonl"
    traces.write_text('{"problem_id": "p"}\n', encoding="utf-8")  # no response
    result = runner.invoke(app, ["summary", str(traces)])
    assert result.exit_code == 2 and "--skip-invalid" in result.stderr


def test_label_writes_nothing_before_a_valid_row(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    traces.write_text('{"problem_id": "p"}\n', encoding="utf-8")
    run = tmp_path / "run"
    result = runner.invoke(app, ["label", str(traces), "--out", str(run)])
    assert result.exit_code == 2
    assert not run.exists() or not any(run.iterdir())


def test_broken_files_are_exit_2_without_traceback(tmp_path: Path) -> None:
    import gzip

    good = b'{"problem_id": "p", "response": "\\\\boxed{1}", "gold_answer": "1"}\n' * 3000
    truncated = tmp_path / "t.jsonl.gz"
    packed = gzip.compress(good)
    truncated.write_bytes(packed[: len(packed) // 2])
    parquet = tmp_path / "t.parquet"
    parquet.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    csv = tmp_path / "t.csv"
    csv.write_bytes(b"problem_id,response\np,caf\xe9\n")
    for path, words in (
        (truncated, "cannot read past line"),
        (parquet, "Parquet"),
        (csv, "line 2"),
    ):
        result = runner.invoke(app, ["summary", str(path)])
        assert result.exit_code == 2, result.output
        assert words in result.stderr and "Traceback" not in result.output


def _commands(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for name, command in group.commands.items():
        if hasattr(command, "commands"):  # a group (typer's click may be its own copy)
            out.extend(_commands(command, f"{prefix}{name} "))
        else:
            out.append((prefix + name, command))
    return out


def test_every_command_that_reads_traces_takes_no_cache() -> None:
    import typer.main

    reading = []
    for name, command in _commands(typer.main.get_command(app)):
        params = {p.name for p in command.params}
        # TRACES as the argument: the input graded through the cache (`agree --traces` reads
        # rows only for their checkpoint and dataset: no grading, no cache)
        if any(p.name == "traces" and p.param_type_name == "argument" for p in command.params):
            reading.append(name)
            assert "no_cache" in params, f"`misstep {name}` reads traces but has no --no-cache"
    # label, select and batch export-requests got it last; the analysis commands had it
    assert {"label", "select", "report", "voting", "summary"} <= set(reading)


def test_labels_option_finds_the_one_label_run_in_a_folder(tmp_path: Path) -> None:
    """``--labels demo-run`` reads demo-run/labels; a folder with two runs is refused naming
    both, one with none says so (issue 27 item 6)."""
    traces = _traces(tmp_path / "t.jsonl")
    holder = tmp_path / "holder"
    _label(traces, holder / "labels")
    direct = runner.invoke(app, ["summary", str(traces), "--labels", str(holder / "labels")])
    found = runner.invoke(app, ["summary", str(traces), "--labels", str(holder)])
    assert direct.exit_code == 0 and found.exit_code == 0, found.output
    assert found.stdout == direct.stdout
    _label(traces, holder / "second")
    two = runner.invoke(app, ["summary", str(traces), "--labels", str(holder)])
    assert two.exit_code == 2
    assert "holds 2 label runs" in two.output and "second" in two.output
    empty = tmp_path / "empty"
    empty.mkdir()
    none = runner.invoke(app, ["link", str(traces), "--labels", str(empty)])
    assert none.exit_code == 2 and "not a label run" in none.output


def test_label_table_lists_checkpoints_in_training_order(tmp_path: Path) -> None:
    """By step, not by name: step 9 comes before step 10 (issue 27 item 4)."""
    rows = []
    for name, step in (("ckpt-b", 10), ("ckpt-a", 20), ("ckpt-c", 9)):
        for i in range(2):
            rows.append(
                {
                    "checkpoint": name,
                    "step": step,
                    "problem_id": "p",
                    "sample_idx": i,
                    "gold_answer": "12",
                    "response": "We have 3 * 4 = 13.\n\nSo \\boxed{13}",
                }
            )
    traces = _write(tmp_path / "t.jsonl", rows)
    result = runner.invoke(app, ["label", str(traces), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    table = result.output[result.output.index("error types per checkpoint") :]
    where = [table.index(name) for name in ("ckpt-c", "ckpt-b", "ckpt-a")]
    assert where == sorted(where)
