"""The registry of run kinds.

``settings.TWIN_RUN_KINDS`` lists the modules of the kinds this installation runs; each module
defines one :class:`~scenarios.kinds.base.RunKind` subclass and exposes an instance as ``KIND``.
Adding a kind is one new module plus one line in that setting (``docs/live-runs.md`` walks
through an example); services, tasks, the stream and the pages only ever ask this registry.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import import_module

from django.conf import settings
from django.core.exceptions import ValidationError

from scenarios.kinds.base import Figure, RunKind, RunOutput
from scenarios.kinds.context import RunContext
from utilities.errors import preview

__all__ = ["Figure", "RunContext", "RunKind", "RunOutput", "kind_choices", "registry", "run_kind"]


@lru_cache(maxsize=4)
def _load(modules: tuple[str, ...]) -> dict[str, RunKind]:
    kinds: dict[str, RunKind] = {}
    for path in modules:
        kind = getattr(import_module(path), "KIND", None)
        if not isinstance(kind, RunKind):
            raise ImportError(f"TWIN_RUN_KINDS: {path} has no KIND (a RunKind instance)")
        if kind.name in kinds:
            raise ImportError(f"TWIN_RUN_KINDS: {path} registers {kind.name!r} a second time")
        kinds[kind.name] = kind
    return kinds


def registry() -> dict[str, RunKind]:
    """Every registered kind by name, in the order of ``TWIN_RUN_KINDS``."""
    return _load(tuple(settings.TWIN_RUN_KINDS))


def run_kind(name: str) -> RunKind:
    """The kind called ``name``, or ValidationError ``{"kind": ...}`` naming the known ones."""
    kinds = registry()
    try:
        return kinds[name]
    except (KeyError, TypeError):
        raise ValidationError(
            {"kind": f"kind: must be one of {', '.join(kinds)} (got {preview(name)})"}
        ) from None


def kind_choices() -> list[tuple[str, str]]:
    """``(name, label)`` of every kind, for forms and filters."""
    return [(kind.name, kind.label) for kind in registry().values()]
