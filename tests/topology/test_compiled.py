"""compile_plan: GPU/link arrays, latencies, bisection and the tree index arrays."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from topology.fabric.compiled import TIER_NAMES, compile_plan
from topology.fabric.generators import generate
from topology.fabric.plan import LINK_SERVER_LEAF, FabricError


@pytest.fixture(scope="module")
def superpod(catalog):
    return generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=2048)


def test_compile_gpu_arrays_are_rail_aligned(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=40)
    fabric = compile_plan(plan)
    assert fabric.n_gpus == 320 and fabric.n_nodes == 40 and fabric.n_links == plan.link_a.size
    gpu = np.arange(320)
    assert np.array_equal(fabric.gpu_node, gpu // 8)
    assert np.array_equal(fabric.gpu_local, gpu % 8)
    assert np.array_equal(fabric.gpu_nic, gpu)  # 8 GPUs, 8 NICs: GPU k uses NIC k
    assert np.array_equal(fabric.gpu_domain, gpu // 8)
    assert np.array_equal(fabric.gpu_rack, plan.node_rack[gpu // 8])
    leaf = fabric.nic_leaf[fabric.gpu_nic]
    assert np.array_equal(plan.switch_rail[leaf], gpu % 8)
    assert np.allclose(fabric.gpu_scaleup_gbytes_per_s, 450.0)


def test_compile_nvl72_domain_is_the_rack(catalog):
    fabric = compile_plan(generate("nvl72", catalog=catalog, server="gb200-nvl72", nodes=54))
    assert fabric.n_gpus == 216
    assert np.array_equal(fabric.gpu_domain, np.arange(216) // 72)
    assert np.array_equal(np.unique(fabric.gpu_rack[fabric.gpu_domain == 1]).size, 1)
    assert np.allclose(fabric.gpu_scaleup_gbytes_per_s, 900.0)


def test_compile_two_gpus_share_a_nic(catalog):
    # a variant server with 4 NICs for 8 GPUs: GPU k uses NIC k*4//8 = k//2
    servers = dict(catalog.servers)
    servers["dgx-h100"] = dataclasses.replace(servers["dgx-h100"], nics_per_server=4)
    variant = dataclasses.replace(catalog, servers=servers)
    plan = generate("rail-optimized", catalog=variant, server="dgx-h100", nodes=6)
    fabric = compile_plan(plan)
    gpu = np.arange(48)
    assert np.array_equal(fabric.gpu_nic, (gpu // 8) * 4 + (gpu % 8) // 2)
    assert plan.n_links["server_leaf"] == 24
    # 2 GPUs per 400G NIC: 200 Gb/s of bisection per GPU
    assert fabric.per_gpu_bisection_gbps == pytest.approx(200.0)


def test_compile_link_latency_is_optic_plus_upper_switch(catalog, superpod):
    fabric = compile_plan(superpod)
    optic_s = 100e-9  # ndr-400g latency in the catalog
    switch_s = 130e-9  # quantum-2-qm9700
    assert np.allclose(fabric.link_latency_s, optic_s + switch_s)
    up, down = fabric.directed_latency_s[0::2], fabric.directed_latency_s[1::2]
    nic = superpod.link_tier == LINK_SERVER_LEAF
    assert np.allclose(up, optic_s + switch_s)
    assert np.allclose(down[nic], optic_s)  # entering a NIC, no switch
    assert np.allclose(down[~nic], optic_s + switch_s)


def test_compile_directed_capacity_and_tiers(superpod):
    fabric = compile_plan(superpod)
    assert fabric.directed_capacity_gbps.shape == (2 * fabric.n_links,)
    assert np.array_equal(fabric.directed_capacity_gbps[0::2], fabric.link_gbps)
    assert np.array_equal(fabric.directed_capacity_gbps[1::2], fabric.link_gbps)
    assert TIER_NAMES == ("server_leaf", "leaf_spine", "spine_core")
    assert np.bincount(fabric.link_tier).tolist() == [16384, 16384, 16384]


def test_compile_link_rack_is_the_lower_end(superpod):
    fabric = compile_plan(superpod)
    nic = superpod.link_tier == LINK_SERVER_LEAF
    port = superpod.link_a[nic]
    assert np.array_equal(fabric.link_rack[nic], superpod.node_rack[port // 8])
    lower = superpod.link_a[~nic] - superpod.n_nic_ports
    assert np.array_equal(fabric.link_rack[~nic], superpod.switch_rack[lower])


@pytest.mark.parametrize(("ratio", "expected"), [(1.0, 400.0), (2.0, 200.0), (4.0, 100.0)])
def test_compile_per_gpu_bisection_drops_by_the_ratio(catalog, ratio, expected):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=2048, oversubscription=ratio)
    fabric = compile_plan(plan)
    assert fabric.per_gpu_bisection_gbps == pytest.approx(expected)
    assert fabric.bisection_gbps == pytest.approx(expected * fabric.n_gpus / 2)


def test_compile_bisection_two_tier_and_fat_tree(catalog):
    two_tier = compile_plan(generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=128))
    assert two_tier.n_tiers == 2 and two_tier.per_gpu_bisection_gbps == pytest.approx(400.0)
    fat = compile_plan(
        generate("fat-tree", catalog=catalog, server="dgx-a100", nodes=64, oversubscription=2.0)
    )
    assert fat.per_gpu_bisection_gbps == pytest.approx(100.0)


def test_compile_bisection_counts_a_thin_spine_core_tier(catalog, superpod):
    # halve every spine-core link's speed: the core tier becomes the bottleneck (200 per GPU)
    thin = superpod.link_gbps.copy()
    thin[superpod.link_tier == 2] = 200.0
    fabric = compile_plan(dataclasses.replace(superpod, link_gbps=thin))
    assert fabric.per_gpu_bisection_gbps == pytest.approx(200.0)


def test_compile_pods_and_uplink_index(superpod):
    fabric = compile_plan(superpod)
    assert fabric.n_pods == 16
    leaves = np.flatnonzero(superpod.switch_tier == 0)
    assert np.all(np.diff(fabric.up_ptr)[leaves] == 32)
    assert np.bincount(fabric.switch_pod[leaves]).tolist() == [32] * 16
    # each leaf's uplinks end at the 32 spines of its own pod
    first = fabric.up_ptr[leaves[0]]
    spines = fabric.up_upper[first : first + 32]
    assert np.unique(spines).size == 32
    assert np.all(fabric.switch_pod[spines] == fabric.switch_pod[leaves[0]])


def test_compile_rejects_nic_without_link(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=8)
    keep = np.arange(plan.link_a.size) != 0
    columns = {
        name: getattr(plan, name)[keep]
        for name in ("link_a", "link_b", "link_type", "link_gbps", "link_tier")
    }
    with pytest.raises(FabricError, match="NIC port 0"):
        compile_plan(dataclasses.replace(plan, **columns))


def test_compile_rejects_leaf_missing_a_pod_spine(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=2048)
    # move one leaf-spine link of leaf 0 onto a spine it already reaches
    tier1 = np.flatnonzero(plan.link_tier == 1)
    link_b = plan.link_b.copy()
    link_b[tier1[0]] = link_b[tier1[1]]
    with pytest.raises(FabricError, match="every spine of its pod"):
        compile_plan(dataclasses.replace(plan, link_b=link_b))


def test_compile_does_not_depend_on_spec_order(catalog):
    # a plan rebuilt from the database lists switch and link types sorted by slug; routing
    # must not change (everything is derived from the link columns)
    plan = generate("nvl72", catalog=catalog, server="gb200-nvl72", nodes=90)
    reverse_switch = np.arange(len(plan.switch_types))[::-1]
    rebuilt = dataclasses.replace(
        plan,
        switch_types=plan.switch_types[::-1],
        switch_type=reverse_switch[plan.switch_type],
    )
    assert [s.slug for s in rebuilt.switch_types] == ["nvlink-switch", "quantum-2-qm9700"]
    direct, again = compile_plan(plan), compile_plan(rebuilt.validate())
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, direct.n_gpus, (2, 3000))
    first, second = direct.route(src, dst, salt=1), again.route(src, dst, salt=1)
    assert (first.incidence != second.incidence).nnz == 0
    assert np.allclose(first.latency_s, second.latency_s)
    assert again.per_gpu_bisection_gbps == pytest.approx(400.0)


def test_compiled_arrays_are_read_only(superpod):
    fabric = compile_plan(superpod)
    with pytest.raises(ValueError, match="read-only"):
        fabric.directed_capacity_gbps[0] = 0.0
