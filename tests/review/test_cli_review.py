"""``misstep review`` as a process: the URL first on stdout, progress and warnings on stderr,
bad options exit 2, and labels survive kill -9."""

from __future__ import annotations

import csv
import http.client
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import orjson
import pytest

from misstep.labels import read_human_labels
from tests.review.review_fixture import Fixture, make_run

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    return make_run(tmp_path / "data")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@contextmanager
def _review(*args: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "misstep.cli", "review", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().decode().strip()
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def _post(url: str, body: dict[str, object]) -> int:
    parts = urlsplit(url)
    token = parts.fragment.removeprefix("token=")
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    conn.request(
        "POST",
        "/api/labels",
        body=json.dumps(body),
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
        },
    )
    status = conn.getresponse().status
    conn.close()
    return status


@pytest.mark.slow
def test_url_first_then_labels_survive_kill_9(fx: Fixture) -> None:
    args = [str(fx.traces), "--labels", str(fx.run_dir), "--annotator", "alice"]
    with _review(*args) as (proc, url):
        assert url.startswith("http://127.0.0.1:") and "/#token=" in url
        acknowledged = []
        for i, t in enumerate(fx.wrong_ids * 3):
            body = {"trace_id": t, "error_type": "arithmetic", "first_error_step": i % 3}
            assert _post(url, body) == 200
            acknowledged.append((t, i % 3))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    labels = read_human_labels(fx.run_dir / "human" / "alice.jsonl")
    assert [(h.trace_id, h.first_error_step) for h in labels] == acknowledged


def test_host_warning_and_bad_options(fx: Fixture) -> None:
    args = [str(fx.traces), "--labels", str(fx.run_dir), "--host", "0.0.0.0"]
    with _review(*args) as (proc, url):
        # A wildcard bind prints an address a browser can open, and saving works there.
        assert url.startswith("http://127.0.0.1:"), url
        body = {"trace_id": fx.wrong_ids[0], "error_type": "arithmetic", "annotator": "ann"}
        assert _post(url, body) == 200
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert b"warning: serving on 0.0.0.0" in err and b"from other machines: http://" in err
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "misstep.cli",
            "review",
            str(fx.traces),
            "--labels",
            str(fx.run_dir),
            "--annotator",
            "../x",
        ],
        capture_output=True,
        env=_env(),
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2 and b"--annotator" in bad.stderr
    assert not list(fx.run_dir.parent.rglob("x.jsonl"))


def test_human_dir_records_are_plain_json_lines(fx: Fixture) -> None:
    # What `misstep review` writes is what `misstep summary --human` and `link` read.
    from typer.testing import CliRunner

    from misstep.cli.app import app
    from misstep.labels import HumanLabel, HumanLabelWriter

    writer = HumanLabelWriter(fx.run_dir)
    for t in fx.wrong_ids:
        writer.append(
            HumanLabel(trace_id=t, annotator="p1", error_type="arithmetic", verdict="error")
        )
    human = fx.run_dir / "human" / "p1.jsonl"
    assert all(isinstance(orjson.loads(x), dict) for x in human.read_bytes().splitlines())
    for command in ("summary", "link"):
        result = CliRunner().invoke(
            app, [command, str(fx.traces), "--labels", str(fx.run_dir), "--human", str(human)]
        )
        assert result.exit_code == 0, result.output


def test_option_errors_exit_2(fx: Fixture, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from misstep.cli.app import app

    base = ["review", str(fx.traces), "--labels", str(fx.run_dir)]
    runner = CliRunner()
    result = runner.invoke(app, [*base, "--with-judge"])
    assert result.exit_code == 2 and "--adjudicate" in result.output
    result = runner.invoke(app, [*base, "--task", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2 and "--task" in result.output
    bad = tmp_path / "task.jsonl"
    bad.write_text('{"trace_id": "not in this input", "weight": 2}\n')
    result = runner.invoke(app, [*base, "--task", str(bad)])
    assert result.exit_code == 2 and "not a trace of this input" in result.output


@pytest.mark.parametrize(
    ("cell", "line"),
    [("0", 2), ("-3", 2), ("NaN", 2), ("inf", 2), ("heavy", 2), ("0", 3)],
)
def test_task_weights_are_checked_where_read(
    fx: Fixture, tmp_path: Path, cell: str, line: int
) -> None:
    """Issue 34, item 8: a task's weight 0 became 1.0, -3 was stored (and every later summary
    of the run failed), "NaN" was stored as null. Each is now refused at start, naming the
    file, line and field, and nothing is stored."""
    from typer.testing import CliRunner

    from misstep.cli.app import app

    wrong = fx.wrong_ids
    task = tmp_path / "task.csv"
    cells = ["2.5", "2.5"]
    cells[line - 2] = cell
    with task.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["trace_id", "weight"])
        writer.writerows(zip(wrong, cells, strict=False))  # the trace ids are hostile text
    base = ["review", str(fx.traces), "--labels", str(fx.run_dir), "--task", str(task)]
    result = CliRunner().invoke(app, base)
    assert result.exit_code == 2, result.output
    assert f"{task}, line {line}: field 'weight'" in result.output.replace("\n", "")
    assert "Traceback" not in result.output
    assert not (fx.run_dir / "human").exists() or not list((fx.run_dir / "human").glob("*"))
