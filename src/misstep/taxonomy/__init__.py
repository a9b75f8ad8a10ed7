"""misstep.taxonomy."""

__all__: list[str] = []
