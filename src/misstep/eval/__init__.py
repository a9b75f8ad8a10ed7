"""misstep.eval."""

__all__: list[str] = []
