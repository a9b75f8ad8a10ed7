"""Grading workers die with the process that made them, however it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

_SCRIPT = """
import os, sys, time
from misstep.rollouts import EquivalenceChecker
checker = EquivalenceChecker(workers=2)
pool = checker._ensure_pool(2)
list(pool.map(abs, range(4)))  # start the workers
print(" ".join(str(pid) for pid in pool._processes), flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        state = next(
            (line for line in status.read_text().splitlines() if line.startswith("State:")), ""
        )
        return "Z" not in state.split(":", 1)[-1][:3]  # a zombie has ended
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork pools: Linux")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_their_parent(sig: signal.Signals) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", _SCRIPT], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True
    ) as parent:
        assert parent.stdout is not None
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(pid) for pid in workers)
        parent.send_signal(sig)
        parent.wait(timeout=10)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)
