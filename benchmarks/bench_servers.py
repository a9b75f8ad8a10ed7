"""Labelling throughput with one judge server against several, in the same run.

Each server is ``tests/judge/fake_openai.py`` in its own process with a throughput ceiling,
like a GPU: at most ``--slots`` requests at once, each taking ``--service-s`` seconds (so one
server labels at most slots / service_s traces per second). The same N wrong traces are
labelled through the real pipeline, first against one server, then against ``--servers`` of
them (``--base-url`` repeated), and the ratio of the two rates is printed with both, as one
JSON object. With enough client concurrency the ratio approaches the number of servers.

    python benchmarks/bench_servers.py [--n 600] [--servers 3] [--slots 4] [--service-s 0.1]

The defaults keep each server (40 labels/s) well below what the client process can do on a
2-core machine, so that the servers are the bottleneck, as GPUs are.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_label import REPO, SERVER, _write_traces


def _start(slots: int, service_s: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--slots", str(slots), "--service-s", str(service_s)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=str(REPO),
    )
    assert proc.stdout is not None
    port = int(proc.stdout.readline().split()[1])
    return proc, f"http://127.0.0.1:{port}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--service-s", type=float, default=0.1)
    args = parser.parse_args()

    from misstep.judge import JudgeConfig
    from misstep.pipelines import run_labeling
    from misstep.taxonomy import load_taxonomy

    procs = [_start(args.slots, args.service_s) for _ in range(args.servers)]
    urls = [url for _, url in procs]
    rates: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            traces = Path(tmp) / "traces.jsonl"
            _write_traces(traces, args.n)
            for name, used in (("one_server", urls[:1]), ("servers", urls)):
                config = JudgeConfig(
                    backend="openai",
                    base_url=used[0],
                    extra_base_urls=used[1:],
                    concurrency=2 * args.slots * args.servers,
                )
                start = time.perf_counter()
                summary = run_labeling(
                    traces, Path(tmp) / name, config, taxonomy=load_taxonomy(None)
                )
                seconds = time.perf_counter() - start
                rates[name] = summary.written / seconds
    finally:
        for proc, _ in procs:
            proc.terminate()
            proc.wait(timeout=10)
    ceiling = args.slots / args.service_s
    print(
        json.dumps(
            {
                "labels": args.n,
                "servers": args.servers,
                "server_ceiling_labels_per_s": round(ceiling, 1),
                "one_server_labels_per_s": round(rates["one_server"], 1),
                "servers_labels_per_s": round(rates["servers"], 1),
                "ratio": round(rates["servers"] / rates["one_server"], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
