"""The quick layout search (``max_shape_batches``): what the scenario form's layout proposal
runs. It costs only the most promising layout shapes, so it is approximate, but every layout it
returns is valid and fits, and given enough batches it is the exact search."""

from __future__ import annotations

import pytest

from scenarios.sim import ScenarioError, parse_scenario, search_layouts
from scenarios.sim import search as search_module
from tests.sim._fabrics import fabric
from tests.sim._scenarios import scenario_dict


def _scenario():
    return parse_scenario(scenario_dict(cluster={"nodes": 2}, parallel={"dp": 2}, global_batch=32))


def test_quick_search_with_enough_batches_is_the_exact_search(catalog):
    exact = search_layouts(_scenario(), catalog=catalog, fabric=fabric(2), top_k=3)
    quick = search_layouts(_scenario(), catalog=catalog, fabric=fabric(2), top_k=3, max_shape_batches=10_000)
    assert quick.to_dict() == exact.to_dict()


def test_quick_search_costs_one_batch_and_returns_a_valid_layout(catalog, monkeypatch):
    evaluated = []
    real = search_module._Costing.evaluate

    def counting(self, c, index, comm_time):
        evaluated.append(index.size)
        return real(self, c, index, comm_time)

    exact = search_layouts(_scenario(), catalog=catalog, fabric=fabric(2), top_k=1)
    monkeypatch.setattr(search_module._Costing, "evaluate", counting)
    quick = search_layouts(_scenario(), catalog=catalog, fabric=fabric(2), top_k=1, max_shape_batches=1)
    assert len(evaluated) == 2  # the lower bound of every survivor, then one batch of shapes
    best = quick.best[0]
    assert best["memory_gib_per_gpu"] <= 80
    assert best["tp"] * best["pp"] * best["dp"] * best["cp"] == 16
    assert best["step_time_s"] >= exact.best[0]["step_time_s"] * (1 - 1e-12)
    assert (quick.candidates, quick.valid, quick.rejected) == (exact.candidates, exact.valid, exact.rejected)


def test_quick_search_needs_at_least_one_batch(catalog):
    with pytest.raises(ScenarioError, match=r"max_shape_batches: must be ≥ 1 \(got 0\)"):
        search_layouts(_scenario(), catalog=catalog, fabric=fabric(2), max_shape_batches=0)
