from __future__ import annotations

import numpy as np
import pytest

from scenarios.sim.step import collectives as coll
from scenarios.sim.step import traffic
from scenarios.sim.step.layout import build_layout
from tests.sim._fabrics import fabric

EFF_UP = coll.SCALEUP_BUS_EFFICIENCY
EFF_OUT = coll.SCALEOUT_BUS_EFFICIENCY
NIC_GBYTES_PER_S = 200.0 / 8  # DGX A100: 8x HDR 200 Gb/s, one per GPU


def _path_latency_s(fab, src, dst):
    return float(fab.route(np.atleast_1d(src), np.atleast_1d(dst)).latency_s.max())


def test_collectives_tp_all_reduce_in_one_node_is_hand_alpha_beta():
    cost = traffic.group_costs(fabric(1), build_layout(tp=8, pp=1, dp=1))["tp"]
    size = np.array([1e3, 1e6, 1e9])
    busbw = 300e9 * EFF_UP  # NVLink3 300 GB/s per direction x nccl-tests efficiency
    simple = 8.4e-6 + 2 * 7 * 3.4e-6 + 2 * 7 / 8 * size / busbw  # NCCL ring/Simple
    got = coll.collective_time_s(cost, "all_reduce", size, algorithm="ring", protocol="simple")
    np.testing.assert_allclose(got, simple)
    np.testing.assert_allclose(
        coll.collective_time_s(cost, "all_gather", size, protocol="simple"),
        8.4e-6 + 7 * 3.4e-6 + 7 / 8 * size / busbw,
    )
    ll = 6.6e-6 + 14 * 0.47e-6 + 2 * 7 / 8 * size / (busbw / 3)  # LL: 1/3 of busbw in one node
    got_ll = coll.collective_time_s(cost, "all_reduce", size, algorithm="ring", protocol="ll")
    np.testing.assert_allclose(got_ll, ll)
    auto = coll.collective_time_s(cost, "all_reduce", size)
    assert np.all(auto <= np.minimum(simple, ll) * (1 + 1e-12))
    assert auto[0] == pytest.approx(ll[0]) and auto[2] == pytest.approx(simple[2])


def test_collectives_dp_ring_across_nodes_is_hand_alpha_beta():
    fab = fabric(4)  # one scalable unit: rank j of every node on rail leaf j
    cost = traffic.group_costs(fab, build_layout(tp=8, pp=1, dp=4))["dp"]
    assert (cost.size, cost.local_size, cost.n_domains) == (4, 1, 4)
    assert cost.busbw_gbytes_per_s == pytest.approx(NIC_GBYTES_PER_S * EFF_OUT)
    path_s = _path_latency_s(fab, 0, 8)
    assert 0 < path_s < 5e-6
    size = np.array([4e6, 4e8])
    expected = 8.4e-6 + 6 * (9.6e-6 + path_s) + 2 * 3 / 4 * size / (NIC_GBYTES_PER_S * EFF_OUT * 1e9)
    got = coll.collective_time_s(cost, "all_reduce", size, algorithm="ring", protocol="simple")
    np.testing.assert_allclose(got, expected)


def test_collectives_channels_use_every_nic_of_a_node():
    cost = traffic.group_costs(fabric(4), build_layout(tp=1, pp=1, dp=32))["dp"]
    assert (cost.local_size, cost.n_domains) == (8, 4)
    # NCCL: min(NVLink bus bw, 8 rails x NIC) = min(230, 8 x 23) GB/s
    assert cost.busbw_gbytes_per_s == pytest.approx(8 * NIC_GBYTES_PER_S * EFF_OUT)


def test_collectives_all_to_all_is_hand_alpha_beta():
    fab = fabric(2)
    cost = traffic.group_costs(fab, build_layout(tp=1, pp=1, dp=16, ep=16), ecmp="spread")["ep"]
    # 8 remote peers per rank share its NIC: each pair flow gets a 1/8 share.
    assert cost.a2a_flow_gbytes_per_s == pytest.approx(NIC_GBYTES_PER_S / 8 * EFF_OUT)
    size = np.array([16e6])
    intra = 7 / 16 * size / (300e9 * EFF_UP)
    inter = size / 16 / (cost.a2a_flow_gbytes_per_s * 1e9)
    hop = 8.4e-6 + 9.6e-6 + cost.path_latency_s
    np.testing.assert_allclose(
        coll.collective_time_s(cost, "all_to_all", size), hop + np.maximum(intra, inter)
    )
    hashed = traffic.group_costs(fab, build_layout(tp=1, pp=1, dp=16, ep=16), ecmp="hash")["ep"]
    assert hashed.a2a_flow_gbytes_per_s <= cost.a2a_flow_gbytes_per_s


