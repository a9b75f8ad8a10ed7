"""Every command as a person sees it: its default human output (tables, not JSON), on the demo
run, on each run in ../shared/data (processbench, mrben, reasoning_gym_eval), and on a
one-sample-per-problem subset of each.

A command fails here on a traceback, on a non-zero exit that is not one of the documented
refusals listed in ``REFUSALS`` (a MisstepError's message and exit status), on a cut value
or header (rich's ``…``), and, where it has ``--format json``, on a table missing a column
that its JSON has (``COLUMNS`` maps every JSON key to the header that shows it; a JSON key
without an entry fails too).

Speed: one module-wide graded-table cache (every input is graded once), one rules-judge label
run per run reused by every command, built by a module-scoped fixture. ``review``, ``select``,
``export-requests`` and ``ingest-replies`` need a model server or a browser and are tested in
tests/review, tests/pipelines and tests/judge.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from misstep.cli.app import app
from misstep.metrics import ONE_SAMPLE_REASON
from tests.conftest import SHARED_DATA, DemoRun

runner = CliRunner()

SHARED_RUNS = {
    "processbench": ("processbench/traces.jsonl", "processbench/human_labels.jsonl"),
    "mrben": ("mrben/traces.jsonl", "mrben/human_labels.jsonl"),
    "rl": ("reasoning_gym_eval/llama_rl_ckpts.jsonl.gz", None),
}
RUNS = ["demo", "demo-one", *(f"{n}{s}" for n in SHARED_RUNS for s in ("", "-one"))]

# (command, run or "*") -> a fragment of the documented refusal's message.
REFUSALS = {
    ("agree", "*"): "needs at least two raters",
    # A rules-judge run types only `arithmetic` (the rest abstains, no type): no `other`
    # label's explanation to cluster.
    ("discover", "*"): "needs at least 20 texts to cluster",
}

# JSON key -> the header words that show it ("" where the key is shown inside another
# column's cells: an interval under its value, a share beside its count).
_SUMMARY = {
    "checkpoint": "checkpoint",
    "dataset": "",  # a column only when there are several datasets
    "n_problems": "problems (count)",
    "n_samples": "samples (count)",
    "answer_entropy": "entropy (bits)",
    "top1_share": "top1 (share)",
    "wrong_consistency": "wrong cons. (share)",
    "majority_failures": "MV failures (count, share)",
    "majority_failure_rate": "MV failures (count, share)",
    "n_correct": "correct (count)",
    "n_wrong": "wrong (count)",
    "n_truncated": "truncated (count)",
    "n_no_answer": "no answer (count)",
    "change": "Change from the previous checkpoint",
}
_VOTING = {
    "checkpoint": "checkpoint",
    "dataset": "",  # a column only when there are several datasets
    "n_problems": "problems (count)",
    "majority_failures": "MV failures (count)",
    "aggregators": "aggregator",
    "name": "aggregator",
    "score": "score (share)",
    "score_se": "± (Monte Carlo SE)",
    "samples_used": "samples used (per problem)",
    "failures_avoided": "failures avoided (count)",
}
_COVERAGE = {
    "checkpoints": "checkpoint",
    "n_problems": "solved (count)",
    "solved": "solved (count)",
    "retention": "retention (share)",
    "acquisition": "acquisition (share)",
    "forgetting": "forgetting (share)",
    "jaccard": "Jaccard similarity",
    "union_coverage": "union coverage",
    "union_coverage_at_budget": "at one checkpoint's sample budget",
}
_COMPARE = {
    "metric": "over",
    "n_shared": "shared problems",
    "a": "run a",
    "b": "run b",
    "delta": "b - a",
    "delta_ci": "95% interval",
    "p_value": "permutation p",
    "verdict": "permutation p",
    "flipped": "whose majority flipped",
    "expected_spread": "from sampling alone",
    "differences": "what else differs",
    "problems": "problem",
}
_NOT_MEASURED_ONE_SAMPLE = {
    "answer_entropy",
    "top1_share",
    "wrong_consistency",
    "majority_failures",
    "majority_failure_rate",
}
COLUMNS = {"summary": _SUMMARY, "voting": _VOTING, "coverage": _COVERAGE, "compare": _COMPARE}


@dataclass
class Run:
    """One prepared run: its traces, its rules-judge label run, people's labels if any."""

    name: str
    traces: Path
    labels: Path
    labels_arg: Path
    """What ``--labels`` is given: the folder holding the label run for the demo (item 6)."""
    human: Path | None
    checkpoints: list[str]
    label_result: Result


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shared-cache")


