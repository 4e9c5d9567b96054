"""The floor-plan metric registry: one value per rack of a design, from the design or a run.

Every metric's ``compute(design=..., run=...)`` returns a float array aligned with the racks of
the design's first hall ordered by primary key (the order ``design_floor_plan_json`` lists them
and the fabric compiler indexes them). Design metrics need only the design; run metrics read
arrays a run stored and return None when the run has not produced them (yet). Categorical
metrics return indices into ``Metric.categories`` (-1 = no value, e.g. a network rack).

Later issues (failures, power) add entries to ``METRICS``; the floor plan, the stream and the
page pick them up without other changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from scenarios.sim.power import feeds as power_feeds
from scenarios.storage import run_array
from topology.caches import VersionedCache
from topology.selectors import design_rack_power

Scale = tuple[float, float] | Literal["categorical"]


@dataclass(frozen=True)
class Metric:
    """A floor-plan coloring: its label, unit, source and color scale.

    Attributes
    ----------
    name : str
        Registry key (also the ``metric`` of stream messages).
    label, unit : str
        What the legend shows.
    kind : "design" | "run"
        Whether it needs a run.
    scale : (min, max) or "categorical"
        Color scale; values outside are clamped by the page.
    compute : callable(*, design, run=None) -> ndarray (R,) or None
    categories : callable(*, design) -> list[str], for categorical metrics
    description : str
        One sentence for the legend's tooltip.
    """

    name: str
    label: str
    unit: str
    kind: Literal["design", "run"]
    scale: Scale
    compute: Callable[..., np.ndarray | None] = field(repr=False)
    categories: Callable[..., list[str]] | None = field(default=None, repr=False)
    description: str = ""

    def describe(self, *, design=None) -> dict[str, Any]:
        """The JSON the page's metric registry reads (no values)."""
        out = {
            "name": self.name,
            "label": self.label,
            "unit": self.unit,
            "kind": self.kind,
            "scale": self.scale if self.scale == "categorical" else list(self.scale),
            "description": self.description,
        }
        if self.categories is not None and design is not None:
            out["categories"] = self.categories(design=design)
        return out


# --- design arrays -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DesignRackArrays:
    """Per-rack facts of a design's first hall (R racks by pk, F feeds by pk, K feed-rack pairs).

    Attributes
    ----------
    power : topology.selectors.RackPower
        Rack pks, budgets, nameplate power, GPU types (the one place rack power is summed).
    feed_capacity_kw : ndarray, (F,)
        Derated capacity of each feed.
    pair_feed, pair_rack : ndarray of int, (K,)
        Feed index and rack index of every feed-to-rack connection.
    """

    power: Any
    feed_capacity_kw: np.ndarray
    pair_feed: np.ndarray
    pair_rack: np.ndarray

    @property
    def rack_pk(self) -> np.ndarray:
        return self.power.rack_pk

    @property
    def budget_kw(self) -> np.ndarray:
        return self.power.budget_kw

    @property
    def nameplate_kw(self) -> np.ndarray:
        return self.power.nameplate_kw


_RACK_ARRAYS = VersionedCache("rack-arrays", maxsize=8)


def design_rack_arrays(design) -> DesignRackArrays:
    """Load :class:`DesignRackArrays` (cached per design version)."""
    return _RACK_ARRAYS.get(design, lambda: _design_rack_arrays(design))


