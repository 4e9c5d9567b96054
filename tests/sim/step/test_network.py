from __future__ import annotations

import numpy as np
import pytest

from scenarios.sim.step.collectives import SCALEOUT_BUS_EFFICIENCY
from scenarios.sim.step.layout import KIND_NAMES, build_layout
from scenarios.sim.step.network import (
    comm_model,
    comm_table,
    fabric_with_capacity_scale,
    fabric_with_tier_capacity_scale,
    megatron_bucket_bytes,
    megatron_group_shape,
    rack_link_utilization,
)
from tests.sim._fabrics import fabric

NIC_GBYTES_PER_S = 200.0 / 8  # DGX A100 HDR NIC per GPU


def test_comm_model_time_s_is_vectorized_over_sizes():
    model = comm_model(fabric(4), build_layout(tp=8, pp=1, dp=4))
    sizes = np.array([0.0, 1e6, 1e8, 1e9])
    times = model.time_s("dp", "all_reduce", sizes)
    assert times.shape == (4,)
    assert times[0] == 0 and np.all(np.diff(times) > 0)
    assert model.time_s("dp", "all_reduce", 1e8) == pytest.approx(times[2])


def test_comm_model_summary_alpha_and_bandwidth():
    model = comm_model(fabric(4), build_layout(tp=8, pp=1, dp=4))
    assert model.bw_gbytes_per_s["dp"] == pytest.approx(NIC_GBYTES_PER_S * SCALEOUT_BUS_EFFICIENCY)
    assert model.bw_gbytes_per_s["pp"] == float("inf")
    assert 0 < model.alpha_s["tp"] < model.alpha_s["dp"]
    assert model.alpha_s["pp"] == 0
    assert set(model.costs) == set(KIND_NAMES)


def test_comm_model_oversubscribed_fabric_slows_dp_heavy_job_not_tp_only_job():
    full, oversubscribed = fabric(64, su_nodes=8), fabric(64, su_nodes=8, oversubscription=2.0)
    dp_job = build_layout(tp=1, pp=1, dp=512)
    tp_job = build_layout(tp=8, pp=1, dp=64)
    bucket = megatron_bucket_bytes(512, 2)  # Megatron-core default bucket, fp16 gradients
    grads = np.array([3.4e9 * 2])  # 3.4B parameters of fp16 gradients, reduced bucket by bucket
    dp_fast = comm_model(full, dp_job).time_s("dp", "all_reduce", grads, bucket_bytes=bucket)[0]
    dp_slow = comm_model(oversubscribed, dp_job).time_s("dp", "all_reduce", grads, bucket_bytes=bucket)[0]
    assert dp_slow > 1.05 * dp_fast
    tp_fast = comm_model(full, tp_job).time_s("tp", "all_reduce", grads)[0]
    tp_slow = comm_model(oversubscribed, tp_job).time_s("tp", "all_reduce", grads)[0]
    assert tp_slow == tp_fast


def test_fabric_with_tier_capacity_scale_slows_cross_unit_traffic_only():
    fab = fabric(64, su_nodes=8)
    degraded = fabric_with_tier_capacity_scale(fab, 0.25)
    layout = build_layout(tp=8, pp=2, dp=32)
    server_leaf = fab.link_tier == 0
    np.testing.assert_array_equal(degraded.link_gbps[server_leaf], fab.link_gbps[server_leaf])
    assert np.all(degraded.link_gbps[~server_leaf] == fab.link_gbps[~server_leaf] * 0.25)
    before, after = comm_model(fab, layout), comm_model(degraded, layout)
    assert after.costs["pp"].p2p_gbytes_per_s < before.costs["pp"].p2p_gbytes_per_s
    assert after.bw_gbytes_per_s["tp"] == before.bw_gbytes_per_s["tp"]
    np.testing.assert_array_equal(fab.link_gbps[~server_leaf], 200.0)  # original untouched


def test_slower_nic_slows_data_parallel():
    layout = build_layout(tp=8, pp=1, dp=4)
    fab = fabric(4)
    half_nics = fabric_with_capacity_scale(fab, fab.link_tier == 0, 0.5)
    assert comm_model(half_nics, layout).bw_gbytes_per_s["dp"] == pytest.approx(
        comm_model(fab, layout).bw_gbytes_per_s["dp"] / 2
    )


def test_fabric_with_capacity_scale_rejects_bad_input():
    with pytest.raises(ValueError, match="factor"):
        fabric_with_capacity_scale(fabric(4), np.array([0]), 0.0)
    with pytest.raises(ValueError, match="tiers"):
        fabric_with_tier_capacity_scale(fabric(4), 0.5, tiers=("top",))


def test_link_utilization_is_bytes_over_capacity_times_step():
    fab = fabric(4)
    model = comm_model(fab, build_layout(tp=8, pp=1, dp=4))
    step_s, size = 2.0, 1e9
    util = model.link_utilization({"dp": {"all_reduce": size}}, step_s)
    assert util.shape == (fab.n_links,)
    nic_links = fab.link_tier == 0
    # every NIC link carries 2(n-1)/n * S in each direction (one member per node)
    np.testing.assert_allclose(util[nic_links], 2 * 3 / 4 * size * 8 / (200e9 * step_s))
    assert np.all(util[~nic_links] == 0)  # rail-aligned rings never reach the spines
    np.testing.assert_allclose(model.link_utilization({"dp": size}, step_s), util)


def test_link_utilization_p2p_and_unknown_kind():
    fab = fabric(2)
    model = comm_model(fab, build_layout(tp=8, pp=2, dp=1))
    util = model.link_utilization({"pp": {"p2p": 1e9}, "tp": {"all_reduce": 1e9}}, 1.0)
    np.testing.assert_allclose(util[fab.link_tier == 0], 1e9 * 8 / 200e9)
    with pytest.raises(ValueError, match="kind"):
        model.link_utilization({"zz": 1.0}, 1.0)
    with pytest.raises(ValueError, match="kind"):
        model.time_s("zz", "p2p", 1.0)


