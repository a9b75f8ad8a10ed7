"""The domain names config fields in its errors, only the CLI names flags: one mapping
(``cli._errors.flag_of``), applied at the error boundary."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from misstep.cli._errors import flag_of, handles_errors
from misstep.errors import OptionError


@pytest.mark.parametrize(
    ("option", "flag"),
    [
        ("max_tokens", "--max-tokens"),
        ("samples", "--samples"),
        ("backend", "--judge"),
        ("timeout_s", "--timeout"),
        ("deadline_s", "--deadline"),
        ("engine_args", "--engine-arg"),
        ("taxonomy_path", "--taxonomy"),
        ("--judge-id", "--judge-id"),  # a flag already
        ("judge name", "judge name"),  # no field
    ],
)
def test_flag_of(option: str, flag: str) -> None:
    assert flag_of(option) == flag


def test_the_boundary_names_the_flag_and_the_settings_of_the_hint() -> None:
    app = typer.Typer()

    @app.command()
    @handles_errors
    def command() -> None:
        raise OptionError(
            option="max_trace_tokens",
            value=0,
            allowed="1 or more",
            hint="e.g. `max_trace_tokens=6000`, or `backend=rules`",
        )

    result = CliRunner().invoke(app, [])
    assert result.exit_code == 2
    assert "--max-trace-tokens=0 is not allowed: 1 or more" in result.output
    assert "e.g. `--max-trace-tokens 6000`, or `--judge rules`" in result.output


def test_every_judge_and_discover_option_shows_its_config_s_default() -> None:
    # The options take their defaults from misstep.defaults, as the config models do: what
    # --help shows is what the Python API and a stored configuration use.
    from misstep.cli.app import app
    from misstep.defaults import SelectDefaults
    from misstep.discover import DiscoverConfig, JudgeDiscoverSettings
    from misstep.judge import JudgeConfig

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    configs = {
        "label": [JudgeConfig],
        "export-requests": [JudgeConfig],
        "select": [JudgeConfig],
        "discover": [DiscoverConfig, JudgeDiscoverSettings],
    }
    own = {("select", "--max-tokens"): SelectDefaults.max_tokens,
           ("select", "--judge"): SelectDefaults.backend}  # fmt: skip
    checked = 0
    for name, models in configs.items():
        for param in commands[name].params:
            flag = param.opts[0]
            if (name, flag) in own:
                assert param.default == own[(name, flag)]
                continue
            for model in models:
                field = next((f for f in model.model_fields if flag_of(f) == flag), None)
                if field is None or param.default is None or param.required:
                    continue
                default = model.model_fields[field].default
                assert param.default == default, (name, flag, param.default, default)
                checked += 1
    assert checked >= 25  # every judge and discover option with a default was compared