def _design_rack_arrays(design) -> DesignRackArrays:
    from topology.models import PowerFeed

    power = design_rack_power(design)
    feeds = list(PowerFeed.objects.filter(design=design).order_by("pk").select_related("feed_type"))
    feed_pk = np.array([f.pk for f in feeds], dtype=np.int64)
    hall_pk = design.halls.order_by("pk").values_list("pk", flat=True).first()
    # Filter on the hall id, not ``rack__in`` a subquery: SQLite plans the latter badly (10 s
    # instead of 10 ms on a 4,500-rack hall).
    pairs = list(
        PowerFeed.racks.through.objects.filter(powerfeed__design=design, rack__hall_id=hall_pk).values_list(
            "powerfeed_id", "rack_id"
        )
    )
    pair_feed = np.searchsorted(feed_pk, np.array([p[0] for p in pairs], dtype=np.int64)).astype(np.int64)
    return DesignRackArrays(
        power=power,
        feed_capacity_kw=np.array([f.feed_type.capacity_kw for f in feeds], dtype=float),
        pair_feed=pair_feed,
        pair_rack=power.index(np.array([p[1] for p in pairs], dtype=np.int64)),
    )


# --- feed loading --------------------------------------------------------------------------------


def feed_loads(arrays: DesignRackArrays) -> tuple[np.ndarray, np.ndarray]:
    """Load fraction of every feed at nameplate with all feeds up and after the worst single
    feed loss (``scenarios.sim.power.feeds.feed_loads``, the power core's one rule), (F,) each."""
    return power_feeds.feed_loads(
        arrays.nameplate_kw, arrays.pair_feed, arrays.pair_rack, arrays.feed_capacity_kw
    )


def _rack_max_of_feeds(arrays: DesignRackArrays, per_feed: np.ndarray) -> np.ndarray:
    return power_feeds.rack_max_of_feeds(per_feed, arrays.pair_feed, arrays.pair_rack, arrays.rack_pk.size)


# --- metric functions ------------------------------------------------------------------------------


def rack_power_fraction(*, design, run=None) -> np.ndarray:
    """Rack IT power at nameplate / rack budget, (R,)."""
    a = design_rack_arrays(design)
    return np.divide(a.nameplate_kw, a.budget_kw, out=np.zeros_like(a.budget_kw), where=a.budget_kw > 0)


def rack_feed_load(*, design, run=None) -> np.ndarray:
    """Highest load fraction among each rack's feeds with all feeds up, (R,)."""
    a = design_rack_arrays(design)
    return _rack_max_of_feeds(a, feed_loads(a)[0])


def rack_feed_load_n1(*, design, run=None) -> np.ndarray:
    """Highest load fraction among each rack's feeds after the worst single feed loss, (R,)."""
    a = design_rack_arrays(design)
    return _rack_max_of_feeds(a, feed_loads(a)[1])


def rack_gpu_type(*, design, run=None) -> np.ndarray:
    """Index of each rack's GPU type in ``gpu_type_names(design)`` (-1 without GPUs), (R,)."""
    return design_rack_power(design).gpu_type.astype(float)


def gpu_type_names(*, design) -> list[str]:
    """Category labels of :func:`rack_gpu_type`."""
    return list(design_rack_power(design).gpu_slugs)