@pytest.fixture(autouse=True)
def _isolated_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One graded-table cache for the whole module (overrides the suite's per-test one): every
    input is graded once, then read from the cache by every command."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_dir))


def _one_per_problem(source: Path, out: Path) -> Path:
    """The first sample of every (checkpoint, dataset, problem) of ``source``, as JSONL."""
    from misstep.rollouts import load_graded

    table = load_graded(source).table
    keep = set(table.drop_duplicates(["checkpoint", "dataset", "problem_id"])["trace_id"])
    from misstep.rollouts import read_traces

    with out.open("w", encoding="utf-8") as fh:
        for trace in read_traces(source):
            if trace.trace_id in keep:
                fh.write(trace.model_dump_json(exclude_none=True) + "\n")
    return out


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, Run]]:
    """Runs prepared lazily (``_prepare``), each once per module."""
    made: dict[str, Run] = {}
    yield made


def _prepare(name: str, made: dict[str, Run], base: Path, demo: DemoRun) -> Run:
    if name in made:
        return made[name]
    root = base / name
    root.mkdir(parents=True, exist_ok=True)
    human: Path | None = None
    full = name.removesuffix("-one")
    if full == "demo":
        if not (base / "demo-run").exists():
            demo.copy_to(base / "demo-run")  # the suite's one demo run (tests/conftest.py)
        stdout = demo.stdout
        if name != "demo":  # the demo again on its own folder, as a user would
            result = runner.invoke(app, ["demo", "--out", str(base / "demo-run")])
            assert result.exit_code == 0, result.output
            stdout = result.stdout
        assert "misstep review" in stdout  # the way in: the demo names the next command
        source = base / "demo-run" / "traces.jsonl"
    else:
        if not (SHARED_DATA / "README.md").exists():
            pytest.skip("../shared/data is not present")
        relative, human_rel = SHARED_RUNS[full]
        source = SHARED_DATA / relative
        human = SHARED_DATA / human_rel if human_rel else None
    traces = _one_per_problem(source, root / "traces.jsonl") if name.endswith("-one") else source
    if name == "demo":
        labels = base / "demo-run" / "labels"
        labelled = runner.invoke(app, ["label", str(traces), "--out", str(root / "labels")])
        labels_arg = base / "demo-run"  # the folder that holds the label run (item 6)
    else:
        labels = root / "labels"
        labelled = runner.invoke(app, ["label", str(traces), "--out", str(labels)])
        labels_arg = labels
    from misstep.metrics import order_checkpoints
    from misstep.rollouts import load_graded

    checkpoints = order_checkpoints(load_graded(traces).table)
    made[name] = Run(name, traces, labels, labels_arg, human, checkpoints, labelled)
    return made[name]


def _commands(run: Run, out: Path) -> dict[str, list[str]]:
    t, labels = str(run.traces), str(run.labels_arg)
    first, last = run.checkpoints[0], run.checkpoints[-1]
    agree = ["agree", "--labels", str(run.labels)]
    if run.human is not None:
        agree += ["--human", str(run.human)]
    return {
        "summary": ["summary", t],
        "summary --labels": ["summary", t, "--labels", labels],
        "coverage": ["coverage", t],
        "voting": ["voting", t],
        "compare": ["compare", t, t, "--checkpoint-a", first, "--checkpoint-b", last],
        "link": ["link", t, "--labels", labels],
        "report": ["report", t, "--labels", labels, "--out", str(out / "report.html")],
        "agree": agree,
        "sample": ["sample", t, "--labels", labels, "--out", str(out / "task.jsonl")],
        "plan": ["plan", t, "--labels", labels, "--halfwidth", "0.1"],
        "discover": ["discover", "--labels", labels, "--out", str(out / "discover")],
        "cache list": ["cache", "list"],
    }


def _refusal(command: str, run: str) -> str | None:
    return REFUSALS.get((command, run)) or REFUSALS.get((command, "*"))


