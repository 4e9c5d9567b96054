from __future__ import annotations

import dataclasses
import itertools

import pytest

from scenarios.sim import ParallelSpec, ScenarioError, parse_scenario, predict, search_layouts
from scenarios.sim.search import REJECT_REASONS, enumerate_candidates
from tests.sim._fabrics import fabric
from tests.sim._scenarios import scenario_dict


def _scenario():
    return parse_scenario(scenario_dict(cluster={"nodes": 2}, parallel={"dp": 2}, global_batch=32))


def test_enumerate_candidates_covers_every_factorisation():
    c = enumerate_candidates(16, moe=False, global_batch=8)
    assert (c["tp"] * c["pp"] * c["cp"] * c["dp"] == 16).all()
    shapes = {(int(a), int(b), int(d)) for a, b, d in zip(c["tp"], c["pp"], c["cp"], strict=True)}
    assert len(shapes) == 35  # exponent triples with a + b + c <= 4: C(7, 3)
    assert c["tp"].size == 35 * 8 * 4 * 3 * 4  # vpp 1..8, micro-batch 1..8, recompute, zero


def test_search_layouts_best_first_and_counts_add_up(catalog):
    result = search_layouts(_scenario(), catalog=catalog, fabric=fabric(2), top_k=5)
    times = [row["step_time_s"] for row in result.best]
    assert times == sorted(times) and len(times) == 5
    assert result.valid + sum(result.rejected.values()) == result.candidates
    assert set(result.rejected) == set(REJECT_REASONS)
    assert result.rejected["tp does not divide heads"] == 0  # 16 heads, tp <= 16
    assert all(row["memory_gib_per_gpu"] <= 80 for row in result.best)


def test_search_layouts_best_matches_predict(catalog):
    scenario = _scenario()
    best = search_layouts(scenario, catalog=catalog, fabric=fabric(2), top_k=1).best[0]
    job = dataclasses.replace(
        scenario.job,
        parallel=ParallelSpec(
            tp=best["tp"], pp=best["pp"], dp=best["dp"], cp=best["cp"], ep=best["ep"], vpp=best["vpp"]
        ),
        micro_batch=best["micro_batch"],
        recompute=best["recompute"],
        zero=best["zero"],
    )
    direct = predict(dataclasses.replace(scenario, job=job), catalog=catalog, fabric=fabric(2))
    assert direct.step_time_s == pytest.approx(best["step_time_s"], rel=1e-9)


def test_search_layouts_rejects_layouts_that_do_not_fit(catalog):
    data = scenario_dict(
        cluster={"nodes": 2},
        parallel={"dp": 2},
        global_batch=32,
        model={"layers": 96, "hidden": 12288, "heads": 96},
    )
    result = search_layouts(parse_scenario(data), catalog=catalog, fabric=fabric(2), top_k=3)
    assert result.rejected["does not fit in GPU memory"] > 0
    assert all(row["memory_gib_per_gpu"] <= 80 for row in result.best)


def test_search_layouts_rejects_bad_top(catalog):
    with pytest.raises(ScenarioError, match="top: must be ≥ 1"):
        search_layouts(_scenario(), catalog=catalog, fabric=fabric(2), top_k=0)


def test_search_layouts_branch_and_bound_equals_exhaustive(catalog, monkeypatch):
    import scenarios.sim.search as search

    data = scenario_dict(cluster={"nodes": 4}, parallel={"dp": 4}, global_batch=64)
    scenario = parse_scenario(data)
    pruned = search_layouts(scenario, catalog=catalog, fabric=fabric(4), top_k=8)
    monkeypatch.setattr(search, "SHAPES_PER_BATCH", 10**9)  # one batch: every shape costed
    exhaustive = search_layouts(scenario, catalog=catalog, fabric=fabric(4), top_k=8)
    assert [r["step_time_s"] for r in pruned.best] == [r["step_time_s"] for r in exhaustive.best]
    assert pruned.rejected == exhaustive.rejected


def test_search_layouts_slices_merge_to_the_whole_search(catalog):
    from scenarios.sim.search import merge_search_results

    scenario = parse_scenario(scenario_dict())
    whole = search_layouts(scenario, catalog=catalog, top_k=6)
    edges = [0, 97, 1000, 2500, whole.candidates]
    parts = [
        search_layouts(scenario, catalog=catalog, top_k=6, candidates=slice(a, b))
        for a, b in itertools.pairwise(edges)
    ]
    assert [p.candidates for p in parts] == [b - a for a, b in itertools.pairwise(edges)]
    merged = merge_search_results(parts, top_k=6)
    assert merged == whole
    assert all(row["candidate"] >= 0 for row in whole.best)


def test_search_layouts_on_part_of_the_cluster_searches_the_job_gpus(catalog, monkeypatch):
    import scenarios.sim.search as search

    data = scenario_dict(
        cluster={"nodes": 8}, parallel={"dp": 2}, global_batch=32, nodes=2, placement="spread"
    )
    scenario = parse_scenario(data)
    pruned = search_layouts(scenario, catalog=catalog, fabric=fabric(8), top_k=6)
    assert pruned.candidates == enumerate_candidates(16, moe=False, global_batch=32)["tp"].size
    assert all(r["tp"] * r["pp"] * r["dp"] * r["cp"] == 16 for r in pruned.best)
    monkeypatch.setattr(search, "SHAPES_PER_BATCH", 10**9)
    exhaustive = search_layouts(scenario, catalog=catalog, fabric=fabric(8), top_k=6)
    assert [r["step_time_s"] for r in pruned.best] == [r["step_time_s"] for r in exhaustive.best]
