"""The tier's process handling leaves nothing behind, even when the launcher is killed -9.

These use a stand-in command (a shell with a background child, like vLLM's API process and its
engine core) so that they run without vLLM; the real servers go through the same ``Proc``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.real._server import REPO_ROOT

TREE = ["bash", "-c", "sleep 300 & sleep 300 & wait"]


def _group_pids(pgid: int) -> list[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,pgid="], capture_output=True, text=True)
    return [int(p) for p, g in (ln.split() for ln in out.stdout.splitlines()) if int(g) == pgid]


def _wait_gone(pgid: int, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := _group_pids(pgid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def test_stop_kills_the_whole_group(tmp_path: Path) -> None:
    from tests.real._server import Proc

    proc = Proc(TREE, env=dict(os.environ), log=tmp_path / "log")
    deadline = time.monotonic() + 10
    while len(proc.group_pids()) < 4 and time.monotonic() < deadline:  # reaper, bash, 2 sleeps
        time.sleep(0.1)
    assert len(proc.group_pids()) == 4
    proc.stop(grace=2)
    assert _group_pids(proc.pgid) == []


def test_launcher_killed_with_sigkill_leaves_no_orphan(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, sys, time
        sys.path.insert(0, {str(REPO_ROOT)!r})
        from pathlib import Path
        from tests.real._server import Proc
        proc = Proc({TREE!r}, env=dict(os.environ), log=Path({str(tmp_path / "log")!r}))
        print(proc.pgid, flush=True)
        time.sleep(300)
        """
    )
    launcher = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert launcher.stdout is not None
    pgid = int(launcher.stdout.readline())
    deadline = time.monotonic() + 10
    while len(_group_pids(pgid)) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(_group_pids(pgid)) == 4
    launcher.send_signal(signal.SIGKILL)  # no atexit, no finalizer: only the reaper is left
    launcher.wait()
    launcher.stdout.close()
    assert _wait_gone(pgid) == []


def test_server_that_exits_takes_its_helpers_along(tmp_path: Path) -> None:
    from tests.real._server import Proc

    proc = Proc(["bash", "-c", "sleep 300 & exit 7"], env=dict(os.environ), log=tmp_path / "l")
    assert proc.popen.wait(timeout=10) == 7
    assert _wait_gone(proc.pgid) == []
    proc.stop(grace=1)
