"""The commands on harness outputs as their harnesses wrote them (the real excerpts of
tests/rollouts/data/harness): the reading options, the default human output of summary,
coverage, link and report (no traceback, no cut cell), and the refusals a user meets."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from misstep.cli.app import app

runner = CliRunner()
DATA = Path(__file__).parents[1] / "rollouts" / "data" / "harness"
TORA_FILE = "test_tora_-1_seed0_t0.0_s0_e1319.jsonl"
QWEN_LAYOUT = "{checkpoint}/math_eval/{dataset}/*"


def _ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "…" not in result.stdout, result.stdout  # no cut value or header
    return result.stdout


@pytest.fixture
def qwen_folder(tmp_path: Path) -> Path:
    """ToRA's real GSM8K outputs in the Qwen2.5-Math harness's layout (output_dir =
    <model>/math_eval), and the same files again as a second benchmark's."""
    root = tmp_path / "outputs"
    for model in ("tora-70b-v1.0", "tora-code-34b-v1.0"):
        source = DATA / "tora" / model / "gsm8k" / TORA_FILE
        for bench in ("gsm8k", "gsm8k-copy"):
            target = root / model / "math_eval" / bench / TORA_FILE
            target.parent.mkdir(parents=True)
            shutil.copy(source, target)
            (target.parent / "test_tora_-1_seed0_t0.0_s0_e1319_tora_metrics.json").write_text("{}")
    return root


def test_summary_of_a_harness_folder_per_model_and_benchmark(qwen_folder: Path) -> None:
    base = ["summary", str(qwen_folder), "--input-format", "qwen-math-eval"]
    args = [*base, "--path-fields", QWEN_LAYOUT, "--by", "dataset", "--k", "1"]
    table = _ok(runner.invoke(app, args))
    for name in ("tora-70b-v1.0", "tora-code-34b-v1.0", "gsm8k", "gsm8k-copy"):
        assert name in table
    rows = json.loads(_ok(runner.invoke(app, [*args, "--format", "json"])))
    got = {(r["checkpoint"], r["dataset"]): (r["n_problems"], r["pass@1"]) for r in rows}
    # 20 problems each; misstep grades ToRA's rows (no score): 16 and 12 of 20 right
    assert got == {
        ("tora-70b-v1.0", "gsm8k"): (20, 0.8),
        ("tora-70b-v1.0", "gsm8k-copy"): (20, 0.8),
        ("tora-code-34b-v1.0", "gsm8k"): (20, 0.6),
        ("tora-code-34b-v1.0", "gsm8k-copy"): (20, 0.6),
    }


def test_harness_grade_is_the_grade_and_regrade_is_misstep_own() -> None:
    folder = DATA / "realcritic"
    args = [
        "summary",
        str(folder),
        "--path-fields",
        QWEN_LAYOUT,
        "--map",
        "response=reasoning",
        "--k",
        "1",
        "--format",
        "json",
    ]
    (kept,) = json.loads(_ok(runner.invoke(app, args)))
    assert (kept["n_problems"], kept["n_correct"]) == (16, 13)  # the harness's score: 13/16
    result = runner.invoke(app, [*args, "--regrade"])
    (mine,) = json.loads(_ok(result))
    # misstep's own grade is the harness's on every row (o1-mini's "**Final Answer:**" ending,
    # the answer on the line below, is read since GRADER_VERSION 11)
    assert mine["n_correct"] == 13
    assert "misstep's grade differs from the harness's on 0 of 16 traces" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "reading"),
    [
        ("nemo-skills", []),
        ("tora", ["--input-format", "qwen-math-eval", "--path-fields", "{checkpoint}/{dataset}/*"]),
        ("lm-eval", ["--path-fields", "samples_{dataset}_{checkpoint}.jsonl"]),
        ("inspect", ["--path-fields", "{dataset}.eval"]),
    ],
)
def test_default_output_of_the_analysis_commands(
    tmp_path: Path, name: str, reading: list[str]
) -> None:
    if name == "inspect":
        pytest.importorskip("inspect_ai")
    traces = str(DATA / name)
    labels = tmp_path / "labels"
    _ok(runner.invoke(app, ["label", traces, "--out", str(labels), *reading]))
    _ok(runner.invoke(app, ["summary", traces, *reading]))
    _ok(runner.invoke(app, ["summary", traces, *reading, "--labels", str(labels)]))
    _ok(runner.invoke(app, ["coverage", traces, *reading]))
    _ok(runner.invoke(app, ["link", traces, "--labels", str(labels), *reading]))
    report = tmp_path / "report.html"
    out = ["report", traces, "--labels", str(labels), "--out", str(report), *reading]
    _ok(runner.invoke(app, out))
    assert report.stat().st_size > 0


def test_a_file_misstep_cannot_read_says_how_to_read_it(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text('{"uid": 1, "prompt": "1+1?", "completion": "2", "label": "2"}\n')
    result = runner.invoke(app, ["summary", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    text = " ".join(result.output.split())
    assert "its keys: uid, prompt, completion, label" in text
    assert "--map problem_id=uid,response=completion,gold_answer=label,problem=prompt" in text
    assert "qwen-math-eval" in text and "lm-eval-harness" in text and "inspect" in text
    mapped = ["--map", "problem_id=uid,response=completion,gold_answer=label,problem=prompt"]
    _ok(runner.invoke(app, ["summary", str(path), *mapped]))


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--map", "problem_id", "is not FIELD=COLUMN"),
        ("--map", "answer=x", "not a field misstep reads"),
        ("--path-fields", "{response}/*", "a trace's content"),
    ],
)
def test_bad_reading_options_are_refused_before_any_work(
    tmp_path: Path, option: str, value: str, says: str
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"problem_id": "p", "response": "r"}\n')
    result = runner.invoke(app, ["summary", str(path), option, value])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert option in result.output and says in " ".join(result.output.split())


def test_input_format_choices_are_the_readers() -> None:
    from misstep.cli._options import InputFormat
    from misstep.rollouts import INPUT_FORMATS

    assert [f.value for f in InputFormat] == list(INPUT_FORMATS)


def test_the_review_apps_texts_read_a_harness_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from misstep.review._texts import open_trace_texts
    from misstep.rollouts import ReadSpec, load_graded

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    spec = ReadSpec(format="qwen-math-eval", path_fields="{checkpoint}/{dataset}/*").text()
    folder = DATA / "tora"
    run = load_graded(folder, input_format=spec)
    ids = list(run.table["trace_id"])
    texts = open_trace_texts(folder, ids, input_sha256=run.input_sha256, input_format=spec)
    try:
        trace = texts.trace(25, ids[25])
    finally:
        texts.close()
    assert trace is not None and trace.trace_id == "tora-code-34b-v1.0/gsm8k/5/0"
    assert trace.response.startswith("```python")
