"""The analysis options are bound whole to ``misstep.agreement.AnalysisConfig``: the CLI's
``--estimator`` choices and default are the domain's, a value the config refuses is reported
under its flag, and domain code names fields, never flags."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from misstep.agreement import DEFAULT_ESTIMATOR, ESTIMATORS, AnalysisConfig, Estimator
from misstep.cli._analysis import DEFAULT_ESTIMATOR as CLI_DEFAULT
from misstep.cli._analysis import EstimatorChoice, analysis_config
from misstep.cli._errors import flag_of
from misstep.cli.app import app
from misstep.errors import OptionError
from misstep.metrics import DEFAULT_N_BOOT, DEFAULT_SEED, LEVEL

runner = CliRunner()
SRC = Path(__file__).resolve().parents[2] / "src" / "misstep"


def test_the_cli_choices_and_default_are_the_domains() -> None:
    assert [c.value for c in EstimatorChoice] == [e.value for e in ESTIMATORS]
    assert CLI_DEFAULT.value == DEFAULT_ESTIMATOR.value == AnalysisConfig().estimator.value
    assert analysis_config(estimator=EstimatorChoice.pooled).estimator is Estimator.POOLED


def test_the_config_owns_the_defaults() -> None:
    config = AnalysisConfig()
    assert (config.n_boot, config.level, config.seed) == (DEFAULT_N_BOOT, LEVEL, DEFAULT_SEED)
    assert config.estimator is Estimator.PPI and config.simultaneous is False
    # every field carries its docstring
    assert all(f.description for f in AnalysisConfig.model_fields.values())


@pytest.mark.parametrize(
    ("fields", "flag"),
    [({"seed": -1}, "--seed"), ({"n_boot": 0}, "--n-boot"), ({"level": 1.5}, "--level")],
)
def test_a_refused_field_names_its_flag(fields: dict[str, object], flag: str) -> None:
    with pytest.raises(OptionError) as info:
        analysis_config(**fields)
    field = next(iter(fields))
    assert info.value.option == field  # the domain's name ...
    assert flag_of(field) == flag  # ... which the CLI reports as its flag


def test_seed_below_zero_is_an_option_error_on_the_command_line(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    traces.write_text(
        json.dumps({"problem_id": "p", "response": "4", "pred_answer": "4", "correct": True})
        + "\n",
        encoding="utf-8",
    )
    run = tmp_path / "run"
    run.mkdir()
    (run / "labels.jsonl").write_text("", encoding="utf-8")
    for args in (["summary", str(traces), "--labels", str(run)], ["link", str(traces)]):
        result = runner.invoke(app, [*args, "--labels", str(run), "--seed", "-1"])
        assert result.exit_code == 2, result.output
        assert "--seed=-1 is not allowed" in " ".join(result.stderr.split())
    unknown = runner.invoke(app, ["summary", str(traces), "--labels", str(run), "--estimator", "x"])
    assert unknown.exit_code == 2 and "--estimator" in unknown.stderr


def test_a_too_large_k_is_refused_under_its_flag_with_a_hint(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    rows = [
        {"problem_id": "p", "sample_idx": i, "response": "4", "pred_answer": "4", "correct": True}
        for i in range(2)
    ]
    traces.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = runner.invoke(app, ["summary", str(traces), "--k", "1,4"])
    assert result.exit_code == 2, result.output
    text = " ".join(result.stderr.split())
    assert "--k='1,4' is not allowed" in text and "e.g. --k 1,2" in text


ANALYSIS_PACKAGES = ("agreement", "metrics", "link")


@pytest.mark.parametrize("package", ANALYSIS_PACKAGES)
def test_domain_option_errors_name_fields_not_flags(package: str) -> None:
    # OptionError(option="--x", ...) in an analysis package would name a flag: only cli/ may.
    bad = []
    for path in sorted((SRC / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "option":
                value = node.value
                if isinstance(value, ast.Constant) and str(value.value).startswith("--"):
                    bad.append(f"{path.relative_to(SRC)}:{node.value.lineno} {value.value}")
    assert not bad, "flags named in domain code:\n" + "\n".join(bad)
