"""Floor-plan metrics: the registry of the design's and the kinds' declarations, feed loading
(vectorized vs naive), rack power, alignment."""

from __future__ import annotations

import itertools
import sys
import types

import numpy as np
import pytest

from scenarios.kinds import RunKind, floor_metrics, registry
from scenarios.metrics import DESIGN_METRICS, DesignRackArrays, Metric, feed_loads
from scenarios.selectors import metric_values


def naive_feed_loads(a: DesignRackArrays):
    """Reference: loop over feed losses and racks, exactly as the rule reads."""
    n_feeds, n_racks = a.feed_capacity_kw.size, a.rack_pk.size
    feeds_of = [
        [int(f) for f, r in zip(a.pair_feed, a.pair_rack, strict=True) if r == rack]
        for rack in range(n_racks)
    ]

    def loads(lost):
        kw = np.zeros(n_feeds)
        for rack in range(n_racks):
            alive = [f for f in feeds_of[rack] if f != lost]
            for f in alive:
                kw[f] += a.nameplate_kw[rack] / len(alive)
        return kw

    normal = loads(None)
    worst = normal.copy()
    for lost in range(n_feeds):
        after = loads(lost)
        after[lost] = 0.0
        worst = np.maximum(worst, after)
    return normal / a.feed_capacity_kw, worst / a.feed_capacity_kw


def random_arrays(seed: int) -> DesignRackArrays:
    rng = np.random.default_rng(seed)
    n_racks, n_feeds = int(rng.integers(1, 9)), int(rng.integers(2, 7))
    pairs = set()
    for rack in range(n_racks):
        for f in rng.choice(n_feeds, size=int(rng.integers(2, min(4, n_feeds) + 1)), replace=False):
            pairs.add((int(f), rack))
    pair_feed, pair_rack = (np.array(c) for c in zip(*sorted(pairs), strict=True))
    return rack_arrays(
        nameplate_kw=rng.uniform(5, 40, n_racks),
        feed_capacity_kw=rng.uniform(20, 60, n_feeds),
        pair_feed=pair_feed,
        pair_rack=pair_rack,
    )


def rack_arrays(*, nameplate_kw, feed_capacity_kw, pair_feed, pair_rack) -> DesignRackArrays:
    from topology.selectors import RackPower

    n = nameplate_kw.size
    power = RackPower(
        rack_pk=np.arange(n) + 10,
        budget_kw=np.full(n, 40.0),
        nameplate_kw=nameplate_kw,
        nodes=np.ones(n, dtype=int),
        switches=np.zeros(n, dtype=int),
        gpu_type=np.zeros(n, dtype=int),
        gpu_slugs=["h100-sxm"],
    )
    return DesignRackArrays(
        power=power, feed_capacity_kw=feed_capacity_kw, pair_feed=pair_feed, pair_rack=pair_rack
    )


@pytest.mark.parametrize("seed", range(12))
def test_feed_loads_match_the_naive_reference(seed):
    arrays = random_arrays(seed)
    normal, worst = feed_loads(arrays)
    ref_normal, ref_worst = naive_feed_loads(arrays)
    np.testing.assert_allclose(normal, ref_normal, rtol=1e-12)
    np.testing.assert_allclose(worst, ref_worst, rtol=1e-12)


def test_feed_loss_on_a_two_feed_rack_doubles_the_other_feed():
    arrays = rack_arrays(
        nameplate_kw=np.array([20.0]),
        feed_capacity_kw=np.array([40.0, 40.0]),
        pair_feed=np.array([0, 1]),
        pair_rack=np.array([0, 0]),
    )
    normal, worst = feed_loads(arrays)
    np.testing.assert_allclose(normal, [0.25, 0.25])
    np.testing.assert_allclose(worst, [0.5, 0.5])


def test_registry_has_design_and_run_metrics_with_scales():
    metrics = floor_metrics()
    assert {"rack_power", "feed_load", "feed_load_n1", "gpu_type"} <= {m.name for m in DESIGN_METRICS}
    assert {"link_util", "slowdown"} <= {n for n, m in metrics.items() if m.kind == "run"}
    assert metrics["gpu_type"].scale == "categorical"
    for metric in metrics.values():
        assert metric.label and metric.kind in ("design", "run")


def test_the_registry_is_the_designs_metrics_plus_every_kinds_declarations():
    """No second list of metrics: what the pages read is exactly the design's and the kinds'."""
    declared = [m for kind in registry().values() for m in kind.metrics]
    metrics = floor_metrics()
    assert set(metrics) == {m.name for m in (*DESIGN_METRICS, *declared)}
    assert all(metrics[m.name] is m for m in (*DESIGN_METRICS, *declared))
    assert {m.name for m in DESIGN_METRICS} == {n for n, m in metrics.items() if m.kind == "design"}
    assert {m.name for m in declared} == {n for n, m in metrics.items() if m.kind == "run"}
    # The floor plan's select order: design metrics on a scale, the kinds' in registry order,
    # categorical last.
    assert list(metrics) == [
        "rack_power",
        "feed_load",
        "feed_load_n1",
        "link_util",
        "slowdown",
        "job",
        "failures",
        "power_rack",
        "power_feed",
        "gpu_type",
    ]


