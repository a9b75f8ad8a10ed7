"""The openai backend against a real local HTTP server: every fault the issue lists."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest

from misstep.errors import JudgeUnavailableError, OptionError
from misstep.judge import (
    JudgeConfig,
    JudgeRequest,
    JudgeResult,
    JudgeSpec,
    create_judge,
    label_json_schema,
)
from misstep.judge._openai import OpenAIJudge, probe_server
from misstep.labels import LabelStatus
from misstep.rollouts import Trace
from misstep.taxonomy import load_taxonomy
from tests.judge.fake_openai import FakeOpenAIServer

TAXONOMY = load_taxonomy(None)
SYSTEM = "You are a careful grader. Reply with one JSON object."


def _judge(server: FakeOpenAIServer, **kw: Any) -> OpenAIJudge:
    kw.setdefault("timeout_s", 5.0)
    config = JudgeConfig(backend="openai", model="fake-judge", base_url=server.base_url, **kw)
    return OpenAIJudge(JudgeSpec(config, TAXONOMY), backoff_base_s=0.01)


def _request(
    text: str = "2 + 2 = 5, so the answer is 5", seed: int = 123, n: int = 1
) -> JudgeRequest:
    trace = Trace(problem_id="p1", response=text)
    user = f"Problem: add.\n<trace>\n[0] {text}\n</trace>"
    return JudgeRequest(
        trace=trace,
        final_answer="5",
        steps=[text],
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        seed=seed,
        n=n,
    )


def _run(judge: OpenAIJudge, request: JudgeRequest) -> JudgeResult:
    async def go() -> JudgeResult:
        try:
            return await judge.judge(request)
        finally:
            await judge.aclose()

    return asyncio.run(go())


def test_valid_reply_is_ok_and_wire_format_is_json_schema(fake_openai: FakeOpenAIServer) -> None:
    result = _run(_judge(fake_openai), _request(seed=4242))
    assert result.status is LabelStatus.OK
    assert result.label is not None
    assert result.label.error_type == TAXONOMY.keys[0]  # type: ignore[attr-defined]
    assert result.attempts == 1
    assert result.raw_reply is None
    [body] = fake_openai.chat_requests
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == label_json_schema(TAXONOMY)
    assert "guided_json" not in body
    assert "guided_json" not in body.get("extra_body", {})
    assert body["temperature"] == 0
    assert body["seed"] == 4242
    assert body["max_completion_tokens"] == 1024
    # every sampling field explicit, so the server fills none from the model's defaults
    for name, value in {
        "top_p": 1.0,
        "top_k": -1,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
    }.items():
        assert body[name] == value
    assert fake_openai.effective_sampling[-1]["repetition_penalty"] == 1.0
    assert "n" not in body
    assert body["model"] == "fake-judge"
    assert body["messages"][0] == {"role": "system", "content": SYSTEM}


def test_configured_error_type_comes_back(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.error_type = "misread"
    result = _run(_judge(fake_openai), _request())
    assert result.label is not None
    assert result.label.error_type == "misread"  # type: ignore[attr-defined]


def test_500_then_success_retries(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail_first = 1
    result = _run(_judge(fake_openai), _request())
    assert result.status is LabelStatus.OK
    assert result.attempts == 2  # one 500, one success
    assert fake_openai.count == 2
    # a retry after a transport error resends the same request with the same seed
    assert fake_openai.chat_requests[0]["seed"] == fake_openai.chat_requests[1]["seed"]


@pytest.mark.parametrize("status", ["500", "503"])
def test_only_errors_end_failed_with_attempts(fake_openai: FakeOpenAIServer, status: str) -> None:
    fake_openai.fault = status
    result = _run(_judge(fake_openai, max_retries=3), _request())
    assert result.status is LabelStatus.FAILED
    assert result.label is None
    assert result.attempts == 4  # 1 try + 3 retries
    assert fake_openai.count == 4
    assert result.reason is not None
    assert f"HTTP {status}" in result.reason
    assert "4 attempt" in result.reason


def test_timeout_is_retried_then_failed(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fault = "delay"
    fake_openai.delay_s = 2.0
    start = time.perf_counter()
    result = _run(_judge(fake_openai, timeout_s=0.3, max_retries=1), _request())
    elapsed = time.perf_counter() - start
    assert result.status is LabelStatus.FAILED
    assert result.attempts == 2
    assert result.reason is not None
    assert "timed out" in result.reason
    assert elapsed < 1.9  # two 0.3 s timeouts and a short backoff, never the 2 s delay


def test_malformed_json_is_reasked_then_unparseable(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fault = "malformed"
    result = _run(_judge(fake_openai), _request())
    assert result.status is LabelStatus.UNPARSEABLE
    assert result.label is None
    assert result.raw_reply == "I think the error is arithmetic, in step 2."
    assert result.attempts == 2  # the answer and one re-ask
    first, second = fake_openai.chat_requests
    assert len(second["messages"]) == len(first["messages"]) + 2
    assert second["messages"][-2] == {"role": "assistant", "content": result.raw_reply}
    assert "schema" in second["messages"][-1]["content"]


def test_malformed_once_then_valid_after_the_reask(fake_openai: FakeOpenAIServer) -> None:
    result = _run(_judge(fake_openai), _request("FAKE_FAULT:malformedx1 then 2 + 2 = 5"))
    assert result.status is LabelStatus.OK
    assert result.attempts == 2


def test_schema_violation_is_unparseable_never_mapped(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fault = "schema"
    result = _run(_judge(fake_openai), _request())
    assert result.status is LabelStatus.UNPARSEABLE
    assert result.label is None
    assert result.raw_reply is not None
    assert '"not_a_category"' in result.raw_reply
    assert '"confidence": 7' in result.raw_reply
    assert result.reason is not None
    assert "error_type" in result.reason


def test_length_cut_reply_is_truncated_with_raw_reply(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fault = "truncated"
    result = _run(_judge(fake_openai), _request())
    assert result.status is LabelStatus.TRUNCATED
    assert result.raw_reply is not None
    assert result.raw_reply.startswith("{")
    assert not result.raw_reply.rstrip().endswith("}")
    # asked again once, with another seed and a small temperature, then stored as truncated
    assert result.attempts == 2
    first, second = fake_openai.chat_requests
    assert first["temperature"] == 0 and second["temperature"] == 0.3
    assert first["seed"] != second["seed"]
    assert "first truncated, cut-retry truncated" in (result.reason or "")


def test_a_greedy_whitespace_loop_is_broken_by_the_retry(fake_openai: FakeOpenAIServer) -> None:
    # the fake loops on whitespace for a greedy request, as vLLM can under a JSON schema
    result = _run(_judge(fake_openai), _request(text="FAKE_FAULT:loop 2 + 2 = 5"))
    assert result.status is LabelStatus.OK
    assert result.attempts == 2
    assert [r["temperature"] for r in fake_openai.chat_requests] == [0, 0.3]


def test_samples_come_in_one_request_with_n(fake_openai: FakeOpenAIServer) -> None:
    judge = _judge(fake_openai, temperature=0.7)
    result = _run(judge, _request(n=3))
    [body] = fake_openai.chat_requests
    assert body["n"] == 3 and body["temperature"] == 0.7
    assert result.status is LabelStatus.OK
    assert len(result.choices) == 2
    assert all(c.status is LabelStatus.OK for c in result.choices)


def test_reasoning_and_usage_are_kept(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.reasoning = "First I check step 0, then step 1."
    result = _run(_judge(fake_openai), _request())
    assert result.extra["reasoning"] == "First I check step 0, then step 1."
    usage = result.extra["usage"]
    assert isinstance(usage, dict) and usage["completion_tokens"] == 40


def test_http_400_keeps_the_servers_message(fake_openai: FakeOpenAIServer) -> None:
    result = _run(_judge(fake_openai), _request(text="FAKE_FAULT:too_long 2 + 2 = 5"))
    assert result.status is LabelStatus.FAILED
    assert result.attempts == 1  # a 400 is not retried
    assert "maximum context length is 4096 tokens" in (result.reason or "")


def test_per_request_fault(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.faults_by_request = {1: "503"}
    result = _run(_judge(fake_openai), _request())
    assert result.status is LabelStatus.OK
    assert result.attempts == 2


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_dead_server_fails_fast_naming_url_and_vllm() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    start = time.perf_counter()
    with pytest.raises(JudgeUnavailableError) as info:
        probe_server(url)
    assert time.perf_counter() - start < 5.0
    message = str(info.value)
    assert url in message
    assert "vllm serve" in message
    assert info.value.exit_code == 3


def test_wrong_path_is_reported(fake_openai: FakeOpenAIServer) -> None:
    wrong = fake_openai.base_url.removesuffix("/v1") + "/nope"
    with pytest.raises(JudgeUnavailableError, match="HTTP 404"):
        probe_server(wrong)


def test_factory_probes_and_picks_the_only_model(fake_openai: FakeOpenAIServer) -> None:
    config = JudgeConfig(backend="openai", base_url=fake_openai.base_url)
    judge = create_judge(config, TAXONOMY)
    assert isinstance(judge, OpenAIJudge)
    assert judge.model == "fake-judge"
    assert judge.server_model == "fake-judge"
    assert "fake-judge" in judge.judge_id
    asyncio.run(judge.aclose())


def test_factory_needs_model_when_several_are_served() -> None:
    with FakeOpenAIServer(models=("a", "b")) as server:
        config = JudgeConfig(backend="openai", base_url=server.base_url)
        with pytest.raises(OptionError, match="model=None") as caught:
            create_judge(config, TAXONOMY)
    assert caught.value.option == "model"  # the field: only the CLI names its flag


def test_api_key_from_env_is_sent_but_never_in_results(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-do-not-store")
    fake_openai.fault = "truncated"
    result = _run(_judge(fake_openai, max_retries=0), _request())
    assert "sk-secret" not in repr(result)


def test_a_reply_from_another_model_is_refused(fake_openai: FakeOpenAIServer) -> None:
    from misstep.judge._exchange import TransportGaveUp

    judge = _judge(fake_openai)
    judge._check_model({"model": "fake-judge"}, 1)  # the model asked: kept
    with pytest.raises(TransportGaveUp) as info:
        judge._check_model({"model": "another-judge"}, 1)
    result = info.value.result
    assert result.status is LabelStatus.FAILED and result.server_down == "wrong-model"
    assert "'another-judge'" in (result.reason or "")
    asyncio.run(judge.aclose())
