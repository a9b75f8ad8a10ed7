"""The label pipeline end to end: the fake OpenAI server and the rules judge, resume, kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from misstep.errors import LabelStoreError, OptionError
from misstep.judge import JudgeConfig, request_seed
from misstep.labels import LabelStatus, read_label_rows, read_labels, read_manifest
from misstep.pipelines import LabelProgress, run_labeling
from misstep.taxonomy import load_taxonomy
from tests.conftest import REPO_ROOT
from tests.judge.fake_openai import FakeOpenAIServer

TAXONOMY = load_taxonomy(None)


@pytest.fixture
def fake() -> Any:
    with FakeOpenAIServer() as server:
        yield server


def _row(i: int, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "trace_id": f"t{i}",
        "problem_id": f"p{i % 3}",
        "checkpoint": "step_100" if i % 2 else "step_200",
        "response": f"We add {i} and 3.\n\n{i} + 3 = {i + 4}\n\nThe answer is {i + 4}.",
        "gold_answer": str(i + 3),
        "correct": False,
    }
    row.update(kw)
    return row


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def _mixed(tmp_path: Path) -> Path:
    rows = [_row(i) for i in range(6)]  # 6 wrong
    rows += [_row(i, correct=True, response=f"{i} + 3 = {i + 3}") for i in (6, 7)]  # 2 correct
    rows.append(_row(8, finish_reason="length"))  # truncated
    rows.append(_row(9, response="I am not sure how to go on.", correct=False))  # no answer
    return _write(tmp_path / "traces.jsonl", rows)


def _config(fake: FakeOpenAIServer, **kw: Any) -> JudgeConfig:
    return JudgeConfig(backend="openai", base_url=fake.base_url, concurrency=4, **kw)


def test_end_to_end_with_fake_server_then_resume(
    tmp_path: Path, fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-stored")
    traces, run = _mixed(tmp_path), tmp_path / "run"
    seen: list[LabelProgress] = []
    summary = run_labeling(traces, run, _config(fake), taxonomy=TAXONOMY, progress=seen.append)
    assert len(fake.chat_requests) == 6  # only the wrong traces are sent
    labels = read_labels(run)
    assert sorted(labels) == [f"t{i}" for i in range(10)]
    ok = [labels[f"t{i}"] for i in range(6)]
    assert all(lab.status is LabelStatus.OK for lab in ok)
    assert all(lab.error_type == TAXONOMY.keys[0] for lab in ok)
    assert all(lab.evidence_verified for lab in ok)
    assert all(lab.judge == summary.judge and "fake-judge" in lab.judge for lab in ok)
    reasons = {tid: labels[tid].reason for tid in ("t6", "t7", "t8", "t9")}
    assert reasons == {"t6": "correct", "t7": "correct", "t8": "truncated", "t9": "no_answer"}
    assert all(labels[t].error_type is None and labels[t].attempts == 0 for t in reasons)
    assert summary.status_counts == {"ok": 6, "skipped": 4}
    # wrong traces t0..t5: odd ids are step_100 (t1, t3, t5), even ones step_200
    assert summary.error_types_by_checkpoint == {
        "step_100": {TAXONOMY.keys[0]: 3},
        "step_200": {TAXONOMY.keys[0]: 3},
    }
    assert seen[-1].status_counts == Counter({"ok": 6, "skipped": 4})
    manifest = read_manifest(run)
    assert manifest is not None
    assert manifest.judge == summary.judge
    assert manifest.server_model == "fake-judge"
    # the model was not named: the manifest records the one the id names (the served one)
    assert manifest.judge_config["model"] == "fake-judge"
    assert manifest.judge_config["base_url"] == fake.base_url
    assert manifest.taxonomy_hash == TAXONOMY.hash
    assert manifest.inputs[0].path == str(traces.resolve())
    assert manifest.versions["openai"]
    for name in ("manifest.json", "labels.jsonl"):
        assert b"sk-never-stored" not in (run / name).read_bytes()
    # the requests: temperature 0, seeds a pure function of (seed, trace_id, 0)
    seeds = sorted(r["seed"] for r in fake.chat_requests)
    assert seeds == sorted(request_seed(0, f"t{i}", 0) for i in range(6))
    assert {r["temperature"] for r in fake.chat_requests} == {0}

    # resume: nothing to do, no call, no new record
    fake.reset()
    again = run_labeling(traces, run, _config(fake), taxonomy=TAXONOMY)
    assert fake.count == 0
    assert again.written == 0
    assert again.resumed == 6
    assert again.status_counts == {"ok": 6, "skipped": 4}
    assert len((run / "labels.jsonl").read_bytes().splitlines()) == 10


def test_faults_become_statuses_and_only_non_ok_are_retried(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    rows = [
        _row(0),
        _row(1, response="FAKE_FAULT:500x2 so 1 + 3 = 5"),  # 2 x 500: fails with 1 retry
        _row(2, response="FAKE_FAULT:schema 2 + 3 = 6"),
        _row(3, response="FAKE_FAULT:truncated 3 + 3 = 7"),
        _row(4, response="FAKE_FAULT:bad_evidence 4 + 3 = 8"),
    ]
    traces, run = _write(tmp_path / "t.jsonl", rows), tmp_path / "run"
    run_labeling(traces, run, _config(fake, max_retries=1), taxonomy=TAXONOMY)
    labels = read_labels(run)
    assert labels["t0"].status is LabelStatus.OK
    assert labels["t1"].status is LabelStatus.FAILED
    assert labels["t1"].attempts == 2
    assert labels["t1"].reason is not None and "HTTP 500" in labels["t1"].reason
    assert labels["t2"].status is LabelStatus.UNPARSEABLE
    assert labels["t2"].error_type is None  # never mapped onto a category
    assert labels["t2"].raw_reply is not None and "not_a_category" in labels["t2"].raw_reply
    assert labels["t3"].status is LabelStatus.TRUNCATED
    assert labels["t3"].raw_reply is not None
    assert labels["t4"].status is LabelStatus.OK
    assert labels["t4"].evidence_verified is False
    assert labels["t0"].evidence_verified is True

    # second run: t0 and t4 are ok and skipped; t1 now succeeds (its 500s are spent);
    # t2 and t3 are asked again (2 requests for t2 with its re-ask, 2 for t3: a cut reply is
    # retried once with another seed)
    before = fake.count
    summary = run_labeling(traces, run, _config(fake, max_retries=1), taxonomy=TAXONOMY)
    assert summary.resumed == 2
    assert fake.count - before == 1 + 2 + 2
    labels = read_labels(run)
    assert labels["t1"].status is LabelStatus.OK
    assert summary.written_counts == {"ok": 1, "unparseable": 1, "truncated": 1}


def test_include_correct_sends_correct_traces(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    traces, run = _mixed(tmp_path), tmp_path / "run"
    summary = run_labeling(traces, run, _config(fake), taxonomy=TAXONOMY, include_correct=True)
    assert len(fake.chat_requests) == 8  # 6 wrong + 2 correct
    assert summary.status_counts == {"ok": 8, "skipped": 2}


def test_limit_reads_only_the_first_traces(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    traces, run = _mixed(tmp_path), tmp_path / "run"
    summary = run_labeling(traces, run, _config(fake), taxonomy=TAXONOMY, limit=3)
    assert summary.traces == 3
    assert sorted(read_labels(run)) == ["t0", "t1", "t2"]


def test_samples_store_the_majority_and_agreement(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    traces, run = _write(tmp_path / "t.jsonl", [_row(0), _row(1)]), tmp_path / "run"
    first, second = TAXONOMY.keys[0], TAXONOMY.keys[1]
    # t0: samples 0 and 2 say `second`, sample 1 says `first` -> second, agreement 2/3
    # t1: samples 0, 1 say `first`, sample 2 says `second` -> first, agreement 2/3
    plan = {
        request_seed(0, "t0", 0): [second, first, second],
        request_seed(0, "t1", 0): [first, first, second],
    }
    fake.sample_error_type = lambda body, i: plan[body["seed"]][i]
    run_labeling(traces, run, _config(fake, samples=3, temperature=0.7), taxonomy=TAXONOMY)
    labels = read_labels(run)
    # one request per trace draws the three samples (n = 3), sharing the prefill
    assert len(fake.chat_requests) == 2
    assert {r["n"] for r in fake.chat_requests} == {3}
    assert {r["temperature"] for r in fake.chat_requests} == {0.7}
    assert labels["t0"].error_type == second
    assert labels["t1"].error_type == first
    assert labels["t0"].sample_agreement == pytest.approx(2 / 3)
    assert labels["t0"].samples == 3
    assert labels["t0"].attempts == 1


def test_samples_need_a_temperature_above_zero(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    traces, run = _write(tmp_path / "t.jsonl", [_row(0)]), tmp_path / "run"
    with pytest.raises(OptionError, match="greedy samples are copies"):
        run_labeling(traces, run, _config(fake, samples=3), taxonomy=TAXONOMY)
    assert fake.count == 0 and not run.exists()


def test_samples_tie_goes_to_the_first_key_in_taxonomy_order(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    traces, run = _write(tmp_path / "t.jsonl", [_row(0)]), tmp_path / "run"
    first, third = TAXONOMY.keys[0], TAXONOMY.keys[2]
    # sample 0 says `third`, sample 1 says `first`: 1-1 tie -> `first` (earlier key)
    fake.sample_error_type = lambda body, i: [third, first][i]
    run_labeling(traces, run, _config(fake, samples=2, temperature=0.5), taxonomy=TAXONOMY)
    label = read_labels(run)["t0"]
    assert label.error_type == first
    assert label.sample_agreement == pytest.approx(0.5)


def test_skip_invalid_writes_rejects_so_every_row_is_accounted(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        orjson.dumps(_row(0)) + b"\n" + b'{"problem_id": "p"}\n' + orjson.dumps(_row(1)) + b"\n"
    )
    run = tmp_path / "run"
    summary = run_labeling(path, run, _config(fake), taxonomy=TAXONOMY, skip_invalid=True)
    assert sorted(read_labels(run)) == ["t0", "t1"]
    rejects = (run / "rejects.jsonl").read_bytes().splitlines()
    assert len(rejects) == 1
    assert orjson.loads(rejects[0])["line"] == 2
    assert summary.rejected == 1


def test_rules_judge_end_to_end(tmp_path: Path) -> None:
    rows = [
        # 2 + 3 = 6 is wrong arithmetic in step 1 (0-based): the rules judge finds it
        _row(0, response="We add 2 and 3.\n\n2 + 3 = 6\n\nThe answer is 6.", gold_answer="5"),
        _row(1, correct=True, response="2 + 3 = 5\n\nThe answer is 5.", gold_answer="5"),
    ]
    traces, run = _write(tmp_path / "t.jsonl", rows), tmp_path / "run"
    summary = run_labeling(traces, run, JudgeConfig(), taxonomy=TAXONOMY)
    labels = read_labels(run)
    assert labels["t0"].status is LabelStatus.OK
    assert labels["t0"].error_type == "arithmetic"
    assert labels["t0"].first_error_step == 1
    assert labels["t0"].evidence_verified is True
    assert labels["t0"].judge.startswith("rules:")
    assert labels["t1"].status is LabelStatus.SKIPPED
    assert summary.error_types_by_checkpoint == {"step_200": {"arithmetic": 1}}


@pytest.mark.slow
def test_kill_9_in_the_middle_then_resume_loses_and_duplicates_nothing(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    n = 120
    rows = [_row(i) for i in range(n)] + [_row(n, finish_reason="length")]
    traces, run = _write(tmp_path / "t.jsonl", rows), tmp_path / "run"
    fake.fault = "delay"
    fake.delay_s = 0.1  # 120 requests, 2 at a time: about 6 s, killed well before the end
    cmd = [
        sys.executable, "-m", "misstep.cli", "label", str(traces), "--out", str(run),
        "--judge", "openai", "--base-url", fake.base_url, "--concurrency", "2",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    labels_file, err_file = run / "labels.jsonl", tmp_path / "stderr.txt"
    with open(err_file, "wb") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if labels_file.exists() and labels_file.read_bytes().count(b"\n") >= 10:
                break
            time.sleep(0.05)
        assert proc.poll() is None, err_file.read_text()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    written_before = labels_file.read_bytes().count(b"\n")
    assert 10 <= written_before < n + 1
    # what a kill in the middle of a write leaves behind
    with open(labels_file, "ab") as fh:
        fh.write(b'{"trace_id": "t5", "judge": "x", "st')

    fake.fault = None
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    labels = read_labels(run)
    assert sorted(labels) == sorted(f"t{i}" for i in range(n + 1))  # none lost
    assert all(labels[f"t{i}"].status is LabelStatus.OK for i in range(n))
    records = [orjson.loads(x) for x in labels_file.read_bytes().splitlines()]
    ok_per_trace = Counter(r["trace_id"] for r in records if r["status"] == "ok")
    assert set(ok_per_trace.values()) == {1}  # none labelled twice
    assert len(records) == n + 1  # every record of the first run was kept and not redone


def test_manifest_is_a_history_with_the_servers_own_word(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    traces, run = _write(tmp_path / "t.jsonl", [_row(0), _row(1)]), tmp_path / "run"
    run_labeling(traces, run, _config(fake, batch_invariant=True), taxonomy=TAXONOMY)
    first = read_manifest(run)
    assert first is not None and first.history == []
    assert first.server == {
        "url": fake.base_url,
        "version": "0.33.0-fake",  # GET /version, at the root beside /v1
        "max_model_len": 4096,  # from GET /v1/models
        "batch_invariant": True,  # as the user declared it
    }
    run_labeling(traces, run, _config(fake, batch_invariant=True), taxonomy=TAXONOMY)
    second = read_manifest(run)
    assert second is not None and len(second.history) == 1
    assert second.history[0]["created_at"] == first.created_at
    assert second.history[0]["judge"] == first.judge == second.judge


def test_a_second_judge_configuration_is_refused_unless_asked(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    traces, run = _write(tmp_path / "t.jsonl", [_row(0), _row(1)]), tmp_path / "run"
    run_labeling(traces, run, _config(fake), taxonomy=TAXONOMY)
    first = read_manifest(run)
    assert first is not None
    lines = (run / "labels.jsonl").read_bytes()
    # another token budget is another configuration: another judge id
    other = _config(fake, max_trace_tokens=500)
    with pytest.raises(LabelStoreError, match="made by judge"):
        run_labeling(traces, run, other, taxonomy=TAXONOMY)
    assert (run / "labels.jsonl").read_bytes() == lines  # nothing written
    summary = run_labeling(traces, run, other, taxonomy=TAXONOMY, add_judge=True)
    assert summary.judge != first.judge
    # the two sit side by side; an analysis must choose one
    with pytest.raises(LabelStoreError, match="2 judge configurations"):
        read_labels(run)
    assert {lab.judge for lab in read_labels(run, judge=first.judge).values()} == {first.judge}
    assert len(read_label_rows(run, judge=summary.judge)) == 2


def test_the_judge_id_covers_what_changes_a_label() -> None:
    from misstep.judge import judge_id, label_json_schema
    from misstep.prompts import prompt_hash

    base = JudgeConfig(backend="openai", model="m")
    schema = label_json_schema(TAXONOMY)
    ids = {
        judge_id(c, TAXONOMY.hash, prompt_hash(), schema)
        for c in (
            base,
            base.model_copy(update={"temperature": 0.5}),
            base.model_copy(update={"max_tokens": 99}),
            base.model_copy(update={"max_trace_tokens": 99}),
            base.model_copy(update={"reasoning_effort": "low"}),
            base.model_copy(update={"chat_template_kwargs": {"enable_thinking": False}}),
            base.model_copy(update={"engine_args": {"tensor_parallel_size": 2}}),
        )
    }
    ids.add(judge_id(base, TAXONOMY.hash, prompt_hash(), {**schema, "x": 1}))
    assert len(ids) == 8


def test_tokens_and_reasoning_are_stored_and_summed(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    fake.reasoning = "Step 0 is fine; step 1 adds wrongly."
    traces, run = _write(tmp_path / "t.jsonl", [_row(0), _row(1)]), tmp_path / "run"
    summary = run_labeling(traces, run, _config(fake), taxonomy=TAXONOMY)
    labels = read_labels(run)
    assert labels["t0"].reasoning == "Step 0 is fine; step 1 adds wrongly."
    assert labels["t0"].completion_tokens == 40  # the fake's usage count per request
    assert labels["t0"].prompt_tokens is not None and labels["t0"].prompt_tokens > 0
    assert summary.completion_tokens == 80
    assert summary.prompt_tokens == sum(lab.prompt_tokens or 0 for lab in labels.values())


def test_a_second_label_process_is_refused_by_the_lock(tmp_path: Path) -> None:
    from misstep.labels import run_dir_lock

    run = tmp_path / "run"
    with run_dir_lock(run):
        with (
            pytest.raises(LabelStoreError, match="another `misstep label` is writing"),
            run_dir_lock(run),
        ):
            pass
        # and from another process too
        code = (
            "import sys\nfrom misstep.labels import run_dir_lock\n"
            "from misstep.errors import LabelStoreError\n"
            "try:\n    with run_dir_lock(sys.argv[1]): pass\n"
            "except LabelStoreError as e:\n    print(e); sys.exit(3)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(run)], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 3 and f"pid {os.getpid()}" in out.stdout
    with run_dir_lock(run):  # released
        pass


def test_several_servers_share_the_work_and_a_dead_one_is_dropped(tmp_path: Path) -> None:
    from misstep.judge import create_judge

    rows = [_row(i) for i in range(24)]
    traces = _write(tmp_path / "t.jsonl", rows)
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        config = JudgeConfig(
            backend="openai", base_url=a.base_url, extra_base_urls=[b.base_url], concurrency=4
        )
        summary = run_labeling(traces, tmp_path / "run", config, taxonomy=TAXONOMY)
        assert summary.status_counts == {"ok": 24}
        assert a.count > 0 and b.count > 0  # both did some of it
        assert a.count + b.count == 24
        manifest = read_manifest(tmp_path / "run")
        assert manifest is not None
        assert [s["url"] for s in manifest.server["servers"]] == [a.base_url, b.base_url]

        # b dies after the judge was built: its requests go to a, and it is dropped
        judge = create_judge(config, TAXONOMY)
        b_url = b.base_url
        b.stop()
        notices: list[str] = []

        def seen(state: LabelProgress) -> None:
            notices.extend(state.notices)
            state.notices.clear()

        summary = run_labeling(
            traces, tmp_path / "run2", config, taxonomy=TAXONOMY, judge=judge, progress=seen
        )
        assert summary.status_counts == {"ok": 24}
        assert any(b_url in n and "dropped" in n for n in notices)


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--judge", "openai", "--base-url", "notaurl"], "--base-url"),
        (["--judge", "openai", "--base-url", "ftp://host/v1"], "--base-url"),
        (["--judge", "openai", "--reasoning-effort", "extreme"], "--reasoning-effort"),
        (
            [
                "--judge",
                "vllm",
                "--model",
                "m",
                "--ray",
                "1",
                "--samples",
                "2",
                "--temperature",
                "0.7",
            ],
            "--samples",
        ),
        # the config model's own checks, each named by its flag
        (["--judge", "openai", "--timeout", "0"], "--timeout=0.0 is not allowed: input should"),
        (["--judge", "openai", "--deadline", "-1"], "--deadline=-1.0 is not allowed"),
        (["--judge", "openai", "--samples", "2"], "`--temperature 0.7`"),
        (["--per-checkpoint", "2", "--pilot", "4"], "--pilot=4 is not allowed"),
    ],
)
def test_label_options_are_checked_before_any_connection(
    tmp_path: Path, args: list[str], option: str
) -> None:
    from typer.testing import CliRunner

    from misstep.cli.app import app

    traces = _mixed(tmp_path)
    result = CliRunner().invoke(app, ["label", str(traces), "--out", str(tmp_path / "r"), *args])
    assert result.exit_code == 2, result.output
    assert option in result.output
    assert not (tmp_path / "r").exists()  # nothing written, nothing asked


def test_live_and_batch_labels_of_one_request_share_the_judge_id(tmp_path: Path) -> None:
    from misstep.pipelines import export_requests

    traces = _mixed(tmp_path)
    with FakeOpenAIServer(models=("judge-7b",)) as server:
        config = JudgeConfig(backend="openai", base_url=server.base_url, model="judge-7b")
        live = run_labeling(traces, tmp_path / "run", config, taxonomy=TAXONOMY)
    exported = export_requests(
        traces, tmp_path / "run", JudgeConfig(backend="batch", model="judge-7b"), taxonomy=TAXONOMY
    )
    assert exported.judge == live.judge
    # the batch export resumes the live run: nothing left to ask
    assert (exported.requests, exported.already_ok) == (0, 6)
