"""Page-load benchmark of ``misstep review`` on 10^6 traces and 10^5 judge labels.

Usage: python benchmarks/bench_review.py [--traces 1000000] [--labels 100000] [--requests 300]
           [--stalled 150] [--base PATH] [--work DIR] [--keep]

The traces are the real Reasoning Gym run (../shared/data/reasoning_gym_eval, 7,000 responses
of two checkpoints) replicated: replica r renames each trace and problem (``#r<r>``), so every
replica is a new set of problems with the real responses, answers and vote statistics. The
labels are the rules judge's labels of the real run's wrong traces, replicated the same way. The
graded table is the real run's graded table replicated (grading 10^6 traces would measure the
grader, not the app). A live server answers real HTTP requests (http.client, one connection
per request) for random traces and random filtered pages; prints JSON with p50/p95/max times,
start-up times (text index built, then read from the cache) and the process's memory.

With ``--stalled N``: N connections that stall mid-request (half of them send headers and
promise a body they never send, half send half a request line) against the server's default
request deadline (``misstep.review.REQUEST_TIMEOUT``); reports the time until each is dropped
and the open-trace times of other requests made meanwhile, and the server's thread count.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import random
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import numpy as np
import orjson
import pandas as pd

from misstep.agreement import load_labelled_run
from misstep.judge import JudgeConfig
from misstep.labels import read_labels
from misstep.pipelines import run_labeling
from misstep.review import REQUEST_TIMEOUT, ReviewData, ReviewServer, make_server, open_trace_texts
from misstep.review._texts import _cache_file
from misstep.rollouts import GradedRun, load_graded
from misstep.taxonomy import load_taxonomy

REAL_RUN = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "reasoning_gym_eval"
    / "llama_rl_ckpts.jsonl.gz"
)


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _pcts(times_ms: list[float]) -> dict[str, float]:
    a = np.asarray(times_ms)
    return {
        "n": len(times_ms),
        "p50_ms": round(float(np.percentile(a, 50)), 2),
        "p95_ms": round(float(np.percentile(a, 95)), 2),
        "max_ms": round(float(a.max()), 2),
    }


def _replicate(base: Path, table: pd.DataFrame, n: int, out: Path) -> pd.DataFrame:
    """Write ``n`` traces (the base run replicated) to ``out``; return their graded table."""
    rows = [orjson.loads(line) for line in _lines(base)]
    assert [r["trace_id"] for r in rows] == table["trace_id"].tolist(), "table order"
    reps = math.ceil(n / len(rows))
    parts = []
    with open(out, "wb") as fh:
        written = 0
        for r in range(reps):
            take = min(len(rows), n - written)
            for row in rows[:take]:
                copy = dict(row)
                copy["trace_id"] = f"{row['trace_id']}#r{r}"
                copy["problem_id"] = f"{row['problem_id']}#r{r}"
                fh.write(orjson.dumps(copy) + b"\n")
            part = table.iloc[:take].copy()
            part["trace_id"] = part["trace_id"].astype(str) + f"#r{r}"
            part["problem_id"] = part["problem_id"].astype(str) + f"#r{r}"
            parts.append(part)
            written += take
    return pd.concat(parts, ignore_index=True)


def _lines(path: Path) -> list[bytes]:
    import gzip

    with gzip.open(path, "rb") as fh:
        return [line for line in fh if line.strip()]


def _get(port: int, token: str, path: str) -> tuple[int, bytes, float]:
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    response = conn.getresponse()
    body = response.read()
    elapsed = (time.perf_counter() - start) * 1000
    conn.close()
    return response.status, body, elapsed


def _stalled(server: ReviewServer, n: int, trace_ids: list[str]) -> dict[str, object]:
    """N stalled uploads at once; others' requests meanwhile; when each was dropped."""
    host = f"127.0.0.1:{server.port}"
    threads_before = threading.active_count()
    socks = []
    for i in range(n):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=REQUEST_TIMEOUT * 3)
        if i % 2:
            sock.sendall(
                f"POST /api/labels HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer "
                f"{server.token}\r\nContent-Type: application/json\r\n"
                'Content-Length: 1000\r\n\r\n{"trace'.encode()
            )
        else:
            sock.sendall(b"GET /api/sum")
        socks.append(sock)
    start = time.monotonic()
    others = []
    for t in trace_ids:
        status, body, ms = _get(server.port, server.token, "/api/traces/" + quote(t, safe=""))
        assert status == 200, body[:200]
        others.append(ms)
    threads_during = threading.active_count()
    dropped = []
    for sock in socks:
        try:
            while sock.recv(1024):
                pass
        except OSError:
            pass
        dropped.append(time.monotonic() - start)
        sock.close()
    return {
        "n": n,
        "request_timeout_s": REQUEST_TIMEOUT,
        "dropped_after_s_max": round(max(dropped), 2),
        "dropped_after_s_min": round(min(dropped), 2),
        "open_trace_meanwhile": _pcts(others),
        "threads_before": threads_before,
        "threads_during": threads_during,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--labels", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--stalled", type=int, default=0, help="stalled uploads to time")
    parser.add_argument("--base", type=Path, default=REAL_RUN)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not args.base.exists():
        sys.exit(f"no base run at {args.base}")
    work = Path(args.work or tempfile.mkdtemp(prefix="bench_review_"))
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    sha = None
    try:
        t0 = time.perf_counter()
        base_run = load_graded(args.base)
        base_dir = work / "base_labels"
        run_labeling(args.base, base_dir, JudgeConfig(backend="rules"), taxonomy=load_taxonomy())
        base_labels = [
            lab.model_dump(mode="json")
            for lab in read_labels(base_dir).values()
            if lab.status in ("ok", "abstained")  # the judge's answers, typed or not
        ]
        big = work / "traces.jsonl"
        table = _replicate(args.base, base_run.table, args.traces, big)
        run_dir = work / "run"
        run_dir.mkdir(exist_ok=True)
        with open(run_dir / "labels.jsonl", "wb") as fh:
            for i in range(args.labels):
                r, k = divmod(i, len(base_labels))
                record = dict(base_labels[k])
                record["trace_id"] = f"{record['trace_id']}#r{r}"
                fh.write(orjson.dumps(record) + b"\n")
        prepare_s = time.perf_counter() - t0
        sha = f"bench-{args.traces}-{time.time_ns()}"  # a new key: the index is built
        run = GradedRun(table=table, input_path=big, input_sha256=sha, from_cache=False)
        ids = table["trace_id"].astype(str).tolist()
        rss0 = _rss_mb()
        t1 = time.perf_counter()
        texts = open_trace_texts(big, ids, input_sha256=run.input_sha256)
        index_build_s = time.perf_counter() - t1
        texts.close()
        t2 = time.perf_counter()
        texts = open_trace_texts(big, ids, input_sha256=run.input_sha256)
        index_cached_s = time.perf_counter() - t2
        del ids
        t3 = time.perf_counter()
        data = ReviewData(load_labelled_run(run_dir, run), texts)
        data_s = time.perf_counter() - t3
        rss_loaded = _rss_mb()
        server = make_server(data)
        server.start()
        port, token = server.port, server.token
        status, _, summary_ms = _get(port, token, "/api/summary")
        assert status == 200
        status, _, dist_ms = _get(port, token, "/api/distributions")
        assert status == 200
        labelled = [t for t in data.label_rows if t in data.row_of]
        trace_ids = [
            rng.choice(labelled) if i % 2 else data.trace_ids[rng.randrange(data.n)]
            for i in range(args.requests)
        ]
        open_ms = []
        for t in trace_ids:
            status, body, ms = _get(port, token, "/api/traces/" + quote(t, safe=""))
            assert status == 200, body[:200]
            open_ms.append(ms)
        # The same over one keep-alive connection, as a browser does.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        keep_ms = []
        for t in trace_ids[:100]:
            start = time.perf_counter()
            conn.request(
                "GET",
                "/api/traces/" + quote(t, safe=""),
                headers={"Authorization": f"Bearer {token}"},
            )
            response = conn.getresponse()
            response.read()
            keep_ms.append((time.perf_counter() - start) * 1000)
            assert response.status == 200
        conn.close()
        keys = list(data.taxonomy.keys)
        list_ms, totals = [], []
        for _ in range(args.requests):
            f: dict[str, object] = {"checkpoint": rng.choice(data.checkpoints)}
            if rng.random() < 0.7:
                f["error_type"] = rng.choice(keys)
            if rng.random() < 0.5:
                f["majority_failure"] = rng.choice(["true", "false"])
            if rng.random() < 0.3:
                f["min_confidence"] = rng.choice([0.0, 0.5, 0.8])
            if rng.random() < 0.2:
                f = {"status": rng.choice(["ok", "unlabelled"])}
            status, body, _ = _get(port, token, "/api/traces?" + urlencode({**f, "limit": 1}))
            total = json.loads(body)["total"]
            offset = rng.randrange(max(1, total - 50)) if total > 50 else 0
            status, body, ms = _get(
                port, token, "/api/traces?" + urlencode({**f, "offset": offset, "limit": 50})
            )
            assert status == 200, body[:200]
            list_ms.append(ms)
            totals.append(total)
        sorted_ms = []
        for _ in range(max(1, args.requests // 10)):
            key = rng.choice(["problem_id", "-sample_idx", "confidence", "outcome"])
            f = {"checkpoint": rng.choice(data.checkpoints), "sort": key, "limit": 50}
            status, body, ms = _get(port, token, "/api/traces?" + urlencode(f))
            assert status == 200, body[:200]
            sorted_ms.append(ms)
        stalled = _stalled(server, args.stalled, trace_ids[:50]) if args.stalled else None
        rss_end = _rss_mb()
        server.shutdown()
        server.server_close()
        result = {
            "benchmark": "bench_review",
            "traces": data.n,
            "labels": len(data.label_rows),
            "base_run": str(args.base.name),
            "input_bytes": big.stat().st_size,
            "requests_each": args.requests,
            "open_trace": _pcts(open_ms),
            "open_trace_keep_alive": _pcts(keep_ms),
            "list_filtered_page_of_50": _pcts(list_ms),
            "list_totals_median": int(np.median(totals)),
            "list_sorted_page_of_50_incl_first_sort": _pcts(sorted_ms),
            "stalled_uploads": stalled,
            "summary_ms": round(summary_ms, 1),
            "first_distributions_ms": round(dist_ms, 1),
            "startup_s": {
                "text_index_build": round(index_build_s, 2),
                "text_index_from_cache": round(index_cached_s, 3),
                "tables_and_labels": round(data_s, 2),
            },
            "memory_mb": {
                "rss_with_graded_table": round(rss0, 1),
                "rss_loaded": round(rss_loaded, 1),
                "rss_after_requests": round(rss_end, 1),
                "text_index_offsets": round(texts.offsets.nbytes / 2**20, 1),
            },
            "prepare_s": round(prepare_s, 1),
            "cpu_count": os.cpu_count(),
        }
        print(json.dumps(result))
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
        if sha is not None:
            _cache_file(sha, "jsonl", ".offsets.npy").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