def _run_rack_array(name: str) -> Callable[..., np.ndarray | None]:
    def compute(*, design, run=None) -> np.ndarray | None:
        if run is None:
            return None
        values = run_array(run=run, name=name)
        if values is None or values.size != design_rack_power(design).rack_pk.size:
            return None
        return values.astype(float)

    compute.__doc__ = f"The run's stored ``{name}`` array, (R,), or None."
    compute.array_name = name  # what run_metric_values reads on a what-if's own hall
    return compute


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric(
            name="rack_power",
            label="Rack IT power vs budget",
            unit="fraction of budget",
            kind="design",
            scale=(0.0, 1.2),
            compute=rack_power_fraction,
            description="Servers at nameplate (GPUs at TDP) plus switches, over the rack's power budget.",
        ),
        Metric(
            name="feed_load",
            label="Feed load (all feeds up)",
            unit="fraction of derated capacity",
            kind="design",
            scale=(0.0, 1.2),
            compute=rack_feed_load,
            description="Busiest feed of the rack, racks drawing nameplate power split over their feeds.",
        ),
        Metric(
            name="feed_load_n1",
            label="Feed load after worst single feed loss",
            unit="fraction of derated capacity",
            kind="design",
            scale=(0.0, 1.2),
            compute=rack_feed_load_n1,
            description="Busiest feed of the rack when the one feed whose loss hurts it most fails.",
        ),
        Metric(
            name="link_util",
            label="Scale-out link utilization (hottest link)",
            unit="fraction of link capacity",
            kind="run",
            scale=(0.0, 1.0),
            compute=_run_rack_array("rack_link_utilization"),
            description="Mean utilization over a step of the busiest scale-out link in the rack.",
        ),
        Metric(
            name="slowdown",
            label="Slow / straggler nodes (worst GPU slowdown)",
            unit="× nominal compute time",
            kind="run",
            scale=(1.0, 1.5),
            compute=_run_rack_array("rack_slowdown"),
            description="Largest mean compute-time factor of the rack's GPUs (1 = nominal).",
        ),
        Metric(
            name="job",
            label="GPUs in the job",
            unit="fraction of the rack's GPUs",
            kind="run",
            scale=(0.0, 1.0),
            compute=_run_rack_array("rack_job_share"),
            description="Share of the rack's GPUs the job uses; 0 = idle (a hot spare), no data = no GPUs.",
        ),
        Metric(
            name="failures",
            label="Failures per rack (mean per run)",
            unit="failures",
            kind="run",
            scale=(0.0, 3.0),
            compute=_run_rack_array("rack_failures"),
            description="Mean number of failures a run of the failure simulation puts on the rack.",
        ),
        Metric(
            name="power_rack",
            label="Rack peak power vs budget",
            unit="fraction of budget",
            kind="run",
            scale=(0.0, 1.2),
            compute=_run_rack_array("power_rack_budget_fraction"),
            description="The rack's simulated peak draw (1 ms) over its power budget.",
        ),
        Metric(
            name="power_feed",
            label="Feed peak vs capacity (busiest feed of the rack)",
            unit="fraction of derated capacity",
            kind="run",
            scale=(0.0, 1.2),
            compute=_run_rack_array("power_rack_feed_utilisation"),
            description="Simulated peak load of the rack's busiest feed over its derated capacity.",
        ),
        Metric(
            name="gpu_type",
            label="GPU type",
            unit="",
            kind="design",
            scale="categorical",
            compute=rack_gpu_type,
            categories=gpu_type_names,
            description="The accelerator in the rack's servers.",
        ),
    )
}

#: Metric names by kind, in registry order.
DESIGN_METRICS = tuple(name for name, m in METRICS.items() if m.kind == "design")
RUN_METRICS = tuple(name for name, m in METRICS.items() if m.kind == "run")


def metric_values(name: str, *, design, run=None, decimals: int = 3) -> list[float] | None:
    """A metric's per-rack values rounded for the page (None when not available).

    Raises
    ------
    KeyError
        ``metric: unknown 'x' (known: ...)`` for a name not in ``METRICS``.
    """
    try:
        metric = METRICS[name]
    except KeyError:
        raise KeyError(f"metric: unknown {name!r} (known: {', '.join(METRICS)})") from None
    values = metric.compute(design=design, run=run)
    if values is None:
        return None
    return rack_list(values, decimals)


def run_metric_values(name: str, *, run, decimals: int = 3) -> list[float] | None:
    """A run metric's per-rack values as the run stored them, on whatever hall it simulated (a
    what-if that changes the cluster stores arrays over the racks it builds, not the design's)."""
    array = getattr(METRICS[name].compute, "array_name", None)
    values = run_array(run=run, name=array) if array else None
    return None if values is None else rack_list(values.astype(float), decimals)


def rack_list(values, decimals: int = 3) -> list[float | None]:
    """Per-rack values as the page and the stream carry them: rounded, None where there is no
    value (NaN: a rack without GPUs, say)."""
    rounded = np.round(np.asarray(values, dtype=float), decimals)
    return [None if not np.isfinite(v) else v for v in rounded.tolist()]
