"""Every string from the input is printed exactly as written: never read as rich markup, never
as matplotlib mathtext."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from misstep.cli.app import app

runner = CliRunner()
NAMES = ["ck[/]", "[red]x", "qwen[rl]", "ckpt_$x^{$"]


def _traces(path: Path) -> Path:
    rows = []
    for step, ck in enumerate(NAMES):
        for p in range(3):
            for i in range(4):
                wrong = (i + p + step) % 2
                rows.append(
                    {
                        "checkpoint": ck,
                        "step": step,
                        "dataset": "exp/[best]",
                        "problem_id": f"p[{p}]",
                        "sample_idx": i,
                        "gold_answer": "12",
                        "response": "3 * 4 = 13.\n\nSo \\boxed{13}"
                        if wrong
                        else "3 * 4 = 12.\n\nSo \\boxed{12}",
                    }
                )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (args, result.output)
    assert "Traceback" not in result.output
    return result.output


def test_every_command_prints_names_as_written(tmp_path: Path) -> None:
    traces = str(_traces(tmp_path / "t[1].jsonl"))
    run = str(tmp_path / "run[x]")
    outputs = [
        _ok(["summary", traces]),
        _ok(["coverage", traces]),
        _ok(["label", traces, "--out", run]),
        _ok(["link", traces, "--labels", run]),
        _ok(["summary", traces, "--labels", run]),
    ]
    for out in outputs:
        for name in NAMES:
            assert name in out, (name, out[-2000:])
    report = tmp_path / "r.html"
    _ok(["report", traces, "--labels", run, "--out", str(report)])
    html = report.read_text(encoding="utf-8")
    assert "ckpt_$x^{$" in html and "[red]x" in html
    labels = [json.loads(line) for line in Path(run, "labels.jsonl").read_text().splitlines()]
    human = tmp_path / "h.jsonl"
    ok = [r for r in labels if r["status"] == "ok"]
    human.write_text(
        "".join(
            json.dumps({"trace_id": r["trace_id"], "annotator": a, "error_type": "arithmetic"})
            + "\n"
            for r in ok
            for a in ("[bold]ann", "ann[2]")
        ),
        encoding="utf-8",
    )
    out = _ok(["agree", "--human", str(human), "--labels", run, "--by", "checkpoint"])
    assert "[bold]ann" in out and "ann[2]" in out and "ck[/]" in out
