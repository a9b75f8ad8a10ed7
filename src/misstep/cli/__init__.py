"""The command line: the only layer that prints with rich and maps errors to exit codes."""

from misstep.cli.app import app, main

__all__ = ["app", "main"]
