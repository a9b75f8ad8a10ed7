"""Every command reads the same inputs through the same definitions: run ``summary``,
``coverage``, ``agree``, ``link`` and ``report`` on one hand-made run and compare every number
they share (majority-vote failures, coverage and Jaccard, raw and corrected error
distributions, the human consensus, the labelled fraction, pass@1 and maj@k).

The run (one dataset, four checkpoints), worked by hand:

- c1/p1: answers A x3 and B x3 graded correct (two correct classes), W x4 wrong. The plurality
  is W: a majority-vote failure (the vote picks W although six samples are right).
- c1/p2: X x2, Y x2, all wrong: no correct sample, no failure. c1/p3: 5 x2 right, 6 wrong, one
  cut at the token limit: the vote is right.
- c2/p1: A x5 right, W x5 wrong: a tie with a wrong class, a failure. c2/p2: X x4 wrong.
- c3 and c4 solve nothing (W x4 on p1, X x4 on p2): their Jaccard is undefined (null).
So failures per checkpoint are 1, 1, 0, 0; solved sets {p1, p3}, {p1}, {}, {}.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from misstep.cli.app import app

runner = CliRunner()


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def add(ck: str, step: int, pid: str, answer: str | None, ok: bool, n: int, **kw: Any) -> None:
        for _ in range(n):
            i = sum(1 for r in rows if r["checkpoint"] == ck and r["problem_id"] == pid)
            row: dict[str, Any] = {
                "checkpoint": ck,
                "step": step,
                "dataset": "d",
                "problem_id": pid,
                "sample_idx": i,
                "response": f"we compute 2 + 2 = {4 if ok else 5}, so the answer is {answer}",
                "correct": ok,
            }
            if answer is not None:
                row["pred_answer"] = answer
            row.update(kw)
            rows.append(row)

    add("c1", 1, "p1", "A", True, 3)
    add("c1", 1, "p1", "B", True, 3)
    add("c1", 1, "p1", "W", False, 4)
    add("c1", 1, "p2", "X", False, 2)
    add("c1", 1, "p2", "Y", False, 2)
    add("c1", 1, "p3", "5", True, 2)
    add("c1", 1, "p3", "6", False, 1)
    add("c1", 1, "p3", "5", False, 1, finish_reason="length")
    add("c2", 2, "p1", "A", True, 5)
    add("c2", 2, "p1", "W", False, 5)
    add("c2", 2, "p2", "X", False, 4)
    for ck, step in (("c3", 3), ("c4", 4)):
        add(ck, step, "p1", "W", False, 4)
        add(ck, step, "p2", "X", False, 4)
    return rows


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("consistency")
    rows = _rows()
    traces = _write(tmp / "traces.jsonl", rows)
    # Labels: every wrong trace of c1 and c2 (c3, c4: none, so "no labels" there).
    types = ["arithmetic", "other", "misread"]
    labels = []
    for n, r in enumerate(rows):
        tid = f"{r['checkpoint']}/d/{r['problem_id']}/{r['sample_idx']}"
        if r["correct"] or r.get("finish_reason") or r["checkpoint"] not in ("c1", "c2"):
            continue
        labels.append(
            {
                "trace_id": tid,
                "judge": "j",
                "status": "ok",
                "error_type": types[n % 3],
                "first_error_step": 0,
                "checkpoint": r["checkpoint"],
                "dataset": "d",
            }
        )
    run_dir = tmp / "run"
    run_dir.mkdir()
    _write(run_dir / "labels.jsonl", labels)
    # Two people; they agree on the first four labelled traces and tie on the fifth.
    human = []
    for i, lab in enumerate(labels[:5]):
        first = lab["error_type"] if i != 2 else "other"
        second = first if i < 4 else "arithmetic" if first != "arithmetic" else "other"
        human.append({"trace_id": lab["trace_id"], "annotator": "ann1", "error_type": first})
        human.append({"trace_id": lab["trace_id"], "annotator": "ann2", "error_type": second})
    human_path = _write(tmp / "human.jsonl", human)
    return {"traces": traces, "run": run_dir, "human": human_path, "tmp": tmp}


def _json(args: list[str]) -> Any:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_every_command_agrees(run: dict[str, Path]) -> None:
    traces, labels, human = str(run["traces"]), str(run["run"]), str(run["human"])
    summary = _json(
        [
            *("summary", traces, "--by", "checkpoint", "--k", "1,4", "--format", "json"),
            *("--labels", labels, "--human", human),
        ]
    )
    cover = _json(["coverage", traces, "--format", "json"])
    text = runner.invoke(app, ["link", traces, "--labels", labels, "--human", human])
    assert text.exit_code == 0, text.output
    assert "corrected for the judge's confusion" in text.stdout
    link = _json(
        ["link", traces, "--labels", labels, "--human", human, "--k", "1,4", "--format", "json"]
    )
    agree = _json(
        ["agree", "--human", human, "--judge", labels, "--format", "json", "--n-boot", "20"]
    )

    by_ck = {row["checkpoint"]: row for row in summary}
    link_ck = {c["checkpoint"]: c for c in link["checkpoints"]}
    assert list(by_ck) == list(link_ck) == ["c1", "c2", "c3", "c4"]

    # Majority-vote failures, hand-worked in the module docstring: 1, 1, 0, 0.
    assert [by_ck[c]["majority_failures"] for c in by_ck] == [1, 1, 0, 0]
    assert [link_ck[c]["majority_failures"] for c in link_ck] == [1, 1, 0, 0]
    assert len(link["failures"]) == 2
    for c in by_ck:
        assert by_ck[c]["majority_failure_rate"] == pytest.approx(
            link_ck[c]["majority_failure_rate"]
        )
        assert by_ck[c]["pass@1"] == pytest.approx(link_ck[c]["metrics"]["pass@1"])
        assert by_ck[c]["maj@4"] == pytest.approx(link_ck[c]["metrics"]["maj@4"])
        # maj@1 equals pass@1 exactly: sc_gain@1 is 0.
        assert by_ck[c]["sc_gain@1"] == 0.0
    # c1/p1's failure is consistent-wrong? W has 4 of 10 answered votes: not a strict
    # majority, so it is scattered; c2/p1's tie is scattered too.
    assert sorted(f["kind"] for f in link["failures"]) == ["scattered", "scattered"]

    # Coverage: the command and the link's coverage are the same object, nulls included.
    assert cover["checkpoints"] == link["coverage"]["checkpoints"] == ["c1", "c2", "c3", "c4"]
    assert cover["solved"] == link["coverage"]["solved"] == [2, 1, 0, 0]
    assert cover["jaccard"] == link["coverage"]["jaccard"]
    assert cover["jaccard"][2][3] is None  # two checkpoints that solve nothing
    assert cover["jaccard"][0][1] == pytest.approx(0.5)  # {p1, p3} vs {p1}
    for key in ("retention", "acquisition", "forgetting"):
        assert cover[key] == link["coverage"][key]

    # Error distributions: the judge's shares and the corrected ones, point for point.
    for c in ("c1", "c2"):
        assert by_ck[c]["n_labelled"] == link_ck[c]["n_labelled"] > 0
        assert by_ck[c]["labelled_share"] == pytest.approx(1.0)
        assert link_ck[c]["error_dist_source"] == "corrected"
        for t, share in link_ck[c]["error_dist_judge"].items():
            assert by_ck[c]["error_dist"][t] == pytest.approx(share)
        for t, share in by_ck[c]["error_dist_corrected"].items():
            other = link_ck[c]["error_dist_corrected"].get(t)
            assert (share is None and other is None) or share == pytest.approx(other)
        assert link_ck[c]["error_dist"] == link_ck[c]["error_dist_corrected"]
    for c in ("c3", "c4"):  # no labels: never 0%
        assert by_ck[c]["n_labelled"] == link_ck[c]["n_labelled"] == 0
        assert by_ck[c]["error_dist"] is None and link_ck[c]["error_dist"] is None

    # Human consensus: four traces agree, the fifth ties and has none, in agree and in link.
    assert link["agreement"]["n"] == 4 and link["agreement"]["n_tied"] == 1
    judge_rows = [e for e in agree["confusion"] if e["rater"] != "ann1" and e["rater"] != "ann2"]
    assert judge_rows and judge_rows[0]["n"] == 4


def test_report_shows_the_link_numbers(run: dict[str, Path]) -> None:
    traces, labels, human = str(run["traces"]), str(run["run"]), str(run["human"])
    out = run["tmp"] / "report.html"
    result = runner.invoke(
        app, ["report", traces, "--labels", labels, "--human", human, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    # The metrics table: c1 and c2 each show 1 failure, c3 and c4 none.
    cells = re.findall(r'<tr><td class="l">(c\d)</td>.*?</tr>', html, flags=re.S)
    assert cells[:4] == ["c1", "c2", "c3", "c4"]
    assert "corrected for the judge's confusion" in html
    assert html.count("no labels") >= 2


def test_by_dataset_agrees_with_summary(tmp_path: Path) -> None:
    # Dataset e is dataset d with its c1/p1 failure removed (every W answer graded right).
    rows = _rows()
    more = []
    for r in rows:
        copy = {**r, "dataset": "e"}
        if copy["checkpoint"] == "c1" and copy["problem_id"] == "p1" and copy["pred_answer"] == "W":
            copy["correct"] = True
        more.append(copy)
    traces = str(_write(tmp_path / "t.jsonl", rows + more))
    summary = _json(["summary", traces, "--format", "json", "--k", "1,4"])
    by_group = {(r["checkpoint"], r["dataset"]): r for r in summary}
    assert by_group[("c1", "d")]["majority_failures"] == 1
    assert by_group[("c1", "e")]["majority_failures"] == 0
    run = tmp_path / "run"
    run.mkdir()
    _write(run / "labels.jsonl", [])
    link = _json(["link", traces, "--labels", str(run), "--by", "dataset", "--format", "json"])
    assert sorted(link["by_dataset"]) == ["d", "e"]
    for dataset, result in link["by_dataset"].items():
        for c in result["checkpoints"]:
            row = by_group[(c["checkpoint"], dataset)]
            assert c["majority_failures"] == row["majority_failures"]
            assert c["metrics"]["pass@1"] == pytest.approx(row["pass@1"])
    # Pooled: the datasets' failures add up.
    pooled = {c["checkpoint"]: c["majority_failures"] for c in link["checkpoints"]}
    assert pooled == {"c1": 1, "c2": 2, "c3": 0, "c4": 0}
    out = tmp_path / "report.html"
    result = runner.invoke(
        app, ["report", traces, "--labels", str(run), "--by", "dataset", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert out.exists() and (tmp_path / "report.d.html").exists()
    assert (tmp_path / "report.e.html").exists()
