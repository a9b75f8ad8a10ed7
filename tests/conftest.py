"""Fixtures shared by the whole suite."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# ../shared/data beside the checkout holds real annotated traces; the suite skips what needs it
# when it is absent, since the project must install and test without it.
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real-vLLM tier runs last: in CI its environment (about 6 minutes to build) is built in
    the background meanwhile (.ci/run), and a failure elsewhere shows before its long tests."""
    real = REPO_ROOT / "tests" / "real"
    items.sort(key=lambda item: Path(str(item.path)).is_relative_to(real))


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
