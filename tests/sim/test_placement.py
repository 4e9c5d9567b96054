"""A job on part of a cluster: which nodes, which GPUs, and what the rest of the core makes of it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from scenarios.sim import ParallelSpec, ScenarioError, parse_scenario, predict, search_layouts
from scenarios.sim.placement import choose_nodes, eligible_node_count, eligible_nodes, job_placement
from scenarios.sim.step.model import build_fabric
from topology.fabric.plan import LINK_TIERS

SERVER_LEAF, LEAF_SPINE = LINK_TIERS.index("server_leaf"), LINK_TIERS.index("leaf_spine")


def _scenario(cluster: dict, parallel: dict, **job) -> dict:
    return {
        "version": 1,
        "name": "partial",
        "cluster": {"generator": "rail-optimized", "server": "dgx-h100", **cluster},
        "job": {
            "model": {"layers": 8, "hidden": 2048, "heads": 16, "vocab": 51200, "seq_len": 2048},
            "global_batch": 64,
            "micro_batch": 1,
            "parallel": parallel,
            **job,
        },
    }


def _nvl72(gpus_per_domain=64, parallel=None, **job) -> dict:
    cluster = {"generator": "nvl72", "server": "gb200-nvl72", "nodes": 36}  # 2 racks of 18 trays
    return _scenario(
        cluster, parallel or {"tp": 4, "pp": 2, "dp": 16}, gpus_per_domain=gpus_per_domain, **job
    )


def _naive_eligible(gpu_node, gpu_domain, gpus_per_domain):
    """Reference: walk the nodes in order, counting each domain's GPUs taken so far."""
    taken, out = {}, []
    for node in range(int(gpu_node.max()) + 1):
        domain, gpus = int(gpu_domain[gpu_node == node][0]), int((gpu_node == node).sum())
        if taken.get(domain, 0) + gpus <= gpus_per_domain:
            out.append(node)
        taken[domain] = taken.get(domain, 0) + gpus
    return out


def test_eligible_nodes_matches_naive_reference_on_random_domains():
    rng = np.random.default_rng(11)
    for _ in range(20):
        per_node, n_nodes = int(rng.choice([2, 4])), int(rng.integers(1, 30))
        gpu_node = np.repeat(np.arange(n_nodes), per_node)
        node_domain = np.sort(rng.integers(0, 5, n_nodes))
        gpu_domain = node_domain[gpu_node]
        limit = per_node * int(rng.integers(1, 6))
        got = eligible_nodes(gpu_node, gpu_domain, n_nodes=n_nodes, gpus_per_domain=limit)
        assert got.tolist() == _naive_eligible(gpu_node, gpu_domain, limit)
    assert eligible_nodes(gpu_node, gpu_domain, n_nodes=n_nodes).tolist() == list(range(n_nodes))


def test_choose_nodes_packed_takes_the_first_and_spread_spaces_evenly():
    eligible = np.arange(16) * 2
    assert choose_nodes(eligible, 4, "packed").tolist() == [0, 2, 4, 6]
    assert choose_nodes(eligible, 4, "spread").tolist() == [0, 8, 16, 24]
    assert choose_nodes(eligible, 16, "spread").tolist() == eligible.tolist()
    with pytest.raises(ValueError, match="count"):
        choose_nodes(eligible, 17)


def test_eligible_node_count_of_a_generated_cluster_matches_the_fabric(catalog):
    fabric = build_fabric(parse_scenario(_nvl72()), catalog)
    for gpus_per_domain in (4, 64, 72):
        from_fabric = eligible_nodes(
            fabric.gpu_node, fabric.gpu_domain, n_nodes=fabric.n_nodes, gpus_per_domain=gpus_per_domain
        )
        count = eligible_node_count(
            cluster_nodes=36, gpus_per_server=4, scaleup_domain_gpus=72, gpus_per_domain=gpus_per_domain
        )
        assert from_fabric.size == count == 2 * gpus_per_domain // 4


