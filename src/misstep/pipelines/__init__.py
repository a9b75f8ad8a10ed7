"""misstep.pipelines."""

__all__: list[str] = []
