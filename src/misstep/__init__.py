"""misstep: find out why a reasoning model's answers are wrong, checkpoint by checkpoint."""

from typing import Any

from misstep.errors import MisstepError

__all__ = ["MisstepError", "__version__"]
__version__: str  # set on first use by ``__getattr__``


def __getattr__(name: str) -> Any:
    # ``__version__`` is looked up on first use: importlib.metadata costs about 0.1 s of
    # start-up, which every command (and every grading run without the cache) would pay.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("misstep")
        except PackageNotFoundError:  # running from a source tree without an install
            value = "0.0.0+unknown"
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module 'misstep' has no attribute {name!r}")
