"""The offline engine: continuous submission (``AsyncLLM``, what ``--judge vllm`` does) against
lock-step batches (``LLM.chat`` on batches of ``--batch`` requests), in the same run, on the same
requests. Prints one JSON object.

Usage (a Python with vllm and misstep's dependencies; on CPU set VLLM_CPU_KVCACHE_SPACE):
    python benchmarks/bench_engine_async.py --model DIR [--traces FILE] [--n 12] [--batch 4]

The JSON is the last line of stdout (vLLM logs to stdout too). The requests are the first
``--n`` wrong ProcessBench traces with a final answer
(/work/shared/data/processbench by default), rendered and bounded as ``misstep label`` sends
them and translated by the one adapter (``misstep.judge.engine_request``). Both cases use the
same engine settings (xgrammar, no free whitespace, ``--max-model-len``), greedy decoding and
the same seeds; neither retries (the first replies are compared). ``async_s`` / ``lockstep_s``
are wall seconds for all requests after the engine is up; ``ratio`` = lockstep / async; the
statuses of both are counted (they should agree: the same greedy requests).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

DEFAULT_TRACES = Path("/work/shared/data/processbench/traces.jsonl")


def _requests(traces: Path, n: int, max_tokens: int) -> list[tuple[dict[str, Any], int]]:
    from misstep.judge import (
        bounded_schema,
        chat_body,
        label_json_schema,
        request_seed,
    )
    from misstep.prompts import render_judge_prompt
    from misstep.rollouts import Outcome, load_graded, read_traces
    from misstep.taxonomy import load_taxonomy

    taxonomy = load_taxonomy(None)
    schema = label_json_schema(taxonomy)
    graded = load_graded(traces).table
    wrong = {
        str(t): (None if a is None or a != a else str(a))
        for t, o, a in zip(graded["trace_id"], graded["outcome"], graded["answer"], strict=True)
        if o == Outcome.WRONG.value
    }
    out: list[tuple[dict[str, Any], int]] = []
    for trace in read_traces(traces):
        if trace.trace_id not in wrong:
            continue
        rendered = render_judge_prompt(taxonomy, trace, wrong[trace.trace_id])
        body = chat_body(
            model="m",
            messages=rendered.messages,
            schema=bounded_schema(schema, len(rendered.steps), max_tokens=max_tokens),
            name="Label",
            temperature=0.0,
            max_tokens=max_tokens,
            seed=request_seed(0, trace.trace_id, 0),
        )
        out.append((body, len(rendered.steps)))
        if len(out) >= n:
            break
    return out


def _status(text: str, finish: str | None, n_steps: int, max_tokens: int) -> str:
    from misstep.judge import Reply, label_model, parse_reply
    from misstep.taxonomy import load_taxonomy

    label_type = label_model(load_taxonomy(None))
    return parse_reply(
        Reply(text, finish), label_type, n_steps=n_steps, max_tokens=max_tokens
    ).status.value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--n", type=int, default=12)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--max-model-len", type=int, default=8192)
    args = parser.parse_args()

    import vllm
    from vllm.config import StructuredOutputsConfig
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.sampling_params import RequestOutputKind
    from vllm.v1.engine.async_llm import AsyncLLM

    from misstep.judge import engine_request
    from misstep.judge._exchange import sampling_params

    requests = _requests(args.traces, args.n, args.max_tokens)
    engine_requests = [engine_request(body) for body, _ in requests]
    structured = {"backend": "xgrammar", "disable_any_whitespace": True}
    common = {"model": args.model, "max_model_len": args.max_model_len, "seed": 0}

    # continuous submission
    engine = AsyncLLM.from_engine_args(
        AsyncEngineArgs(**common, structured_outputs_config=StructuredOutputsConfig(**structured))
    )

    async def one(i: int) -> tuple[str, str | None]:
        req = engine_requests[i]
        ids = engine.get_tokenizer().apply_chat_template(
            req.messages, tokenize=True, add_generation_prompt=True
        )
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        params = sampling_params(vllm, req, output_kind=RequestOutputKind.FINAL_ONLY)
        final = None
        async for output in engine.generate({"prompt_token_ids": list(ids)}, params, f"r{i}"):
            final = output
        assert final is not None
        return final.outputs[0].text, final.outputs[0].finish_reason

    async def run_async() -> tuple[list[tuple[str, str | None]], float]:
        # One event loop for the engine's whole life: AsyncLLM binds its output handler to
        # the loop of its first request (a second asyncio.run finds the engine dead).
        await asyncio.gather(*(one(i) for i in range(len(engine_requests))))  # warm-up
        start = time.perf_counter()
        out = list(await asyncio.gather(*(one(i) for i in range(len(engine_requests)))))
        return out, time.perf_counter() - start

    try:
        async_out, async_s = asyncio.run(run_async())
    finally:
        engine.shutdown()

    # lock-step batches (the warm-up: one batch of the same requests, as above)
    llm = vllm.LLM(**common, structured_outputs_config=structured)
    warm = engine_requests[: args.batch]
    llm.chat([r.messages for r in warm], sampling_params=[sampling_params(vllm, r) for r in warm])
    lock_out: list[tuple[str, str | None]] = []
    start = time.perf_counter()
    for lo in range(0, len(engine_requests), args.batch):
        part = engine_requests[lo : lo + args.batch]
        outputs = llm.chat(
            [r.messages for r in part],
            sampling_params=[sampling_params(vllm, r) for r in part],
            use_tqdm=False,
        )
        lock_out += [(o.outputs[0].text, o.outputs[0].finish_reason) for o in outputs]
    lockstep_s = time.perf_counter() - start

    def counts(outs: list[tuple[str, str | None]]) -> dict[str, int]:
        return dict(
            Counter(
                _status(text, finish, n_steps, args.max_tokens)
                for (text, finish), (_, n_steps) in zip(outs, requests, strict=True)
            )
        )

    print(
        json.dumps(
            {
                "benchmark": "bench_engine_async",
                "model": args.model,
                "requests": len(requests),
                "batch": args.batch,
                "async_s": round(async_s, 2),
                "lockstep_s": round(lockstep_s, 2),
                "ratio": round(lockstep_s / async_s, 3),
                "async_statuses": counts(async_out),
                "lockstep_statuses": counts(lock_out),
            }
        )
    )


if __name__ == "__main__":  # vLLM on CPU starts its engine core with spawn
    main()
