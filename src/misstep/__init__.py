"""misstep: find out why a reasoning model's answers are wrong, checkpoint by checkpoint."""

from importlib.metadata import PackageNotFoundError, version

from misstep.errors import MisstepError

try:
    __version__ = version("misstep")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"

__all__ = ["MisstepError", "__version__"]
