"""The second command on the same input: grading once, then reading the cached graded table.
Prints one JSON object.

Usage: python benchmarks/bench_cache.py [--input FILE] [--n 200000]

Cases, each timed in this run:
- ``real``: ``--input`` (default: the shared Reasoning Gym run, ../shared/data, when present):
  real model output with its real answer diversity;
- ``synthetic``: ``--n`` synthetic traces from ``gen_grading_traces.py`` (varied LaTeX answers).

For each: ``first_s`` is ``misstep summary`` through the CLI with an empty cache (hash, read,
grade, cache, metrics), ``second_s`` the same command again (hash, read the cached table,
metrics), ``ratio`` = first / second. Both run in fresh processes, so Python's start-up and the
vote metrics are in both figures. ``load_first_s`` / ``load_cached_s`` time
``misstep.rollouts.load_graded`` alone in this process (grading and caching, then reading the
cached table; hashing the input is in both), and ``load_ratio`` is their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_grading_traces import write_traces

ROOT = Path(__file__).resolve().parents[1]
SHARED_RUN = ROOT.parent / "shared" / "data" / "reasoning_gym_eval" / "llama_rl_ckpts.jsonl.gz"


def _summary_seconds(path: Path, cache: Path) -> float:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "misstep.cli", "summary", str(path), "--format", "json"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def _load_seconds(path: Path, cache: Path) -> tuple[float, float]:
    from misstep.rollouts import load_graded

    start = time.perf_counter()
    first = load_graded(path, cache_dir=cache)
    middle = time.perf_counter()
    second = load_graded(path, cache_dir=cache)
    end = time.perf_counter()
    assert not first.from_cache and second.from_cache
    return middle - start, end - middle


def _case(path: Path, work: Path) -> dict[str, object]:
    cache = work / f"cache-{path.name}"
    first = _summary_seconds(path, cache)
    second = _summary_seconds(path, cache)
    load_first, load_cached = _load_seconds(path, work / f"api-cache-{path.name}")
    return {
        "input": str(path),
        "bytes": path.stat().st_size,
        "first_s": round(first, 2),
        "second_s": round(second, 2),
        "ratio": round(first / second, 1),
        "load_first_s": round(load_first, 2),
        "load_cached_s": round(load_cached, 2),
        "load_ratio": round(load_first / load_cached, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=SHARED_RUN if SHARED_RUN.exists() else None)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--skip-real", action="store_true", help="Only the synthetic case.")
    args = parser.parse_args()
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.input is not None and not args.skip_real:
            out["real"] = _case(args.input, work)
        synthetic = work / "synthetic.jsonl"
        write_traces(synthetic, args.n, seed=0)
        out["synthetic"] = {"traces": args.n, **_case(synthetic, work)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
