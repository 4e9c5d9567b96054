"""Floor-plan metrics: one value per rack of a design, from the design or a run.

A :class:`Metric` describes one coloring of the floor plan. The design's own metrics live here
(:data:`DESIGN_METRICS`: rack power, feed load with all feeds up and after the worst feed loss,
GPU type); a run kind declares the metrics its runs store (``RunKind.metrics``, each naming the
per-rack array it reads), and ``scenarios.kinds.floor_metrics()`` is the registry of both that
the pages, the stream and the selectors read.

Values are float arrays aligned with the racks of the design's first hall ordered by primary key
(the order ``design_floor_plan_json`` lists them and the fabric compiler indexes them).
Categorical metrics give indices into ``Metric.categories`` (-1 = no value, e.g. a network rack).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from scenarios.sim.power import feeds as power_feeds
from topology.caches import VersionedCache
from topology.selectors import design_rack_power

Scale = tuple[float, float] | Literal["categorical"]


@dataclass(frozen=True)
class Metric:
    """A floor-plan coloring: its label, unit, source and color scale.

    Exactly one of ``compute`` (a design metric) and ``array`` (a run metric) is given.

    Attributes
    ----------
    name : str
        Registry key (also the ``metric`` of stream messages and of ``RunOutput.rack_values``).
    label, unit : str
        What the legend shows.
    scale : (min, max) or "categorical"
        Color scale; values outside are clamped by the page.
    compute : callable(*, design) -> ndarray (R,), for design metrics
    array : str, for run metrics
        The ``RunArray`` (R,) a run of the kind stores (``scenarios.storage.run_array``).
    categories : callable(*, design) -> list[str], for categorical metrics
    description : str
        One sentence for the legend's tooltip.
    """

    name: str
    label: str
    unit: str
    scale: Scale
    compute: Callable[..., np.ndarray] | None = field(default=None, repr=False)
    array: str | None = None
    categories: Callable[..., list[str]] | None = field(default=None, repr=False)
    description: str = ""

    def __post_init__(self):
        if (self.compute is None) == (self.array is None):
            raise ValueError(f"metric {self.name!r}: give compute (a design metric) or array (a run metric)")

    @property
    def kind(self) -> Literal["design", "run"]:
        """Whether it needs a run."""
        return "design" if self.compute is not None else "run"

    @property
    def categorical(self) -> bool:
        return self.scale == "categorical"

    def describe(self, *, design=None) -> dict[str, Any]:
        """The JSON the page's metric registry reads (no values)."""
        out = {
            "name": self.name,
            "label": self.label,
            "unit": self.unit,
            "kind": self.kind,
            "scale": self.scale if self.categorical else list(self.scale),
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


def rack_power_fraction(*, design) -> np.ndarray:
    """Rack IT power at nameplate / rack budget, (R,)."""
    a = design_rack_arrays(design)
    return np.divide(a.nameplate_kw, a.budget_kw, out=np.zeros_like(a.budget_kw), where=a.budget_kw > 0)


def rack_feed_load(*, design) -> np.ndarray:
    """Highest load fraction among each rack's feeds with all feeds up, (R,)."""
    a = design_rack_arrays(design)
    return _rack_max_of_feeds(a, feed_loads(a)[0])


def rack_feed_load_n1(*, design) -> np.ndarray:
    """Highest load fraction among each rack's feeds after the worst single feed loss, (R,)."""
    a = design_rack_arrays(design)
    return _rack_max_of_feeds(a, feed_loads(a)[1])


def rack_gpu_type(*, design) -> np.ndarray:
    """Index of each rack's GPU type in ``gpu_type_names(design)`` (-1 without GPUs), (R,)."""
    return design_rack_power(design).gpu_type.astype(float)


def gpu_type_names(*, design) -> list[str]:
    """Category labels of :func:`rack_gpu_type`."""
    return list(design_rack_power(design).gpu_slugs)


DESIGN_METRICS: tuple[Metric, ...] = (
    Metric(
        name="rack_power",
        label="Rack IT power vs budget",
        unit="fraction of budget",
        scale=(0.0, 1.2),
        compute=rack_power_fraction,
        description="Servers at nameplate (GPUs at TDP) plus switches, over the rack's power budget.",
    ),
    Metric(
        name="feed_load",
        label="Feed load (all feeds up)",
        unit="fraction of derated capacity",
        scale=(0.0, 1.2),
        compute=rack_feed_load,
        description="Busiest feed of the rack, racks drawing nameplate power split over their feeds.",
    ),
    Metric(
        name="feed_load_n1",
        label="Feed load after worst single feed loss",
        unit="fraction of derated capacity",
        scale=(0.0, 1.2),
        compute=rack_feed_load_n1,
        description="Busiest feed of the rack when the one feed whose loss hurts it most fails.",
    ),
    Metric(
        name="gpu_type",
        label="GPU type",
        unit="",
        scale="categorical",
        compute=rack_gpu_type,
        categories=gpu_type_names,
        description="The accelerator in the rack's servers.",
    ),
)
"""The metrics every design has, whatever was run on it."""


def rack_list(values, decimals: int = 3) -> list[float | None]:
    """Per-rack values as the page and the stream carry them: rounded, None where there is no
    value (NaN: a rack without GPUs, say)."""
    rounded = np.round(np.asarray(values, dtype=float), decimals)
    return [None if not np.isfinite(v) else v for v in rounded.tolist()]
