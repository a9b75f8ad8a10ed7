"""Fixtures shared by the whole suite, and how the suite is spread over pytest-xdist workers.

``make test`` runs ``pytest -n 4 --dist loadfile``: each test file goes whole to one worker (its
module fixtures are made once, its tests run in their order), except the real-vLLM tier, which
forms two groups (``_real_group``): every test that uses the tier's servers runs in one worker
(the servers start once per run), and the rest of the tier (the offline and Ray engines, the
checks that need no server) in another. The two groups are scheduled first: they wait on vLLM
(in CI its environment is built meanwhile) while the other workers run the rest of the suite.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL = REPO_ROOT / "tests" / "real"
# ../shared/data beside the checkout holds real annotated traces; the suite skips what needs it
# when it is absent, since the project must install and test without it.
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
# The worker input that names the folder where workers leave the real tier's groups.
_GROUPS_KEY = "misstep_groups_dir"


def _is_real(item: pytest.Item) -> bool:
    return Path(str(item.path)).is_relative_to(REAL)


def _real_group(item: pytest.Item) -> str:
    """``real-servers`` for a tier test that uses the session's servers, else ``real-engines``."""
    return "real-servers" if "servers" in getattr(item, "fixturenames", ()) else "real-engines"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In one process the real-vLLM tier runs last: a failure elsewhere shows before its long
    tests, and in CI its environment (about 6 minutes to build) is built meanwhile. In an
    xdist worker it comes first, and the worker tells the scheduler which group each of its
    tests belongs to (the scheduler sees node ids only, not fixtures)."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None:
        items.sort(key=_is_real)
        return
    items.sort(key=lambda item: not _is_real(item))
    folder = workerinput.get(_GROUPS_KEY)
    if folder:
        groups = {item.nodeid: _real_group(item) for item in items if _is_real(item)}
        path = Path(folder) / f"{workerinput['workerid']}.json"
        path.with_suffix(".tmp").write_text(json.dumps(groups), encoding="utf-8")
        path.with_suffix(".tmp").replace(path)


if importlib.util.find_spec("xdist") is not None:
    from xdist.scheduler import LoadScopeScheduling

    class _FilesAndRealGroups(LoadScopeScheduling):
        """``--dist loadfile``, with the real-vLLM tier in its two groups, scheduled in the
        workers' collection order (the tier first) rather than largest file first."""

        def __init__(self, config: pytest.Config, log: Any = None) -> None:
            super().__init__(config, log)
            config.option.loadscopereorder = False
            self.folder = _groups_dir(config)
            self.groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                # Every worker has written its file before it reported its collection.
                (first, *_) = sorted(self.folder.glob("*.json"))
                self.groups = json.loads(first.read_text(encoding="utf-8"))
            return self.groups.get(nodeid) or nodeid.split("::", 1)[0]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
        if config.getoption("dist") != "loadfile":
            return None
        return _FilesAndRealGroups(config, log)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(node: Any) -> None:
        if node.config.getoption("dist") == "loadfile":
            node.workerinput[_GROUPS_KEY] = str(_groups_dir(node.config))


_GROUPS_DIR = pytest.StashKey[Path]()


def _groups_dir(config: pytest.Config) -> Path:
    """The controller's folder for the workers' group files, made on first use and removed
    when the run ends."""
    if _GROUPS_DIR not in config.stash:
        folder = Path(tempfile.mkdtemp(prefix="misstep-xdist-groups-"))
        config.stash[_GROUPS_DIR] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    return config.stash[_GROUPS_DIR]


def _run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's temporary folder: under pytest-xdist the one that holds each worker's own."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if "PYTEST_XDIST_WORKER" in os.environ else root


@contextlib.contextmanager
def exclusive(tmp_path_factory: pytest.TempPathFactory, resource: str) -> Iterator[None]:
    """Hold ``resource`` alone in this test run: xdist workers that ask for it take turns."""
    with open(_run_root(tmp_path_factory) / f"{resource}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture
def ray_slot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The run's one Ray cluster at a time, for a test that starts one: a local cluster is a
    dozen processes, and two or three starting at once on 2 cores starved a judge server's
    answer past misstep's 5 s probe (pipelines/test_ray.py takes it for its module)."""
    with exclusive(tmp_path_factory, "ray"):
        yield


@dataclass(frozen=True)
class DemoRun:
    """``misstep demo --out DIR`` as run once for the whole test run (``demo_run``)."""

    out: Path
    """The demo's folder. Shared: read it, or ``copy_to`` a folder of your own to write."""
    output: str
    """What the command printed (stdout and stderr)."""
    stdout: str
    """What it printed on stdout."""

    def copy_to(self, dest: Path) -> Path:
        """A copy of the demo's folder at ``dest`` (a test's own, to write into)."""
        shutil.copytree(self.out, dest)
        return dest


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """The demo, run through the CLI once per test run instead of once per test that needs it
    (about 7 CPU seconds each). Under pytest-xdist the first worker to ask runs it in the
    run's shared temporary folder, under a lock, and the others read what it left; it grades
    into a graded-table cache of its own, like every test (``_isolated_cache``)."""
    from typer.testing import CliRunner

    from misstep.cli import app

    root = _run_root(tmp_path_factory)
    record = root / "demo-run.json"
    with exclusive(tmp_path_factory, "demo-run"):
        if not record.exists():
            out = root / "demo-run" / "demo"
            with pytest.MonkeyPatch.context() as env:
                env.setenv("XDG_CACHE_HOME", str(root / "demo-run" / "cache"))
                result = CliRunner().invoke(app, ["demo", "--out", str(out)])
            assert result.exit_code == 0, result.output
            made = {"out": str(out), "output": result.output, "stdout": result.stdout}
            record.write_text(json.dumps(made), encoding="utf-8")
    made = json.loads(record.read_text(encoding="utf-8"))
    return DemoRun(out=Path(made["out"]), output=made["output"], stdout=made["stdout"])


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ../shared/data, or skip the test when it is not there."""
    if not (SHARED_DATA / "README.md").exists():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test gets its own graded-table cache: none reads another's tables or the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
