"""misstep's readers on real harness outputs nobody here wrote (``data/harness``, PROVENANCE.md
there): each (model, benchmark) with its item count, the harness's own accuracy, and misstep's
own grading (``regrade``) against the harness's, every expected value computed here from the
raw rows with plain ``json``, not through misstep."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from misstep.rollouts import ReadSpec, grade_traces, read_traces

DATA = Path(__file__).parent / "data" / "harness"

# Rows where misstep's own grade differs from the harness's, each with why. A fix that makes
# misstep agree leaves this a superset; a new difference fails the test.
KNOWN = {
    # The generation answers \boxed{1}, then runs on into a new question whose text holds an
    # empty \boxed{}: NeMo-Skills takes that last one (predicted_answer ""), misstep the last
    # non-empty one: the harness's misreading.
    ("nemo-skills", "train/algebra/635.json", 2),
}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _graded(path: Path, spec: ReadSpec, regrade: bool = False) -> pd.DataFrame:
    return grade_traces(read_traces(path, input_format=spec), regrade=regrade)


def _disagreements(table: pd.DataFrame, name: str) -> set[tuple[str, str, int]]:
    graded = table[table["harness_correct"].notna()]
    differ = graded[graded["harness_correct"].astype(bool) != graded["correct"]]
    return {(name, str(r.problem_id), int(r.sample_idx)) for r in differ.itertuples()}


def test_tora_tool_integrated_gsm8k() -> None:
    spec = ReadSpec(format="qwen-math-eval", path_fields="{checkpoint}/{dataset}/*")
    table = _graded(DATA / "tora", spec)
    for model in ("tora-70b-v1.0", "tora-code-34b-v1.0"):
        rows = _jsonl(DATA / "tora" / model / "gsm8k" / "test_tora_-1_seed0_t0.0_s0_e1319.jsonl")
        mine = table[table["checkpoint"] == model]
        assert len(mine) == len(rows) == 20 and set(mine["dataset"]) == {"gsm8k"}
        # ToRA's files carry no score: the harness's grade here is its numeric rule (pred
        # and gt equal as numbers; every pred of these rows is a number), and misstep's own
        # grading must give the same on every row.
        harness = {str(r["idx"]): float(r["pred"][0]) == float(r["gt"]) for r in rows}
        assert dict(zip(mine["problem_id"], mine["correct"], strict=True)) == harness
        assert mine["harness_correct"].isna().all()
        assert list(mine["harness_answer"]) == [r["pred"][0] for r in rows]
    # 16 of 20 and 12 of 20 by the rule (worked out by the comprehension above)
    assert table.groupby("checkpoint")["correct"].sum().to_dict() == {
        "tora-70b-v1.0": 16,
        "tora-code-34b-v1.0": 12,
    }


def test_qwen_harness_folder_with_score() -> None:
    spec = ReadSpec(
        path_fields="{checkpoint}/math_eval/{dataset}/*", columns={"response": "reasoning"}
    )
    path = DATA / "realcritic" / "o1-mini" / "critic_bench_cot" / "math_eval" / "math"
    rows = _jsonl(path / "test.jsonl")
    kept = _graded(DATA / "realcritic", spec)
    assert len(kept) == len(rows) == 16
    assert set(zip(kept["checkpoint"], kept["dataset"], strict=True)) == {
        ("critic_bench_cot", "math")
    }
    # the harness's accuracy, reproduced from its score: 13 of 16
    assert int(kept["correct"].sum()) == sum(r["score"][0] for r in rows) == 13
    regraded = _graded(DATA / "realcritic", spec, regrade=True)
    assert _disagreements(regraded, "realcritic") <= KNOWN


def test_lm_eval_harness_samples() -> None:
    spec = ReadSpec(path_fields="samples_{dataset}_{checkpoint}.jsonl")
    table = _graded(DATA / "lm-eval", spec)
    for file in sorted((DATA / "lm-eval" / "gemma3-12b").glob("samples_*.jsonl")):
        rows = _jsonl(file)
        run = file.stem.removeprefix("samples_gsm8k_")
        mine = table[table["checkpoint"] == run]
        assert len(mine) == len(rows) == 3 and set(mine["dataset"]) == {"gsm8k"}
        assert int(mine["correct"].sum()) == sum(r["exact_match"] for r in rows)
    # 1 of 3 (the tuned run) and 2 of 3 (the base run), as the files' exact_match say
    assert table.groupby("checkpoint")["correct"].sum().tolist() == [1, 2]
    regraded = _graded(DATA / "lm-eval", spec, regrade=True)
    assert _disagreements(regraded, "lm-eval") <= KNOWN


def test_nemo_skills_seed_files() -> None:
    folder = DATA / "nemo-skills" / "eval-results" / "math"
    table = _graded(DATA / "nemo-skills", ReadSpec())
    assert len(table) == 36 and set(table["dataset"]) == {"math"}
    for seed in range(3):
        rows = _jsonl(folder / f"output-rs{seed}.jsonl")
        mine = table[table["sample_idx"] == seed]
        assert list(mine["problem_id"]) == [r["id"] for r in rows]
        assert int(mine["correct"].sum()) == sum(r["symbolic_correct"] for r in rows)
    assert int(table["correct"].sum()) == 10 + 10 + 9
    regraded = _graded(DATA / "nemo-skills", ReadSpec(), regrade=True)
    assert _disagreements(regraded, "nemo-skills") <= KNOWN


def _samples_of(log: Path) -> list[dict[str, Any]]:
    """An .eval log's samples read from its zip without inspect_ai: the independent check."""
    with zipfile.ZipFile(log) as archive:
        names = sorted(n for n in archive.namelist() if n.startswith("samples/"))
        return [json.loads(archive.read(n)) for n in names]


def test_inspect_logs() -> None:
    pytest.importorskip("inspect_ai")
    spec = ReadSpec(path_fields="{dataset}.eval")
    table = _graded(DATA / "inspect", spec)
    for log in sorted((DATA / "inspect").glob("*.eval")):
        samples = _samples_of(log)
        mine = table[table["dataset"] == log.stem]
        assert len(mine) == len(samples)
        first_scores = [next(iter(s["scores"].values()))["value"] for s in samples]
        assert int(mine["correct"].sum()) == sum(v == "C" for v in first_scores)
    assert table.groupby("dataset")["correct"].sum().to_dict() == {
        "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB": 8,
        "log_streaming": 3,
        "mmlu-summary-choices": 0,
    }
    assert set(table["checkpoint"]) == {
        "openai/gpt-4o-mini",
        "azureai/Meta-Llama-3-1-405B-Instruct-jqf",
        "openai/gpt-4o",
    }


def test_inspect_read_inside_an_event_loop_leaves_asyncio_alone() -> None:
    # A label run reads its input again inside its event loop: inspect_ai's synchronous
    # readers would patch asyncio for the whole process there (nest_asyncio).
    pytest.importorskip("inspect_ai")
    import asyncio

    async def read() -> int:
        return len(list(read_traces(DATA / "inspect" / "log_streaming.eval")))

    assert asyncio.run(read()) == 4
    assert asyncio.run.__module__ == "asyncio.runners"