def test_collectives_p2p_pipeline_neighbours():
    fab = fabric(2)
    cost = traffic.group_costs(fab, build_layout(tp=8, pp=2, dp=1))["pp"]
    expected = 8.4e-6 + 9.6e-6 + _path_latency_s(fab, 0, 8) + 1e8 / (NIC_GBYTES_PER_S * EFF_OUT * 1e9)
    np.testing.assert_allclose(coll.collective_time_s(cost, "p2p", np.array([1e8])), [expected])


def test_collectives_tree_wins_small_messages_ring_wins_large():
    cost = traffic.group_costs(fabric(64, su_nodes=8), build_layout(tp=8, pp=1, dp=64))["dp"]
    size = np.array([1e3, 1e10])
    ring = coll.collective_time_s(cost, "all_reduce", size, algorithm="ring")
    tree = coll.collective_time_s(cost, "all_reduce", size, algorithm="tree")
    auto = coll.collective_time_s(cost, "all_reduce", size)
    assert tree[0] < ring[0] and ring[1] < tree[1]
    np.testing.assert_allclose(auto, np.minimum(ring, tree))


def test_collectives_oversubscription_slows_cross_unit_traffic_not_tensor_parallel():
    full, half = fabric(64, su_nodes=8), fabric(64, su_nodes=8, oversubscription=2.0)
    layout = build_layout(tp=8, pp=2, dp=32)
    fast, slow = traffic.group_costs(full, layout), traffic.group_costs(half, layout)
    assert slow["pp"].p2p_gbytes_per_s < fast["pp"].p2p_gbytes_per_s  # stages in other units
    assert slow["dp"].tree_flow_gbytes_per_s < fast["dp"].tree_flow_gbytes_per_s
    assert slow["tp"].busbw_gbytes_per_s == fast["tp"].busbw_gbytes_per_s


def test_collectives_one_member_groups_cost_nothing():
    cost = traffic.group_costs(fabric(1), build_layout(tp=8, pp=1, dp=1))["dp"]
    assert cost.size == 1
    assert np.all(coll.collective_time_s(cost, "all_reduce", np.array([0.0, 1e9])) == 0)


def test_nccl_tree_parents_form_two_complementary_binary_trees():
    for n in (2, 3, 7, 8, 13, 64):
        for parents in traffic.nccl_tree_parents(n):
            assert (parents == -1).sum() == 1
            assert np.bincount(parents[parents >= 0], minlength=n).max() <= 2
            for node in range(n):  # every node reaches the root
                steps = 0
                while parents[node] >= 0 and steps <= n:
                    node, steps = parents[node], steps + 1
                assert steps <= n
    parent1, parent2 = traffic.nccl_tree_parents(8)
    np.testing.assert_array_equal(parent1, [-1, 2, 4, 2, 0, 6, 4, 6])  # NCCL ncclGetBtree
    np.testing.assert_array_equal(parent2, 7 - parent1[::-1] * (parent1[::-1] >= 0) - 8 * (parent1[::-1] < 0))


def _naive_worst_rate_gbps(fab, src, dst):
    """Reference: per flow, walk its links; rate = min capacity / load (Python loops)."""
    incidence = fab.route(np.array(src), np.array(dst)).incidence.tocsr()
    load: dict[int, float] = {}
    for f in range(incidence.shape[0]):
        row = incidence.getrow(f)
        for link, fraction in zip(row.indices, row.data, strict=True):
            load[link] = load.get(link, 0.0) + fraction
    worst = np.inf
    for link, total in load.items():
        worst = min(worst, fab.directed_capacity_gbps[link] / total)
    return worst