def test_job_placement_puts_rank_r_on_the_rth_gpu_of_the_job_nodes(catalog):
    fabric = build_fabric(parse_scenario(_scenario({"nodes": 16}, {"tp": 8, "pp": 1, "dp": 16})), catalog)
    spread = job_placement(fabric, nodes=4, placement="spread")
    assert spread.nodes.tolist() == [0, 4, 8, 12]
    expected = np.concatenate([np.arange(8) + 8 * node for node in (0, 4, 8, 12)])
    np.testing.assert_array_equal(spread.rank_gpu, expected)
    whole = job_placement(fabric)
    np.testing.assert_array_equal(whole.rank_gpu, np.arange(128))
    values = spread.gpu_values(np.arange(32), -1)
    assert values.shape == (128,) and values[8 * 4] == 8 and values[8] == -1


def test_partial_job_leaves_idle_nodes_links_unused_and_matches_a_cluster_of_its_size(catalog):
    partial = parse_scenario(_scenario({"nodes": 16}, {"tp": 8, "pp": 2, "dp": 4}, nodes=8))
    small = parse_scenario(_scenario({"nodes": 8}, {"tp": 8, "pp": 2, "dp": 4}))
    fabric = build_fabric(partial, catalog)
    assert fabric.n_nodes == 16 and build_fabric(small, catalog).n_tiers == fabric.n_tiers
    result, reference = predict(partial, catalog=catalog, fabric=fabric), predict(small, catalog=catalog)
    assert result.step_time_s == pytest.approx(reference.step_time_s, rel=1e-12)
    assert result.breakdown == pytest.approx(reference.breakdown, rel=1e-12)
    nic_node = np.arange(fabric.nic_link.size) // (fabric.nic_link.size // fabric.n_nodes)
    idle_links = fabric.nic_link[nic_node >= 8]
    assert np.all(np.asarray(fabric.link_tier)[idle_links] == SERVER_LEAF)
    assert np.all(result.link_utilization[idle_links] == 0.0)
    assert result.link_utilization[fabric.nic_link[nic_node < 8]].max() > 0
    assert result.gpus == 64 and result.gpu_slowdown.shape == (128,)
    stage = result.timeline.gpu_stage
    assert stage.shape == (128,) and np.all(stage[64:] == -1)
    assert np.bincount(stage[:64]).tolist() == [32, 32]


def test_spread_job_crosses_the_spines_where_packed_stays_under_its_leaves(catalog):
    utilization = {}
    for placement in ("packed", "spread"):
        data = _scenario(
            {"nodes": 16, "su_nodes": 4, "tiers": 2},
            {"tp": 8, "pp": 1, "dp": 4},
            nodes=4,
            placement=placement,
            overlap_dp=False,
        )
        scenario = parse_scenario(data)
        fabric = build_fabric(scenario, catalog)
        assert fabric.n_tiers == 2
        result = predict(scenario, catalog=catalog, fabric=fabric)
        utilization[placement] = result.link_utilization[np.asarray(fabric.link_tier) == LEAF_SPINE]
    assert np.all(utilization["packed"] == 0.0)  # 4 nodes of one scalable unit: rails stay in a leaf
    assert utilization["spread"].max() > 0.0  # one node per unit: the dp ring crosses the spines


def test_nvl72_job_on_64_of_72_gpus_per_rack_runs(catalog):
    scenario = parse_scenario(_nvl72())
    fabric = build_fabric(scenario, catalog)
    result = predict(scenario, catalog=catalog, fabric=fabric)
    assert result.gpus == 64 * 2 and result.step_time_s > 0
    used = result.timeline.gpu_stage >= 0
    assert np.bincount(np.asarray(fabric.gpu_domain)[used]).tolist() == [64, 64]
    tray_in_rack = np.asarray(fabric.gpu_node) % 18
    assert np.all(used == (tray_in_rack < 16))  # the last two trays of each rack are spares
    assert np.all(result.gpu_slowdown[~used] == 1.0)


