"""vLLM's CPU build with and without ``--enforce-eager``, in one run: server start-up and
``misstep label --judge openai`` on the real-vLLM tier's 12 traces.

vLLM 0.32 CPU compiles the model at every start (its compiled-model cache fails to load:
"Compiling model again due to a load failure"); eager skips that. Needs the tier's environment
(``python3 scripts/real_vllm_env.py``). Prints one JSON object: per mode, seconds until the
server answers, seconds to label, and the label statuses.

    python benchmarks/bench_cpu_eager.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tests.real._server as real  # noqa: E402
from tests.real.conftest import CONCURRENCY, MAX_TOKENS, TRACES12  # noqa: E402


def _one(env: real.VllmEnv, tmp: Path, eager: bool) -> dict[str, object]:
    flags = [f for f in real.CPU_FLAGS if f != "--enforce-eager"]
    real.CPU_FLAGS = [*flags, "--enforce-eager"] if eager else flags
    name = "eager" if eager else "compiled"
    server = real.Server(env, tmp, name=name)
    try:
        ready = server.wait_ready()
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "misstep.cli", "label", str(TRACES12),
             "--out", str(tmp / name), "--judge", "openai", "--base-url", server.base_url,
             "--max-tokens", MAX_TOKENS, "--concurrency", CONCURRENCY],
            env={**os.environ, "PYTHONPATH": str(REPO / "src")}, check=True,
            capture_output=True,
        )  # fmt: skip
        label_s = time.perf_counter() - started
    finally:
        server.stop()
    lines = (tmp / name / "labels.jsonl").read_text(encoding="utf-8").splitlines()
    statuses = Counter(json.loads(x)["status"] for x in lines)
    return {"ready_s": round(ready, 1), "label_s": round(label_s, 1), "statuses": statuses}


def main() -> None:
    env = real.build_env(build=False)
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        result = {mode: _one(env, tmp, mode == "eager") for mode in ("eager", "compiled")}
    print(json.dumps({"benchmark": "bench_cpu_eager", "traces": 12, **result}, indent=2))


if __name__ == "__main__":
    main()
