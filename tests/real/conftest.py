"""Fixtures of the real-vLLM tier: a built vLLM venv and model, and real servers.

In CI (``CI=true``) or with ``MISSTEP_REAL_VLLM=1`` the environment is built when missing (a cold
build installs vLLM and converts the model: several minutes) and a failure to build fails the tier
loudly. Elsewhere the tier runs when the environment is already built and skips, saying how to
build it, when it is not. ``MISSTEP_REAL_VLLM=0`` skips it (never in CI). The server tests ask
only for what a server needs (``vllm_server_env``: vLLM and the model, built first), so in CI
they start while the rest of the environment (``vllm_env``: Ray and misstep's dependencies in
the vLLM venv, for the offline and Ray engines) is still being installed.

Servers are session-scoped, started once per test run (a start takes about 31 s on 2 cores):
``real_server`` ("a") is shared by every test and restarted only if a test killed it;
``second_server`` ("b") serves the failover test. Both are launched together as soon as the
first test that needs a server asks (``servers``), so their start-ups overlap each other;
"b" only when a selected test asks for ``second_server``. Under pytest-xdist every test that
uses ``servers`` runs in one worker (the ``real-servers`` group, ``tests/conftest.py``), so
the run still starts each server once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from misstep.labels import read_labels
from tests.real._server import REPO_ROOT, Server, VllmEnv, build_env

DATA = Path(__file__).with_name("data")
TRACES12 = DATA / "processbench_wrong12.jsonl"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.real_vllm)


def _env(*, servers: bool) -> VllmEnv:
    wanted = os.environ.get("MISSTEP_REAL_VLLM", "")
    if wanted == "0" and not _in_ci():
        pytest.skip("MISSTEP_REAL_VLLM=0")
    build = _in_ci() or wanted == "1"
    try:
        return build_env(build=build, servers=servers)
    except subprocess.CalledProcessError as exc:
        if build:
            pytest.fail(
                f"the real-vLLM environment could not be built:\n{exc.stderr[-4000:]}",
                pytrace=False,
            )
        pytest.skip(
            "real-vLLM environment not built ("
            + (exc.stderr.strip().splitlines() or ["?"])[-1]
            + "): run `python3.11 scripts/real_vllm_env.py` or set MISSTEP_REAL_VLLM=1"
        )


@pytest.fixture(scope="session")
def vllm_env() -> VllmEnv:
    """The whole environment: the offline and Ray engines and the checks run in its venv need
    Ray and misstep's dependencies there."""
    return _env(servers=False)


@pytest.fixture(scope="session")
def vllm_server_env() -> VllmEnv:
    """What a vLLM server (or ``run_batch``) needs, vLLM and the model: in CI, where the
    environment is built in the background, the server tests start once these are built, while
    the rest is installed (``scripts/real_vllm_env.py --servers``)."""
    return _env(servers=True)


@pytest.fixture(scope="session")
def server_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vllm-logs")


class ServerPool:
    """Session servers by name, launched ahead (``start``) or on first use (``get``), restarted
    when found dead."""

    def __init__(self, env: VllmEnv, logs: Path) -> None:
        self.env, self.logs = env, logs
        self.servers: dict[str, Server] = {}
        self.startup_s: list[float] = []

    def start(self, name: str) -> None:
        """Launch server ``name`` unless it is running; ``get`` waits until it answers."""
        if name not in self.servers:
            self.servers[name] = Server(self.env, self.logs, name=name)

    def get(self, name: str) -> Server:
        server = self.servers.get(name)
        if server is not None and server.ready_s is None:
            # Launched ahead by ``start``: wait for it (raises with its log if it died).
            self.startup_s.append(server.wait_ready())
            return server
        if server is None or not server.alive():
            if server is not None:
                server.stop()
            server = Server(self.env, self.logs, name=name)
            self.servers[name] = server
            self.startup_s.append(server.wait_ready())
        return server

    def stop(self, name: str) -> None:
        server = self.servers.pop(name, None)
        if server is not None:
            server.stop()

    def close(self) -> None:
        for name in list(self.servers):
            self.stop(name)


@pytest.fixture(scope="session")
def servers(
    vllm_server_env: VllmEnv, server_logs: Path, request: pytest.FixtureRequest
) -> Iterator[ServerPool]:
    pool = ServerPool(vllm_server_env, server_logs)
    try:
        pool.start("a")
        if any("second_server" in getattr(i, "fixturenames", ()) for i in request.session.items):
            pool.start("b")
        yield pool
    finally:
        pool.close()
        if pool.startup_s:
            print(f"\nreal vLLM server startups (s): {[round(s) for s in pool.startup_s]}")


@pytest.fixture
def real_server(servers: ServerPool) -> Server:
    return servers.get("a")


@pytest.fixture
def second_server(servers: ServerPool) -> Server:
    return servers.get("b")


def engine_env(vllm_env: VllmEnv, **extra: str) -> dict[str, str]:
    """The environment of an engine that a test starts outside the servers' group.

    vLLM pins each engine's model worker to the cores its automatic binding picks (on 2
    cores: core 0, the other one reserved), so every engine of the tier computes on one core.
    Under pytest-xdist these engines run beside the servers' group (``tests/conftest.py``):
    they are pinned to the last core instead, the one the servers leave free. Alone, or on one
    core, nothing changes. A thread binding, not an engine argument: the engine is the same."""
    cpus = sorted(os.sched_getaffinity(0))
    if "PYTEST_XDIST_WORKER" in os.environ and len(cpus) > 1:
        extra = {"VLLM_CPU_OMP_THREADS_BIND": str(cpus[-1]), **extra}
    return vllm_env.environ(**extra)


def misstep_cmd(*args: str) -> list[str]:
    """``misstep ARGS`` run by this interpreter (the project's venv) on this checkout."""
    return [sys.executable, "-m", "misstep.cli", *args]


def checkout_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT / "src")
    return env


# Replies of this model that loop stop here; long enough for a label with a short explanation.
MAX_TOKENS = "256"
CONCURRENCY = "12"


def statuses(run: Path) -> Counter[str]:
    return Counter(str(lab.status) for lab in read_labels(run).values())


def judge_ids(run: Path) -> set[str]:
    return {lab.judge for lab in read_labels(run).values() if str(lab.status) != "skipped"}


def assert_issue20_bar(run: Path, what: str) -> None:
    counts = statuses(run)
    print(f"{what}: {dict(counts)}")
    assert sum(counts.values()) == 12, counts  # nothing lost: one record per trace
    assert counts["unparseable"] == 0, counts
    # an answer is a type (ok) or "cannot tell" (abstained, the schema's cant_tell): both
    # prove the grammar and the exchange; the tiny model's choice between them is no quality
    assert counts["ok"] + counts["abstained"] >= 11, counts


def run_misstep(*args: str, env: dict[str, str] | None = None, python: Path | None = None) -> str:
    cmd = misstep_cmd(*args)
    if python is not None:
        cmd[0] = str(python)
    done = subprocess.run(
        cmd, env=env or checkout_env(), capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"{' '.join(cmd)}\nstdout:{done.stdout}\nstderr:{done.stderr}"
    return done.stderr


@pytest.fixture(scope="session")
def live_run(servers: ServerPool, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``misstep label --judge openai`` against the shared real server, once per session."""
    server = servers.get("a")
    run = tmp_path_factory.mktemp("live") / "run"
    run_misstep(
        "label", str(TRACES12), "--out", str(run), "--judge", "openai",
        "--base-url", server.base_url, "--max-tokens", MAX_TOKENS,
        "--concurrency", CONCURRENCY,
    )  # fmt: skip
    return run
