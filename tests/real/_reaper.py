"""Supervisor of one real server: ``python _reaper.py PARENT_PID -- CMD...``.

It leads its own process group (the launcher starts it with ``start_new_session``) and runs CMD in
that group, so vLLM's API process, its engine core and their helpers all share one group. It kills
the whole group when the process that launched it (PARENT_PID) is gone, however that one died
(kill -9 of pytest included), and exits with CMD's status when CMD ends. The launcher stops a
server by killing the group. Standard library only: it runs under any Python.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time


def _parent_alive(pid: int) -> bool:
    if os.getppid() != pid:  # re-parented: the launcher is gone
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def main() -> None:
    parent = int(sys.argv[1])
    cmd = sys.argv[sys.argv.index("--") + 1 :]
    child = subprocess.Popen(cmd)
    while True:
        code = child.poll()
        if code is not None:
            # The server ended on its own: take its helpers with it, then report its status.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.killpg(0, signal.SIGTERM)
            sys.exit(code)
        if not _parent_alive(parent):
            os.killpg(0, signal.SIGKILL)
        time.sleep(0.5)


if __name__ == "__main__":
    main()
