"""misstep.prompts."""

__all__: list[str] = []