def test_each_run_metric_belongs_to_the_kind_that_stores_it():
    kinds = registry()
    names = {kind: {m.name for m in kinds[kind].metrics} for kind in kinds}
    assert names["step"] == {"link_util", "slowdown", "job"}
    assert names["failures"] == {"failures"} and names["power"] == {"power_rack", "power_feed"}
    # A search and a sweep store no per-rack arrays: they declare no run metric.
    assert names["search"] == set() and names["sweep"] == set()
    for metric in (m for kind in kinds.values() for m in kind.metrics):
        assert metric.kind == "run" and metric.array and metric.compute is None


def test_every_kind_opens_on_a_metric_it_or_the_design_declares():
    for kind in registry().values():
        own = {m.name for m in (*DESIGN_METRICS, *kind.metrics)}
        assert kind.default_metric in own, kind.name


def test_a_kind_without_run_metrics_opens_on_a_design_metric_not_an_empty_one():
    """An opening metric the run has no values for draws a grey floor plan."""
    design = {m.name for m in DESIGN_METRICS}
    for kind in registry().values():
        if not kind.metrics:
            assert kind.default_metric in design, kind.name


_MODULES = itertools.count()


def _registered(monkeypatch, settings, *kinds: RunKind) -> None:
    """Register ``kinds`` (one throw-away module each, named apart: the registry is cached by the
    module paths) after the built-in ones."""
    paths = []
    for kind in kinds:
        module = types.ModuleType(f"tests.scenarios._kind_{next(_MODULES)}")
        module.KIND = kind
        monkeypatch.setitem(sys.modules, module.__name__, module)
        paths.append(module.__name__)
    settings.TWIN_RUN_KINDS = [*settings.TWIN_RUN_KINDS, *paths]


def _kind(name: str, *, metrics=(), default_metric="rack_power") -> RunKind:
    return type(
        f"{name.title()}Kind",
        (RunKind,),
        {"name": name, "label": name, "metrics": metrics, "default_metric": default_metric},
    )()


HEAT = Metric(name="heat", label="Heat", unit="kW", scale=(0.0, 1.0), array="rack_heat_kw")


def test_a_plugin_kinds_metric_joins_the_registry(monkeypatch, settings):
    _registered(monkeypatch, settings, _kind("thermal", metrics=(HEAT,), default_metric="heat"))
    assert floor_metrics()["heat"] is HEAT and list(floor_metrics())[-2:] == ["heat", "gpu_type"]


def test_a_kind_opening_on_a_metric_nobody_declares_is_refused(monkeypatch, settings):
    _registered(monkeypatch, settings, _kind("thermal", default_metric="heat"))
    with pytest.raises(ImportError, match="kind 'thermal' opens on floor-plan metric 'heat'"):
        registry()


def test_a_kind_opening_on_another_kinds_metric_is_refused(monkeypatch, settings):
    """``default_metric`` names the kind's own metrics or the design's, never one it does not store."""
    _registered(monkeypatch, settings, _kind("thermal", default_metric="failures"))
    with pytest.raises(ImportError, match="opens on floor-plan metric 'failures'"):
        registry()


def test_one_metric_name_declared_twice_differently_is_refused(monkeypatch, settings):
    other = Metric(name="link_util", label="Heat", unit="kW", scale=(0.0, 1.0), array="rack_heat_kw")
    _registered(monkeypatch, settings, _kind("thermal", metrics=(other,)))
    with pytest.raises(ImportError, match="'link_util', which kind 'step' declares differently"):
        registry()


def test_a_metric_is_a_design_or_a_run_metric():
    with pytest.raises(ValueError, match="give compute"):
        Metric(name="x", label="X", unit="", scale=(0.0, 1.0))


def test_rack_power_is_nameplate_over_budget(design, catalog):
    """The rack power of the saved rows equals the plan's (servers, switches and their
    transceivers), and a generated rack sits at its nameplate over nameplate + 10 %."""
    from topology.fabric.layout import RACK_BUDGET_MARGIN
    from topology.models import Rack
    from topology.selectors import design_plan

    values = metric_values("rack_power", design=design)
    racks = list(Rack.objects.filter(hall__design=design).order_by("pk"))
    assert len(values) == len(racks)
    plan = design_plan(design=design)
    expected = plan.rack_nameplate_w() / 1000 / np.array([r.power_budget_kw for r in racks])
    np.testing.assert_allclose(values, expected, atol=1e-3)
    np.testing.assert_allclose(values, 1 / (1 + RACK_BUDGET_MARGIN), atol=1e-3)


def test_gpu_type_metric_is_categorical_per_rack(design):
    values = metric_values("gpu_type", design=design)
    categories = floor_metrics()["gpu_type"].categories(design=design)
    assert categories == ["h100-sxm"]
    assert set(values) <= {0.0, -1.0} and 0.0 in values


def test_run_metric_is_none_without_a_run(design):
    assert metric_values("link_util", design=design) is None


def test_unknown_metric_names_the_known_ones(design):
    with pytest.raises(KeyError, match="known: rack_power"):
        metric_values("nope", design=design)
