"""Judge configuration, judge ids, per-request seeds and the backend registry."""

from __future__ import annotations

import asyncio
import sys

import pytest
from pydantic import ValidationError

from misstep.errors import OptionError
from misstep.judge import (
    Judge,
    JudgeConfig,
    JudgeRequest,
    JudgeResult,
    RulesJudge,
    _registry,
    available_judges,
    create_judge,
    judge_id,
    register_judge,
    request_seed,
)
from misstep.labels import LabelStatus
from misstep.rollouts import Trace
from misstep.taxonomy import Taxonomy, load_taxonomy


def test_config_defaults() -> None:
    config = JudgeConfig()
    assert (config.backend, config.model, config.temperature, config.max_tokens) == (
        "rules",
        None,
        0.0,
        1024,
    )
    assert (config.concurrency, config.samples, config.seed, config.max_trace_tokens) == (
        16,
        1,
        0,
        6000,
    )
    for field in JudgeConfig.model_fields.values():
        assert field.description  # every field documented (docstrings become descriptions)


@pytest.mark.parametrize(
    "bad", [{"samples": 0}, {"concurrency": 0}, {"timeout_s": 0}, {"nope": 1}, {"max_tokens": 0}]
)
def test_config_rejects(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        JudgeConfig.model_validate(bad)


def test_judge_id_rules_form() -> None:
    assert judge_id(JudgeConfig(), "3f2a9c0011aa", "81bc22ddee00") == "rules:tx3f2a9c:pr81bc"


def test_judge_id_model_form_and_what_it_covers() -> None:
    base = JudgeConfig(backend="openai", model="Qwen/Qwen2.5-7B-Instruct")
    jid = judge_id(base, "aaaaaaaaaaaa", "bbbbbbbbbbbb")
    kind, name, digest = jid.split(":")
    assert (kind, name) == ("llm", "Qwen2.5-7B-Instruct")
    assert len(digest) == 8 and int(digest, 16) >= 0
    assert judge_id(base, "aaaaaaaaaaaa", "bbbbbbbbbbbb") == jid  # pure
    changed = [
        judge_id(base.model_copy(update=u), "aaaaaaaaaaaa", "bbbbbbbbbbbb")
        for u in (
            {"temperature": 0.7},
            {"max_tokens": 512},
            {"samples": 3},
            {"seed": 1},
            {"model": "other/Qwen2.5-7B-Instruct"},
            {"reasoning_effort": "low"},
            {"chat_template_kwargs": {"enable_thinking": False}},
            {"engine_args": {"max_model_len": 4096}},
            {"max_trace_tokens": 100},
        )
    ]
    changed += [
        judge_id(base, "cccccccccccc", "bbbbbbbbbbbb"),
        judge_id(base, "aaaaaaaaaaaa", "cccccccccccc"),
    ]
    assert jid not in changed and len(set(changed)) == len(changed)
    # Settings that do not change labels do not change the id; nor does the wire (the
    # backend): live, offline, run-batch and Ray labels of one request resume each other.
    same = base.model_copy(update={"concurrency": 2, "timeout_s": 5.0, "base_url": "http://x"})
    assert judge_id(same, "aaaaaaaaaaaa", "bbbbbbbbbbbb") == jid
    for backend in ("vllm", "batch"):
        wire = base.model_copy(update={"backend": backend})
        assert judge_id(wire, "aaaaaaaaaaaa", "bbbbbbbbbbbb") == jid


def test_judge_id_covers_the_step_segmentation(monkeypatch: pytest.MonkeyPatch) -> None:
    import misstep.judge._config as config_module
    import misstep.prompts
    import misstep.prompts._render as render

    base = JudgeConfig(backend="openai", model="m")
    jid = judge_id(base, "a" * 12, "b" * 12)
    before = config_module.segmentation_hash()
    # a splitter that cuts differently (every line its own step) changes the fingerprint
    original = render.split_steps

    def by_lines(trace: object) -> list[str]:
        text = getattr(trace, "response", trace)
        steps = original(trace)  # type: ignore[arg-type]
        return [line for line in str(text).splitlines() if line.strip()] or steps

    monkeypatch.setattr(render, "split_steps", by_lines)
    monkeypatch.setattr(misstep.prompts, "split_steps", by_lines)
    config_module.segmentation_hash.cache_clear()
    try:
        assert config_module.segmentation_hash() != before
        assert judge_id(base, "a" * 12, "b" * 12) != jid
    finally:
        config_module.segmentation_hash.cache_clear()


def test_judge_id_sanitises_model_names() -> None:
    config = JudgeConfig(backend="openai", model="my model:v1/")
    assert judge_id(config, "a" * 12, "b" * 12).split(":")[1] == "my-model-v1"


def test_request_seed_is_pure_and_31_bit() -> None:
    seeds = {request_seed(0, f"t{i}", a) for i in range(200) for a in range(3)}
    assert len(seeds) == 600  # no collisions among 600 (chance ~ 600^2 / 2^32 ~ 1e-4)
    assert all(0 <= s < 2**31 for s in seeds)
    assert request_seed(7, "x", 1) == request_seed(7, "x", 1)
    assert len({request_seed(7, "x", 1), request_seed(8, "x", 1), request_seed(7, "x", 2)}) == 3


def test_available_and_unknown_judges() -> None:
    assert {"rules", "openai", "vllm"} <= set(available_judges())
    assert available_judges() == sorted(available_judges())
    with pytest.raises(OptionError, match=r"backend='nope'.*one of .*openai.*rules.*vllm"):
        create_judge(JudgeConfig(backend="nope"), load_taxonomy())


def test_rules_is_created_without_importing_vllm() -> None:
    judge = create_judge(JudgeConfig(), load_taxonomy())
    assert isinstance(judge, RulesJudge) and isinstance(judge, Judge)
    assert "vllm" not in sys.modules


class _Echo:
    def __init__(self, config: JudgeConfig, taxonomy: Taxonomy) -> None:
        self.tag = f"{config.backend}:{taxonomy.id}"

    @property
    def judge_id(self) -> str:
        return self.tag

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        return JudgeResult(status=LabelStatus.FAILED, reason=request.trace.trace_id)

    async def aclose(self) -> None:
        return None


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test vanish after it."""
    monkeypatch.setattr(_registry, "_REGISTRY", dict(_registry._REGISTRY))


@pytest.mark.usefixtures("registry")
def test_register_callable_and_string_targets() -> None:
    register_judge("echo-test", _Echo)
    judge = create_judge(JudgeConfig(backend="echo-test"), load_taxonomy())
    assert judge.judge_id == "echo-test:math-v1"
    request = JudgeRequest(
        trace=Trace(problem_id="p", response="r", trace_id="t1"),
        final_answer=None,
        steps=["r"],
        messages=[],
        seed=0,
    )
    assert asyncio.run(judge.judge(request)).reason == "t1"
    register_judge("echo-str", f"{__name__}:_Echo")
    assert create_judge(JudgeConfig(backend="echo-str"), load_taxonomy()).judge_id == (
        "echo-str:math-v1"
    )


@pytest.mark.parametrize(
    ("name", "target"), [("bad name!", "a:b"), ("ok", "no_colon"), ("ok", "a:b:c")]
)
@pytest.mark.usefixtures("registry")
def test_register_rejects(name: str, target: str) -> None:
    with pytest.raises(OptionError):
        register_judge(name, target)


@pytest.mark.usefixtures("registry")
def test_target_module_missing() -> None:
    register_judge("ghost-test", "misstep.judge._no_such_module:factory")
    with pytest.raises(OptionError, match="_no_such_module is missing"):
        create_judge(JudgeConfig(backend="ghost-test"), load_taxonomy())
    register_judge("ghost-attr", "misstep.judge._rules:no_such_factory")
    with pytest.raises(OptionError, match="callable factory"):
        create_judge(JudgeConfig(backend="ghost-attr"), load_taxonomy())
