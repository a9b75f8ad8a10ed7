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

import numpy as np
import pytest
from typer.testing import CliRunner

from misstep.cli.app import app
from misstep.labels import read_task_design

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
            *("--labels", labels, "--human", human, "--estimator", "pooled"),
        ]
    )
    cover = _json(["coverage", traces, "--format", "json"])
    # A few human labels per checkpoint: the pooled inversion corrects (ppi needs 10 each).
    pooled = ["--estimator", "pooled"]
    text = runner.invoke(app, ["link", traces, "--labels", labels, "--human", human, *pooled])
    assert text.exit_code == 0, text.output
    assert "corrected for the judge's confusion" in text.stdout
    link = _json(
        [
            "link",
            traces,
            "--labels",
            labels,
            "--human",
            human,
            "--k",
            "1,4",
            "--format",
            "json",
            *pooled,
        ]
    )
    agree = _json(
        ["agree", "--human", human, "--labels", labels, "--format", "json", "--n-boot", "20"]
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
        app,
        [
            "report",
            traces,
            "--labels",
            labels,
            "--human",
            human,
            "--out",
            str(out),
            "--estimator",
            "pooled",
        ],
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


# --- one labelled run: two datasets, a label budget, people's labels, a custom taxonomy -----

TAXONOMY = """\
id: consistency-test
version: 1
categories:
  - key: other
    definition: anything else
  - key: arithmetic
    definition: a calculation done wrong
  - key: copying
    definition: a number copied wrongly
  - key: unused
    definition: a type nobody gives
"""
KEYS = ["other", "arithmetic", "copying", "unused"]  # the file's order, not sorted


def _budget_rows() -> list[dict[str, Any]]:
    """Wrong traces whose type the rules judge reads off the text: "2 + 2 = 5" is arithmetic,
    "2 + 2 = 4" (nothing to find) is other. Wrong traces per checkpoint x dataset:
    c1/d 12 (arithmetic), c1/e 4 (other), c2/d 4 (other), c2/e 8 (arithmetic)."""
    rows: list[dict[str, Any]] = []

    def add(ck: str, ds: str, pid: str, answer: str, ok: bool, n: int, slip: bool) -> None:
        for _ in range(n):
            i = sum(
                1 for r in rows if (r["checkpoint"], r["dataset"], r["problem_id"]) == (ck, ds, pid)
            )
            rows.append(
                {
                    "checkpoint": ck,
                    "step": int(ck[1]),
                    "dataset": ds,
                    "problem_id": pid,
                    "sample_idx": i,
                    "response": f"We add.\n\n2 + 2 = {5 if slip else 4}\n\nThe answer is {answer}.",
                    "pred_answer": answer,
                    "correct": ok,
                }
            )

    add("c1", "d", "p1", "A", True, 2, False)
    add("c1", "d", "p1", "W", False, 6, True)
    add("c1", "d", "p2", "X", False, 6, True)
    add("c1", "e", "p1", "A", True, 2, False)
    add("c1", "e", "p1", "W", False, 4, False)
    add("c2", "d", "p1", "W", False, 4, False)
    add("c2", "e", "p1", "A", True, 1, False)
    add("c2", "e", "p1", "W", False, 8, True)
    return rows


@pytest.fixture(scope="module")
def budget_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from misstep.labels import read_labels

    tmp = tmp_path_factory.mktemp("budget")
    traces = _write(tmp / "traces.jsonl", _budget_rows())
    taxonomy = tmp / "taxonomy.yaml"
    taxonomy.write_text(TAXONOMY, encoding="utf-8")
    run_dir = tmp / "run"
    result = runner.invoke(
        app,
        [
            *("label", str(traces), "--out", str(run_dir), "--judge", "rules"),
            *("--per-checkpoint", "4", "--taxonomy", str(taxonomy)),
        ],
    )
    assert result.exit_code == 0, result.output
    labels = read_labels(run_dir)
    ok = sorted(t for t, lab in labels.items() if lab.status == "ok")
    assert len(ok) == 16  # 4 drawn per checkpoint x dataset
    arith = [t for t in ok if labels[t].error_type == "arithmetic"][:4]
    other = [t for t in ok if labels[t].error_type == "other"][:4]
    # People (two, agreeing): of the four the judge calls arithmetic, one is "other"; the four
    # it calls other are other. ann1 keeps hers in the run (RUN_DIR/human/, as the review app
    # writes them), ann2 hands in a CSV.
    people = (
        {t: "arithmetic" for t in arith[:3]} | {arith[3]: "other"} | dict.fromkeys(other, "other")
    )
    (run_dir / "human").mkdir()
    _write(
        run_dir / "human" / "ann1.jsonl",
        [{"trace_id": t, "annotator": "ann1", "error_type": e} for t, e in people.items()],
    )
    csv_path = tmp / "ann2.csv"
    csv_path.write_text(
        "trace_id,annotator,error_type,has_error\n"
        + "".join(f"{t},ann2,{e},yes\n" for t, e in people.items()),
        encoding="utf-8",
    )
    return {"traces": traces, "run": run_dir, "human": csv_path, "taxonomy": taxonomy, "tmp": tmp}


def _close(a: Any, b: Any) -> bool:
    """Equal numbers, None for None, lists and dicts element by element."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is None and b is None
    return bool(a == pytest.approx(b))


def test_one_labelled_run_gives_one_answer(budget_run: dict[str, Path]) -> None:
    traces, labels, human = (str(budget_run[k]) for k in ("traces", "run", "human"))
    common = ["--labels", labels, "--human", human, "--estimator", "pooled"]
    summary = _json(["summary", traces, "--by", "checkpoint", "--format", "json", *common])
    by_ds = _json(["summary", traces, "--by", "dataset", "--format", "json", *common])
    link = _json(["link", traces, *common, "--by", "dataset", "--format", "json"])
    agree = _json(["agree", "--labels", labels, "--human", human, "--format", "json"])

    # Every table shows the run's taxonomy, in its order, the unused type too.
    assert link["types"] == KEYS
    assert all(r["types"] == KEYS for r in link["by_dataset"].values())
    by_ck = {r["checkpoint"]: r for r in summary}
    for row in summary:
        assert list(row["error_dist"]) == KEYS
    # Stratified by dataset, by hand: c1 has 12 wrong traces in d (all arithmetic, 4 labelled)
    # and 4 in e (all other, 4 labelled): arithmetic 12/16 = 0.75 (the 8 labels alone: 0.5).
    # c2: d 4 other, e 8 arithmetic: arithmetic 8/12.
    assert by_ck["c1"]["error_dist"]["arithmetic"] == pytest.approx(0.75)
    assert by_ck["c1"]["error_dist"]["other"] == pytest.approx(0.25)
    assert by_ck["c2"]["error_dist"]["arithmetic"] == pytest.approx(8 / 12)
    assert by_ck["c1"]["error_dist"]["unused"] == 0.0
    assert by_ck["c1"]["labelled_share"] == pytest.approx(8 / 16)
    low, high = by_ck["c1"]["error_dist_raw_ci"]["arithmetic"]
    assert low <= 0.75 <= high

    # summary and link: every shared number of the pooled checkpoints, intervals included.
    for c in link["checkpoints"]:
        row = by_ck[c["checkpoint"]]
        assert c["n_labelled"] == row["n_labelled"]
        assert c["labelled_share"] == pytest.approx(row["labelled_share"])
        assert c["error_dist_source"] == "corrected"
        assert _close(c["error_dist_judge"], row["error_dist"])
        assert _close(c["error_dist_corrected"], row["error_dist_corrected"])
        assert _close(c["error_dist"], row["error_dist_corrected"])
        assert _close(c["error_dist_ci"], row["error_dist_ci"])
        # People identify arithmetic and other, never copying or unused.
        assert c["not_identified"] == ["copying", "unused"]
        assert row["error_dist_corrected"]["unused"] is None
    # People call one of the judge's four arithmetic labels "other": the corrected share of
    # arithmetic is below the judge's.
    assert by_ck["c1"]["error_dist_corrected"]["arithmetic"] < 0.75
    # per dataset: link --by dataset and summary --by dataset.
    groups = {(r["checkpoint"], r["dataset"]): r for r in by_ds}
    for dataset, result in link["by_dataset"].items():
        for c in result["checkpoints"]:
            row = groups[(c["checkpoint"], dataset)]
            assert _close(c["error_dist_judge"], row["error_dist"])
            assert _close(c["error_dist_corrected"], row["error_dist_corrected"])
            assert _close(c["error_dist_ci"], row["error_dist_ci"])

    # People's labels: one reader, both files (the run's own and --human): 8 traces with a
    # consensus, in link and agree; agree orders its matrices by the run's taxonomy.
    assert link["agreement"]["n"] == 8 and link["agreement"]["n_tied"] == 0
    judge_rows = [e for e in agree["confusion"] if e["rater"] not in ("ann1", "ann2")]
    assert judge_rows and judge_rows[0]["n"] == 8
    assert judge_rows[0]["categories"][: len(KEYS)] == KEYS
    # one judge mistake in 8: 7 agree
    assert judge_rows[0]["accuracy"] == pytest.approx(7 / 8)


def test_report_and_sample_use_the_same_run(budget_run: dict[str, Path]) -> None:
    traces, labels, human = (str(budget_run[k]) for k in ("traces", "run", "human"))
    pooled = ["--estimator", "pooled"]
    link = _json(
        ["link", traces, "--labels", labels, "--human", human, "--format", "json", *pooled]
    )
    out = budget_run["tmp"] / "report.html"
    result = runner.invoke(
        app,
        [
            "report",
            traces,
            "--labels",
            labels,
            "--human",
            human,
            "--out",
            str(out),
            "--estimator",
            "pooled",
        ],
    )
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert "error types: " + ", ".join(KEYS) in html
    assert "".join(f"<th>{k}</th>" for k in KEYS) in html
    for c in link["checkpoints"]:
        share = c["error_dist"]["arithmetic"]
        assert f"{100 * share:.0f}%" in html
    assert "not identified" in html  # copying and unused have no corrected share

    # sample: every judged trace (n covers them all), weighted back through the label budget:
    # weight = (N_h / n_h = 1) / inclusion probability, c1/d drew 4 of 12 (3), c2/e 4 of 8 (2),
    # the others all of theirs (1).
    task = budget_run["tmp"] / "task.json"
    result = runner.invoke(
        app,
        [
            *("sample", traces, "--labels", labels, "--out", str(task), "--n", "16"),
            *("--stratify", "checkpoint", "--format", "labelstudio"),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [t["data"] for t in json.loads(task.read_text(encoding="utf-8"))]
    assert len(rows) == 16 and not any("weight" in r for r in rows)  # blind: in the sidecar
    side = read_task_design(budget_run["tmp"] / "task.json.judge.jsonl")
    weights = {(r["checkpoint"], r["dataset"]): side[r["trace_id"]].weight for r in rows}
    assert weights == {
        ("c1", "d"): pytest.approx(3.0),
        ("c1", "e"): pytest.approx(1.0),
        ("c2", "d"): pytest.approx(1.0),
        ("c2", "e"): pytest.approx(2.0),
    }
    config = (budget_run["tmp"] / "task.json.labelstudio.xml").read_text(encoding="utf-8")
    assert re.findall(r'<Choice value="(\w+)"/>', config) == [*KEYS, "no_error"]


def test_a_mistyped_or_moved_taxonomy_is_an_error(budget_run: dict[str, Path]) -> None:
    import shutil

    traces, labels = str(budget_run["traces"]), budget_run["run"]
    tmp = budget_run["tmp"]
    # A person's type outside the run's taxonomy: file, line, field, value, allowed keys.
    bad = _write(
        tmp / "bad.jsonl",
        [
            {"trace_id": "x", "annotator": "ann3", "error_type": "other"},
            {"trace_id": "y", "annotator": "ann3", "error_type": "misread"},
        ],
    )
    for args in (
        ["summary", traces, "--labels", str(labels), "--human", str(bad)],
        ["link", traces, "--labels", str(labels), "--human", str(bad)],
        ["agree", "--labels", str(labels), "--human", str(bad)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        text = " ".join(result.output.split())
        assert "bad.jsonl, line 2" in text and "'error_type'" in text and "misread" in text
        assert "other, arithmetic, copying, unused" in text

    # The run's taxonomy file moved: a clear error, and --taxonomy with the file fixes it.
    moved = tmp / "moved-run"
    shutil.copytree(labels, moved)
    manifest = json.loads((moved / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["taxonomy_path"] == str(budget_run["taxonomy"].resolve())
    manifest["taxonomy_path"] = str(tmp / "gone.yaml")
    (moved / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = runner.invoke(app, ["summary", traces, "--labels", str(moved)])
    assert result.exit_code == 2
    assert "no longer exists" in " ".join(result.output.split())
    fixed = runner.invoke(
        app,
        ["summary", traces, "--labels", str(moved), "--taxonomy", str(budget_run["taxonomy"])],
    )
    assert fixed.exit_code == 0, fixed.output
    # A taxonomy with another content (hash) is refused.
    changed = tmp / "changed.yaml"
    changed.write_text(TAXONOMY.replace("a type nobody gives", "changed"), encoding="utf-8")
    result = runner.invoke(
        app, ["summary", traces, "--labels", str(labels), "--taxonomy", str(changed)]
    )
    assert result.exit_code == 2
    assert "hash" in result.output


# --- link's shares, intervals and shift tests come from the estimator, for every estimator ---


@pytest.fixture(scope="module")
def estimator_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The synthetic run (three checkpoints, two datasets of 12 problems, 8 samples each),
    labelled by the rules judge, and people's labels of 16 judged traces per checkpoint: the
    judge's type, every fourth changed (enough for ppi, which needs 10 per checkpoint)."""
    from misstep.labels import LabelStatus, read_labels
    from misstep.pipelines import make_synthetic_run

    tmp = tmp_path_factory.mktemp("estimators")
    traces = make_synthetic_run(
        tmp / "traces.jsonl", seed=2, n_checkpoints=3, problems_per_dataset=12,
        samples_per_problem=8,
    )  # fmt: skip
    run_dir = tmp / "run"
    result = runner.invoke(app, ["label", str(traces), "--out", str(run_dir)])
    assert result.exit_code == 0, result.output
    ok = sorted(
        (lab.checkpoint or "", t, lab.error_type or "")
        for t, lab in read_labels(run_dir).items()
        if lab.status == LabelStatus.OK
    )
    people = []
    for ck in sorted({c for c, _, _ in ok}):
        mine = [(t, e) for c, t, e in ok if c == ck][:16]
        assert len(mine) == 16
        for i, (t, e) in enumerate(mine):
            other = "other" if e != "other" else "arithmetic"
            people.append(
                {"trace_id": t, "annotator": "ann", "error_type": other if i % 4 == 0 else e}
            )
    human = _write(tmp / "human.jsonl", people)
    return {"traces": traces, "run": run_dir, "human": human}


@pytest.mark.parametrize("estimator", ["judge", "ppi", "pooled"])
def test_link_takes_its_shares_intervals_and_shift_tests_from_the_estimator(
    estimator_run: dict[str, Path], estimator: str
) -> None:
    from scipy import stats

    from misstep.agreement import AnalysisConfig, Estimator, load_labelled_run
    from misstep.rollouts import load_graded

    traces, run, human = (estimator_run[k] for k in ("traces", "run", "human"))
    people = [] if estimator == "judge" else ["--human", str(human), "--estimator", estimator]
    summary = _json(
        ["summary", str(traces), "--labels", str(run), "--by", "checkpoint", "--format", "json",
         *people]
    )  # fmt: skip
    link = _json(["link", str(traces), "--labels", str(run), "--format", "json", *people])
    # the estimator objects, in process, on the same run with the same config
    labelled = load_labelled_run(
        run,
        load_graded(traces),
        human=[] if estimator == "judge" else [human],
        config=AnalysisConfig(estimator=Estimator.PPI if estimator == "judge" else estimator),
    )
    dists = {d.checkpoint: d for d in labelled.distributions(pool_datasets=True)}
    by_ck = {r["checkpoint"]: r for r in summary}
    assert list(by_ck) == [c["checkpoint"] for c in link["checkpoints"]]
    for c in link["checkpoints"]:
        row, d = by_ck[c["checkpoint"]], dists[c["checkpoint"]]
        est = d.estimate
        assert est is not None
        corrected = estimator != "judge"
        # every checkpoint has enough people's labels: the correction makes the shares
        assert (est is d.corrected_estimate) is corrected
        assert c["error_dist_estimator"] == est.estimator.value
        assert c["error_dist_estimator"] == (estimator if corrected else "judge")
        shares = row["error_dist_corrected"] if corrected else row["error_dist"]
        cis = row["error_dist_ci"] if corrected else row["error_dist_raw_ci"]
        # summary's figures, figure by figure, are link's and the estimate's
        assert _close(c["error_dist"], shares) and _close(c["error_dist"], est.as_dict())
        assert _close(c["error_dist_ci"], cis) and _close(c["error_dist_ci"], est.ci_dict())
        assert _close(c["error_dist_judge"], row["error_dist"])
    tested = 0
    for shift in link["shifts"]:
        a, b = dists[shift["before"]].estimate, dists[shift["after"]].estimate
        assert a is not None and b is not None
        before, after = by_ck[shift["before"]], by_ck[shift["after"]]
        key = "error_dist_corrected" if estimator != "judge" else "error_dist"
        for change in shift["changes"]:
            t = change["error_type"]
            i = a.categories.index(t)
            # the shares tested are summary's ...
            assert change["share_before"] == pytest.approx(before[key][t])
            assert change["share_after"] == pytest.approx(after[key][t])
            # ... and the test is the estimates' z test with their variances
            delta = b.shares[i] - a.shares[i]
            se = float(np.sqrt(a.cov[i, i] + b.cov[i, i]))
            assert change["delta"] == pytest.approx(delta)
            if change["p_raw"] is None:
                continue
            tested += 1
            p = 1.0 if se == 0 else 2 * stats.norm.sf(abs(delta) / se)
            assert change["p_raw"] == pytest.approx(p)
            z = stats.norm.ppf(0.975)  # the z test's interval at the default 95%
            assert change["ci"] == pytest.approx([delta - z * se, delta + z * se])
    assert tested > 0  # the run has enough labels for the tests to run