@pytest.mark.parametrize(
    ("gpus_per_domain", "message"),
    [
        (
            66,
            r"^job\.gpus_per_domain: must be a multiple of gpus_per_server \(4 on gb200-nvl72\) \(got 66\)$",
        ),
        (76, r"^job\.gpus_per_domain: must be ≤ scaleup_domain_gpus \(72 on gb200-nvl72\) \(got 76\)$"),
    ],
)
def test_nvl72_rejects_gpus_per_domain_off_the_tray_grid_or_above_the_rack(catalog, gpus_per_domain, message):
    with pytest.raises(ScenarioError, match=message):
        predict(parse_scenario(_nvl72(gpus_per_domain)), catalog=catalog)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            _scenario({"nodes": 16}, {"tp": 8, "pp": 1, "dp": 4}),
            "job.parallel: dp × tp × pp × cp must equal the cluster's GPUs (16 nodes × 8 = 128) "
            "(got 4 × 8 × 1 × 1 = 32)",
        ),
        (
            _scenario({"nodes": 16}, {"tp": 8, "pp": 1, "dp": 4}, nodes=8),
            "job.parallel: dp × tp × pp × cp must equal the job's GPUs (job.nodes 8 × 8 = 64) "
            "(got 4 × 8 × 1 × 1 = 32)",
        ),
        (
            _scenario({"nodes": 16}, {"tp": 8, "pp": 1, "dp": 4}, nodes=17),
            "job.nodes: must be ≤ cluster.nodes (16) (got 17)",
        ),
        (
            _nvl72(parallel={"tp": 4, "pp": 2, "dp": 17}, nodes=34, global_batch=68),
            "job.nodes: must be ≤ the nodes eligible under job.gpus_per_domain 64 (32: 16 of every 18 "
            "servers) (got 34)",
        ),
        (
            _nvl72(parallel={"tp": 4, "pp": 2, "dp": 8}),
            "job.parallel: dp × tp × pp × cp must equal the job's GPUs (32 nodes eligible under "
            "job.gpus_per_domain 64 × 4 = 128) (got 8 × 4 × 2 × 1 = 64)",
        ),
    ],
)
def test_job_gpu_count_and_node_errors_name_the_field_and_the_limit(catalog, data, message):
    with pytest.raises(ScenarioError) as info:
        predict(parse_scenario(data), catalog=catalog)
    assert str(info.value) == message


def test_parse_rejects_an_unknown_placement():
    data = _scenario({"nodes": 16}, {"tp": 8, "pp": 1, "dp": 4}, nodes=4, placement="scattered")
    with pytest.raises(
        ScenarioError, match=r"^job\.placement: must be one of packed, spread \(got 'scattered'\)"
    ):
        parse_scenario(data)


def test_stragglers_are_drawn_over_the_job_gpus_only(catalog):
    base = _scenario({"nodes": 16}, {"tp": 8, "pp": 1, "dp": 4}, nodes=4, placement="spread")
    still = {"straggler_spread": 0.0}
    idle_slow = predict(parse_scenario({**base, "what_if": {**still, "slow_nodes": [5]}}), catalog=catalog)
    busy_slow = predict(parse_scenario({**base, "what_if": {**still, "slow_nodes": [4]}}), catalog=catalog)
    assert idle_slow.breakdown["straggler"] == 0.0 and np.all(idle_slow.gpu_slowdown == 1.0)
    assert busy_slow.breakdown["straggler"] > 0.0
    np.testing.assert_array_equal(np.flatnonzero(busy_slow.gpu_slowdown > 1.0), np.arange(32, 40))


def test_search_on_a_partial_job_keeps_its_gpus_and_agrees_with_predict(catalog):
    scenario = parse_scenario(
        _scenario({"nodes": 16}, {"tp": 8, "pp": 1, "dp": 4}, nodes=4, placement="spread")
    )
    fabric = build_fabric(scenario, catalog)
    result = search_layouts(scenario, catalog=catalog, fabric=fabric, top_k=5)
    assert result.best
    for row in result.best:
        assert row["dp"] * row["tp"] * row["pp"] * row["cp"] == 32
    best = result.best[0]
    job = dataclasses.replace(
        scenario.job,
        parallel=ParallelSpec(
            tp=best["tp"], pp=best["pp"], dp=best["dp"], cp=best["cp"], ep=best["ep"], vpp=best["vpp"]
        ),
        micro_batch=best["micro_batch"],
        recompute=best["recompute"],
        zero=best["zero"],
    )
    direct = predict(dataclasses.replace(scenario, job=job), catalog=catalog, fabric=fabric)
    assert direct.step_time_s == pytest.approx(best["step_time_s"], rel=1e-9)