def test_rack_link_utilization_takes_hottest_link_per_rack():
    fab = fabric(64, su_nodes=8)
    rng = np.random.default_rng(0)
    util = rng.random(fab.n_links)
    expected = np.zeros(fab.n_racks)
    for link, rack in enumerate(fab.link_rack):  # naive reference
        expected[rack] = max(expected[rack], util[link])
    np.testing.assert_allclose(rack_link_utilization(fab, util), expected)


def test_comm_model_spread_ecmp_is_no_worse_than_hash():
    fab = fabric(64, su_nodes=8, oversubscription=2.0)
    layout = build_layout(tp=8, pp=2, dp=32)
    hashed, spread = comm_model(fab, layout, ecmp="hash"), comm_model(fab, layout, ecmp="spread")
    assert spread.costs["pp"].p2p_gbytes_per_s >= hashed.costs["pp"].p2p_gbytes_per_s
    with pytest.raises(ValueError, match="ecmp"):
        comm_model(fab, layout, ecmp="random")


def test_megatron_group_shape_matches_layout_groups():
    tp, pp, dp, cp, ep = 2, 3, 4, 2, 4
    layout = build_layout(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep)
    for kind in KIND_NAMES:
        size, stride = megatron_group_shape(kind, tp=tp, pp=pp, dp=dp, cp=cp, ep=ep)
        first = layout.groups(kind)[0]
        assert first.size == size
        if size > 1:
            assert np.all(np.diff(first) == stride)


def test_comm_table_matches_comm_model_per_candidate():
    fab = fabric(16, su_nodes=4)
    table = comm_table(fab)
    tp = np.array([1, 2, 8, 8, 4])
    pp = np.array([1, 4, 2, 1, 2])
    dp = fab.n_gpus // (tp * pp)
    ep = np.array([1, 2, 8, 4, 1])
    size = np.array([1e6, 3e7, 2e8, 5e5, 4e9])
    for kind in KIND_NAMES:
        for op in ("all_reduce", "all_gather", "all_to_all", "p2p"):
            vector = table.time_s(kind, op, size, tp=tp, pp=pp, dp=dp, ep=ep)
            for c in range(tp.size):
                layout = build_layout(tp=tp[c], pp=pp[c], dp=dp[c], ep=ep[c])
                single = comm_model(fab, layout).time_s(kind, op, size[c])
                assert vector[c] == pytest.approx(single), (kind, op, c)


def test_comm_table_rejects_candidates_not_filling_the_fabric():
    with pytest.raises(ValueError, match="parallel"):
        comm_table(fabric(4)).time_s("dp", "all_reduce", 1e6, tp=8, pp=1, dp=2)


def test_comm_table_on_a_job_placement_matches_comm_model_with_that_placement():
    from scenarios.sim.placement import job_placement

    fab = fabric(16, su_nodes=4)
    placement = job_placement(fab, nodes=4, placement="spread")  # one node per scalable unit
    table = comm_table(fab, rank_gpu=placement.rank_gpu)
    tp, pp = np.array([8, 4, 1, 2]), np.array([1, 2, 4, 1])
    dp = placement.world_size // (tp * pp)
    for kind in ("tp", "pp", "dp"):
        for op in ("all_reduce", "p2p"):
            vector = table.time_s(kind, op, 1e8, tp=tp, pp=pp, dp=dp)
            for c in range(tp.size):
                layout = build_layout(tp=tp[c], pp=pp[c], dp=dp[c], rank_gpu=placement.rank_gpu)
                single = comm_model(fab, layout).time_s(kind, op, 1e8)
                assert vector[c] == pytest.approx(single), (kind, op, c)
    packed = comm_table(fab, rank_gpu=job_placement(fab, nodes=4).rank_gpu)
    spread_dp = table.time_s("dp", "all_reduce", 1e9, tp=8, pp=1, dp=4)
    assert spread_dp > packed.time_s("dp", "all_reduce", 1e9, tp=8, pp=1, dp=4)  # crosses the spines
    with pytest.raises(ValueError, match="job's GPUs"):
        table.time_s("dp", "all_reduce", 1e6, tp=8, pp=1, dp=16)
    with pytest.raises(ValueError, match="rank_gpu"):
        comm_table(fab, rank_gpu=[0, 0])


def test_time_s_buckets_are_back_to_back_collectives():
    model = comm_model(fabric(4), build_layout(tp=1, pp=1, dp=32))
    size = np.array([4e9, 1e9])
    whole = model.time_s("dp", "all_reduce", size)
    np.testing.assert_allclose(model.time_s("dp", "all_reduce", size, bucket_bytes=8e9), whole)
    quarter = model.time_s("dp", "all_reduce", size / 4)
    np.testing.assert_allclose(model.time_s("dp", "all_reduce", size, bucket_bytes=size / 4), 4 * quarter)
    partial = model.time_s("dp", "all_reduce", np.array([2.5e9]), bucket_bytes=1e9)
    expected = 2 * model.time_s("dp", "all_reduce", 1e9) + model.time_s("dp", "all_reduce", 0.5e9)
    np.testing.assert_allclose(partial, expected)
    with pytest.raises(ValueError, match="bucket_bytes"):
        model.time_s("dp", "all_reduce", size, bucket_bytes=0.0)


def test_megatron_bucket_bytes_follows_megatron_core_default():
    np.testing.assert_allclose(megatron_bucket_bytes(np.array([8, 40, 128]), 4), [160e6, 160e6, 512e6])
