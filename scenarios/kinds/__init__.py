"""The registry of run kinds.

``settings.TWIN_RUN_KINDS`` lists the modules of the kinds this installation runs; each module
defines one :class:`~scenarios.kinds.base.RunKind` subclass and exposes an instance as ``KIND``.
Adding a kind is one new module plus one line in that setting (``docs/live-runs.md`` walks
through an example); services, tasks, the stream and the pages only ever ask this registry.

The floor-plan metrics (:func:`floor_metrics`) are the design's (``scenarios.metrics``) plus the
ones each kind declares (``RunKind.metrics``): there is no other list of them.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import import_module

from django.conf import settings
from django.core.exceptions import ValidationError

from scenarios.kinds.base import Figure, JobInfeasible, RunKind, RunOutput
from scenarios.kinds.context import RunContext
from scenarios.metrics import DESIGN_METRICS, Metric
from utilities.errors import preview

__all__ = [
    "Figure",
    "JobInfeasible",
    "RunContext",
    "RunKind",
    "RunOutput",
    "floor_metrics",
    "kind_choices",
    "metric_by_name",
    "registry",
    "run_kind",
]


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
    _check_metrics(kinds)
    return kinds


def _check_metrics(kinds: dict[str, RunKind]) -> None:
    """Every metric name means one metric, and every kind opens on a metric it or the design has."""
    declared: dict[str, tuple[str, Metric]] = {m.name: ("the design", m) for m in DESIGN_METRICS}
    for kind in kinds.values():
        for metric in kind.metrics:
            owner, known = declared.setdefault(metric.name, (f"kind {kind.name!r}", metric))
            if known != metric:
                raise ImportError(
                    f"TWIN_RUN_KINDS: kind {kind.name!r} declares floor-plan metric {metric.name!r}, "
                    f"which {owner} declares differently (share the one declaration)"
                )
        own = {m.name for m in (*DESIGN_METRICS, *kind.metrics)}
        if kind.default_metric not in own:
            raise ImportError(
                f"TWIN_RUN_KINDS: kind {kind.name!r} opens on floor-plan metric {kind.default_metric!r}, "
                f"which neither it nor the design declares (known: {', '.join(sorted(own))})"
            )


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


@lru_cache(maxsize=4)
def _floor_metrics(modules: tuple[str, ...]) -> dict[str, Metric]:
    metrics = {m.name: m for m in DESIGN_METRICS}
    for kind in _load(modules).values():
        for metric in kind.metrics:
            metrics.setdefault(metric.name, metric)
    # The metrics on a scale first, the categorical ones (a colour per category) after: the order
    # of the floor plan's select and hover card.
    return dict(sorted(metrics.items(), key=lambda item: item[1].categorical))


def floor_metrics() -> dict[str, Metric]:
    """Every floor-plan metric by name: the design's, then those of the kinds in registry order
    (a metric several kinds share appears once), categorical ones last."""
    return _floor_metrics(tuple(settings.TWIN_RUN_KINDS))


def metric_by_name(name: str) -> Metric:
    """The floor-plan metric called ``name``, or KeyError ``metric: unknown ... (known: ...)``."""
    metrics = floor_metrics()
    try:
        return metrics[name]
    except (KeyError, TypeError):
        raise KeyError(f"metric: unknown {preview(name)} (known: {', '.join(metrics)})") from None


def kind_choices() -> list[tuple[str, str]]:
    """``(name, label)`` of every kind, for forms and filters."""
    return [(kind.name, kind.label) for kind in registry().values()]
