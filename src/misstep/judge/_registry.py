"""Judge backends by name, as ``"module:factory"`` strings imported only when chosen."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from misstep.errors import BackendNotInstalledError, OptionError

if TYPE_CHECKING:
    from misstep.judge._config import JudgeConfig
    from misstep.judge._protocol import Judge
    from misstep.taxonomy import Taxonomy

__all__ = ["available_judges", "create_judge", "import_backend", "register_judge"]

JudgeFactory = Callable[["JudgeConfig", "Taxonomy"], "Judge"]

# Strings, not callables: ``vllm`` (heavy, GPU-only) is imported only when it is chosen.
_REGISTRY: dict[str, str | JudgeFactory] = {
    "rules": "misstep.judge._rules:create_rules_judge",
    "openai": "misstep.judge._openai:create_openai_judge",
    "vllm": "misstep.judge._vllm:create_vllm_judge",
}


def register_judge(name: str, target: str | JudgeFactory) -> None:
    """Register a backend: ``target`` is ``"module:factory"`` or a callable
    ``(config: JudgeConfig, taxonomy: Taxonomy) -> Judge``. Re-registering replaces it."""
    if not name or not name.replace("-", "_").isidentifier():
        raise OptionError(
            option="judge name", value=name, allowed="a non-empty identifier-like name"
        )
    if isinstance(target, str) and target.count(":") != 1:
        raise OptionError(
            option=f"judge target for {name!r}", value=target, allowed="'module.path:factory'"
        )
    _REGISTRY[name] = target


def import_backend(backend: str, *modules: str, extra: str | None = None) -> Any:
    """The first of ``modules`` once all of them import (an optional backend's libraries:
    ``vllm``, ``ray``), else BackendNotInstalledError naming the extra that installs them."""
    try:
        loaded = [importlib.import_module(name) for name in modules]
    except ImportError as exc:
        raise BackendNotInstalledError(
            backend=backend,
            extra=extra or backend,
            reason=f"the {modules[0]} package cannot be imported ({exc})",
        ) from None
    return loaded[0]


def available_judges() -> list[str]:
    """The registered backend names, sorted."""
    return sorted(_REGISTRY)


def _resolve(name: str, target: str | JudgeFactory) -> JudgeFactory:
    if not isinstance(target, str):
        return target
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise OptionError(
                option="backend",
                value=name,
                allowed=f"a backend whose module can be imported ({module_name} is missing)",
            ) from None
        raise
    factory: Any = getattr(module, attr, None)
    if not callable(factory):
        raise OptionError(
            option="backend", value=name, allowed=f"{target} must name a callable factory"
        )
    return factory  # type: ignore[no-any-return]


def create_judge(config: JudgeConfig, taxonomy: Taxonomy) -> Judge:
    """Build the backend named by ``config.backend``; OptionError lists the allowed names."""
    target = _REGISTRY.get(config.backend)
    if target is None:
        raise OptionError(
            option="backend",
            value=config.backend,
            allowed="one of " + ", ".join(available_judges()),
        )
    from misstep.judge._protocol import declared

    return declared(_resolve(config.backend, target)(config, taxonomy))