def _check(command: str, run: Run, result: Result) -> None:
    output = result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{command} on {run.name} raised:\n{output}"
    )
    assert "Traceback" not in output, output
    if result.exit_code != 0:
        expected = _refusal(command.split()[0], run.name)
        assert expected is not None and expected in output, (
            f"{command} on {run.name}: exit {result.exit_code}, not a documented refusal:\n{output}"
        )
        return
    assert "…" not in result.stdout, f"{command} on {run.name} cuts a value or header:\n{output}"


def _words(text: str) -> set[str]:
    return set(re.findall(r"[^\s│┃┏┓┗┛━─┳┻╇╋┡┩┼├┤└┘┌┐]+", text))


def _check_columns(command: str, run: Run, table: Result, base: list[str]) -> None:
    mapping = COLUMNS[command]
    as_json = runner.invoke(app, [*base, "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    payload = json.loads(as_json.stdout)
    keys: set[str] = set()
    records = payload if isinstance(payload, list) else [payload]
    for record in records:
        keys |= set(record)
        for agg in record.get("aggregators", []):
            keys |= set(agg)
            assert agg["name"] in table.stdout, f"voting on {run.name}: no row {agg['name']}"
    shown = _words(table.stdout)
    # One sample per problem: the vote metrics are left out of the tables, and the one note
    # that says so names them (issue 33); the JSON keeps every key.
    left_out = ONE_SAMPLE_REASON in table.output
    for key in sorted(keys):
        if left_out and key in _NOT_MEASURED_ONE_SAMPLE:
            continue
        if left_out and re.match(r"(maj|sc_gain)@\d+(_ci|_se)?$", key):
            continue
        metric = re.match(r"(pass|maj|sc_gain)@(\d+)(_ci|_se)?$", key)
        if metric:  # one column per k; the interval and the error sit in its cells
            header = f"{metric.group(1)}@{metric.group(2)}"
        else:
            assert key in mapping, f"{command} --format json has {key!r}; no table column for it"
            header = mapping[key]
        if key == "change" and all(r.get("change") is None for r in records):
            continue
        missing = [w for w in header.split() if w not in shown and w not in table.stdout]
        assert not missing, f"{command} on {run.name}: JSON {key!r} but no {header!r} in\n{table}"


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNS)
def test_every_command_default_output(
    name: str, runs: dict[str, Run], tmp_path_factory: pytest.TempPathFactory, demo_run: DemoRun
) -> None:
    base = tmp_path_factory.getbasetemp() / "every-command"
    run = _prepare(name, runs, base, demo_run)
    _check("label", run, run.label_result)
    out = base / name / "out"
    out.mkdir(parents=True, exist_ok=True)
    for command, args in _commands(run, out).items():
        result = runner.invoke(app, args)
        _check(command, run, result)
        if command in COLUMNS and result.exit_code == 0:
            _check_columns(command, run, result, args)
    shutil.rmtree(out, ignore_errors=True)


def test_voting_renders_on_the_demo_shape(tmp_path: Path) -> None:
    """The crash of issue 27 item 1, small: two checkpoints, windows of 2 and 3, the default
    table (a window's best single checkpoint has no failures avoided: n/a, not a crash)."""
    rows = []
    for step in (1, 2):
        for p in range(3):
            for i in range(4):
                right = (i + p + step) % 3 != 0
                rows.append(
                    {
                        "checkpoint": f"c{step}",
                        "step": step,
                        "problem_id": f"p{p}",
                        "sample_idx": i,
                        "gold_answer": "12",
                        "response": f"So \\boxed{{{12 if right else 13}}}",
                    }
                )
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = runner.invoke(app, ["voting", str(path), "--window", "2,3"])
    assert result.exit_code == 0, result.output
    # 4 samples per problem: the default budget is the largest of 1, 4, 16 that fits, 4.
    assert "maj@4" in result.stdout and "maj@16" not in result.stdout
    assert "window2-best-single-pass@4" in result.stdout and "n/a" in result.stdout
    refused = runner.invoke(app, ["voting", str(path), "--k", "16"])
    assert refused.exit_code == 2 and "--k 4" in refused.output  # a hint these samples allow