def _naive_ring_flows(fab, groups):
    """Reference ring: members sorted by (domain, gpu); with the same count per domain in every
    group, slot j of domain i sends to slot j of domain i+1 (NCCL channels), else a flat ring."""
    per_group = []
    for group in groups.tolist():
        members = sorted(group, key=lambda g: (int(fab.gpu_domain[g]), g))
        domains = sorted({int(fab.gpu_domain[g]) for g in members})
        per_group.append([[g for g in members if fab.gpu_domain[g] == d] for d in domains])
    counts = {len(block) for blocks in per_group for block in blocks}
    src, dst = [], []
    for blocks in per_group:
        if len(counts) == 1:
            pairs = [
                (a, b)
                for i, here in enumerate(blocks)
                for a, b in zip(here, blocks[(i + 1) % len(blocks)], strict=True)
            ]
        else:
            flat = [g for block in blocks for g in block]
            pairs = [(flat[i], flat[(i + 1) % len(flat)]) for i in range(len(flat))]
        for a, b in pairs:
            if fab.gpu_domain[a] != fab.gpu_domain[b]:
                src.append(a)
                dst.append(b)
    return src, dst


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_collectives_vectorized_rates_match_naive_reference(seed):
    rng = np.random.default_rng(seed)
    fab = fabric(16, su_nodes=4, oversubscription=float(rng.choice([1.0, 2.0])))
    placement = rng.permutation(fab.n_gpus)
    layout = build_layout(tp=2, pp=2, dp=32, rank_gpu=placement)
    costs = traffic.group_costs(fab, layout)
    gpus = layout.gpu_groups("pp")
    src = np.concatenate([gpus[:, 0], gpus[:, 1]])
    dst = np.concatenate([gpus[:, 1], gpus[:, 0]])
    cross = fab.gpu_domain[src] != fab.gpu_domain[dst]
    expected = _naive_worst_rate_gbps(fab, src[cross], dst[cross]) / 8 * EFF_OUT
    if (~cross).any():
        expected = min(expected, 300 * EFF_UP)
    assert costs["pp"].p2p_gbytes_per_s == pytest.approx(expected)
    for kind, rank_gpu in (("dp", placement), ("dp", None), ("tp", placement)):
        layout = build_layout(tp=2, pp=2, dp=32, rank_gpu=rank_gpu)
        ring_src, ring_dst = _naive_ring_flows(fab, layout.gpu_groups(kind))
        expected_ring = _naive_worst_rate_gbps(fab, ring_src, ring_dst) / 8 * EFF_OUT
        got = traffic.group_costs(fab, layout)[kind].ring_flow_gbytes_per_s
        assert got == pytest.approx(expected_ring)


def test_collectives_deterministic():
    fab = fabric(16, su_nodes=4)
    layout = build_layout(tp=2, pp=2, dp=32, ep=4)
    first, second = traffic.group_costs(fab, layout), traffic.group_costs(fab, layout)
    for kind in first:
        assert first[kind].busbw_gbytes_per_s == second[kind].busbw_gbytes_per_s
        np.testing.assert_array_equal(first[kind].ring_load, second[kind].ring_load)


def test_collectives_stacked_costs_match_single_costs():
    fab = fabric(16, su_nodes=4)
    costs = list(traffic.group_costs(fab, build_layout(tp=2, pp=2, dp=32, ep=4)).values())
    index = np.array([3, 0, 6, 1, 4])
    stacked = coll.stack_costs(costs, index)
    size = np.full(index.shape, 3e7)
    for op in coll.OPS:
        vector = coll.collective_time_s(stacked, op, size)
        single = [coll.collective_time_s(costs[i], op, size[:1])[0] for i in index]
        np.testing.assert_allclose(vector, single)


def test_collectives_bad_op_and_size_are_rejected():
    cost = traffic.group_costs(fabric(1), build_layout(tp=8, pp=1, dp=1))["tp"]
    with pytest.raises(ValueError, match="op"):
        coll.collective_time_s(cost, "broadcastish", np.array([1.0]))
    with pytest.raises(ValueError, match="bytes"):
        coll.collective_time_s(cost, "all_reduce", np.array([-1.0]))
    with pytest.raises(ValueError, match="ecmp"):
        traffic.group_costs(fabric(1), build_layout(tp=8, pp=1, dp=1), ecmp="random")
