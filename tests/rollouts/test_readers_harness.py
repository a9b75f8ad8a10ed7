"""The harnesses' readers on hand-made rows in each harness's own shape: one trace per sample,
the harness's grade as ``correct``, its answer as ``harness_answer``, formats recognised from
the first row, folders, and the refusals (two runs in one folder, a log-likelihood task)."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest

from misstep.errors import InputFormatError, InvalidRecordError
from misstep.rollouts import ReadSpec, grade_traces, read_traces, resolve_format


def _write(path: Path, rows: list[dict[str, Any]], *, packed: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(orjson.dumps(r) + b"\n" for r in rows)
    path.write_bytes(gzip.compress(data) if packed else data)
    return path


# --- Qwen2.5-Math / ToRA --------------------------------------------------------------------

QWEN = {
    "idx": 7,
    "question": "What is 2 + 3?",
    "gt_cot": "2 + 3 = 5",
    "gt": "5",
    "code": ["2 + 3 = 5, so \\boxed{5}", "2 + 3 = 6, so \\boxed{6}", "it is \\boxed{5}"],
    "pred": ["5", "6", "5"],
    "report": [None, "Timeout", None],
    "score": [True, False, True],
}


def test_qwen_rows_become_one_trace_per_sample(tmp_path: Path) -> None:
    path = _write(tmp_path / "out" / "gsm8k" / "test_cot_-1_seed0_t0.7_s0_e-1.jsonl", [QWEN])
    traces = list(read_traces(path))
    assert [t.sample_idx for t in traces] == [0, 1, 2]
    first, second = traces[0], traces[1]
    assert (first.problem_id, first.dataset, first.checkpoint) == ("7", "gsm8k", "default")
    assert (first.gold_answer, first.problem) == ("5", "What is 2 + 3?")
    assert [t.correct for t in traces] == [True, False, True]
    assert [t.harness_answer for t in traces] == ["5", "6", "5"]
    assert second.response == "2 + 3 = 6, so \\boxed{6}"
    # each sample keeps its own report; the rest of the row goes to extra once
    assert second.extra == {"gt_cot": "2 + 3 = 5", "report": "Timeout"}


def test_qwen_without_score_is_graded_by_misstep(tmp_path: Path) -> None:
    # ToRA's files have no score: correct stays unknown and misstep grades against gt.
    row = {k: v for k, v in QWEN.items() if k != "score"}
    path = _write(tmp_path / "gsm8k" / "test.jsonl", [row])
    traces = list(read_traces(path, input_format="qwen-math-eval"))
    assert [t.correct for t in traces] == [None, None, None]
    table = grade_traces(traces)
    assert list(table["correct"]) == [True, False, True]  # 5 = 5, 6 != 5, 5 = 5
    assert list(table["harness_correct"].isna()) == [True, True, True]


def test_qwen_graded_table_keeps_the_harness_beside_misstep(tmp_path: Path) -> None:
    row = dict(QWEN, score=[True, True, False])  # the harness's grade, deliberately off
    path = _write(tmp_path / "gsm8k" / "test.jsonl", [row])
    kept = grade_traces(read_traces(path))
    assert list(kept["correct"]) == [True, True, False]  # the harness's grade is the grade
    regraded = grade_traces(read_traces(path), regrade=True)
    assert list(regraded["correct"]) == [True, False, True]  # misstep's own: 5, 6, 5 vs 5
    assert list(regraded["harness_correct"]) == [True, True, False]
    assert list(regraded["harness_answer"]) == ["5", "6", "5"]


def test_qwen_fork_with_another_response_column(tmp_path: Path) -> None:
    row = {k: v for k, v in QWEN.items() if k != "code"} | {"reasoning": QWEN["code"]}
    path = _write(tmp_path / "math" / "test.jsonl", [row])
    with pytest.raises(InvalidRecordError) as info:
        list(read_traces(path))  # recognised by gt, pred, report, score
    assert info.value.field == "code" and "required field is missing" in str(info.value)
    spec = ReadSpec(columns={"response": "reasoning"})
    assert [t.response for t in read_traces(path, input_format=spec)] == QWEN["code"]


def test_qwen_sample_lists_must_match(tmp_path: Path) -> None:
    path = _write(tmp_path / "math" / "test.jsonl", [dict(QWEN, score=[True, False])])
    with pytest.raises(InvalidRecordError) as info:
        list(read_traces(path))
    assert info.value.field == "score" and "2 values for 3 responses" in str(info.value)


def test_qwen_gzip_and_folder_with_path_fields(tmp_path: Path) -> None:
    for model in ("qwen-1.5b", "qwen-7b"):
        for dataset in ("gsm8k", "math"):
            folder = tmp_path / model / "math_eval" / dataset
            _write(folder / "test_cot_-1_seed0_t0.0_s0_e-1.jsonl.gz", [QWEN], packed=True)
            (folder / "test_cot_-1_seed0_t0.0_s0_e-1_cot_metrics.json").write_text("{}")
    spec = ReadSpec(path_fields="{checkpoint}/math_eval/{dataset}/*")
    traces = list(read_traces(tmp_path, input_format=spec))
    pairs = sorted({(t.checkpoint, t.dataset) for t in traces})
    assert pairs == [
        ("qwen-1.5b", "gsm8k"),
        ("qwen-1.5b", "math"),
        ("qwen-7b", "gsm8k"),
        ("qwen-7b", "math"),
    ]
    assert len(traces) == 4 * 3


# --- lm-evaluation-harness ------------------------------------------------------------------


def _lm_row(doc_id: int, filt: str, answer: str, grade: float, gen: str) -> dict[str, Any]:
    return {
        "doc_id": doc_id,
        "doc": {"question": f"Question {doc_id}?", "answer": f"work\n#### {doc_id + 10}"},
        "target": f"work\n#### {doc_id + 10}",
        "arguments": {"gen_args_0": {"arg_0": "Question: ...", "arg_1": {"until": ["Q:"]}}},
        "resps": [[gen]],
        "filtered_resps": [answer],
        "filter": filt,
        "metrics": ["exact_match"],
        "doc_hash": "h",
        "prompt_hash": "p",
        "target_hash": "t",
        "exact_match": grade,
    }


LM_ROWS = [
    _lm_row(0, "strict-match", "[invalid]", 0.0, "so 10 in all"),
    _lm_row(0, "flexible-extract", "10", 1.0, "so 10 in all"),
    _lm_row(1, "strict-match", "12", 0.0, "#### 12"),
    _lm_row(1, "flexible-extract", "12", 0.0, "#### 12"),
]


def test_lm_eval_reads_one_filter(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "org__model" / "samples_gsm8k_2025-01-02T03-04-05.678901.jsonl", LM_ROWS
    )
    first = list(read_traces(path))  # the file's first filter: strict-match
    assert [(t.problem_id, t.correct, t.harness_answer) for t in first] == [
        ("0", False, "[invalid]"),
        ("1", False, "12"),
    ]
    t = first[0]
    assert (t.dataset, t.checkpoint, t.gold_answer, t.problem) == (
        "gsm8k",
        "org__model",
        "10",  # GSM8K's worked solution cut after its ####
        "Question 0?",
    )
    assert t.response == "so 10 in all" and t.extra["filter"] == "strict-match"
    flexible = ReadSpec(format="lm-eval-harness", columns={"filter": "flexible-extract"})
    assert [t.correct for t in read_traces(path, input_format=flexible)] == [True, False]


def test_lm_eval_repeats_are_graded_by_misstep(tmp_path: Path) -> None:
    row = _lm_row(3, "maj@3", "13", 1.0, "")
    row["resps"] = [["... #### 13", "... #### 12", "... #### 13"]]
    path = _write(tmp_path / "m" / "samples_gsm8k_sc_2025-01-02T03-04-05.678901.jsonl", [row])
    traces = list(read_traces(path))
    assert [t.sample_idx for t in traces] == [0, 1, 2]
    # one grade for the document's majority answer: not any one generation's
    assert {t.correct for t in traces} == {None}
    assert traces[0].extra["exact_match"] == 1.0 and traces[0].extra["harness_answer"] == "13"
    assert traces[0].dataset == "gsm8k_sc"


def test_lm_eval_log_likelihood_task_is_refused(tmp_path: Path) -> None:
    row = _lm_row(0, "none", "", 1.0, "")
    row["resps"] = [[["-1.2", "False"]], [["-0.3", "True"]]]  # as sanitize_list writes them
    path = _write(tmp_path / "m" / "samples_arc_easy_2025-01-02T03-04-05.678901.jsonl", [row])
    with pytest.raises(InvalidRecordError, match="generate_until") as info:
        list(read_traces(path))
    assert info.value.field == "resps"


def test_lm_eval_folder_reads_only_samples_files(tmp_path: Path) -> None:
    _write(tmp_path / "a" / "samples_gsm8k_2025-01-02T03-04-05.678901.jsonl", LM_ROWS)
    _write(tmp_path / "b" / "samples_math_2025-01-02T03-04-05.678901.jsonl", LM_ROWS)
    (tmp_path / "a" / "results_2025-01-02T03-04-05.678901.json").write_text("{}")
    traces = list(read_traces(tmp_path))
    assert sorted({(t.checkpoint, t.dataset) for t in traces}) == [("a", "gsm8k"), ("b", "math")]


def test_two_runs_in_one_folder_are_not_mixed(tmp_path: Path) -> None:
    _write(tmp_path / "m" / "samples_gsm8k_2025-01-02T03-04-05.678901.jsonl", LM_ROWS)
    _write(tmp_path / "m" / "samples_gsm8k_2025-02-02T03-04-05.678901.jsonl", LM_ROWS)
    with pytest.raises(InvalidRecordError, match="two runs read as one"):
        list(read_traces(tmp_path))
    # the date in the file name tells them apart
    spec = ReadSpec(path_fields="samples_{dataset}_{checkpoint}.jsonl")
    runs = {t.checkpoint for t in read_traces(tmp_path, input_format=spec)}
    assert runs == {"2025-01-02T03-04-05.678901", "2025-02-02T03-04-05.678901"}


# --- NeMo-Skills ----------------------------------------------------------------------------


def _nemo(i: int, grade: Any, key: str = "symbolic_correct") -> dict[str, Any]:
    return {
        "problem": f"Problem {i}",
        "expected_answer": str(i),
        "generation": f"... \\boxed{{{i}}}",
        "predicted_answer": str(i),
        key: grade,
        "num_generated_tokens": 40 + i,
    }


def test_nemo_seed_files_are_samples(tmp_path: Path) -> None:
    folder = tmp_path / "eval-results" / "math-500"
    _write(folder / "output-rs0.jsonl", [_nemo(1, True), _nemo(2, False)])
    _write(folder / "output-rs1.jsonl", [_nemo(1, False), _nemo(2, True)])
    (folder / "metrics.json").write_text("{}")
    traces = list(read_traces(tmp_path))
    # no id column: a problem is its line's place in the file, the same in every seed's file
    got = [(t.problem_id, t.sample_idx, t.correct, t.dataset) for t in traces]
    assert got == [
        ("0", 0, True, "math-500"),
        ("1", 0, False, "math-500"),
        ("0", 1, False, "math-500"),
        ("1", 1, True, "math-500"),
    ]
    assert traces[0].harness_answer == "1" and traces[0].num_tokens == 41


def test_nemo_judgement_is_read_as_nemo_skills_reads_it(tmp_path: Path) -> None:
    rows = [
        _nemo(1, "The answers match.\nJudgement: Yes", "judgement"),
        _nemo(2, "Judgement: no", "judgement"),
        _nemo(3, "I cannot tell", "judgement"),  # NeMo-Skills counts it wrong; misstep: unknown
    ]
    path = _write(tmp_path / "aime24" / "output.jsonl", rows)
    assert [t.correct for t in read_traces(path, input_format="nemo-skills")] == [
        True,
        False,
        None,
    ]


def test_nemo_greedy_and_sampled_in_one_folder_are_refused(tmp_path: Path) -> None:
    _write(tmp_path / "gsm8k" / "output.jsonl", [_nemo(1, True)])
    _write(tmp_path / "gsm8k" / "output-rs0.jsonl", [_nemo(1, True)])
    with pytest.raises(InputFormatError, match="greedy"):
        read_traces(tmp_path)


# --- recognition ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "fmt"),
    [
        (QWEN, "qwen-math-eval"),
        (LM_ROWS[0], "lm-eval-harness"),
        (_nemo(1, True), "nemo-skills"),
        ({"problem_id": "p", "response": "r", "pred": ["x"]}, "jsonl"),
    ],
)
def test_format_recognised_from_the_first_row(
    tmp_path: Path, row: dict[str, Any], fmt: str
) -> None:
    assert resolve_format(_write(tmp_path / "x.jsonl", [row]), None) == fmt
    assert resolve_format(_write(tmp_path / "y.jsonl.gz", [row], packed=True), None) == fmt


def test_map_on_a_harness_format_names_what_it_reads(tmp_path: Path) -> None:
    path = _write(tmp_path / "gsm8k" / "t.jsonl", [QWEN])
    with pytest.raises(InputFormatError, match="does not read such a field") as info:
        read_traces(path, input_format=ReadSpec(columns={"num_tokens": "x"}))
    assert "response" in str(info.value)
