"""Fabric generators: counts against hand-derived formulas, layout, feeds, parameter errors."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from topology.fabric.generators import generate
from topology.fabric.plan import (
    LINK_LEAF_SPINE,
    LINK_SERVER_LEAF,
    LINK_SPINE_CORE,
    RACK_COMPUTE,
    TIER_LEAF,
    TIER_SPINE,
    FabricError,
)
from topology.fabric.specs import CatalogError


def _switch_degrees(plan):
    """(down ports used, up ports used) per switch."""
    offset = plan.n_nic_ports
    n = plan.switch_type.size
    down = np.bincount(plan.link_b - offset, minlength=n)
    lower = plan.link_a[plan.link_a >= offset] - offset
    up = np.bincount(lower, minlength=n)
    return down, up


def test_rail_optimized_superpod_2048_known_answer(catalog):
    # DGX SuperPOD-style: SU = 32 nodes (QM9700 radix 64 at 1:1) -> 2048/32 = 64 SUs, one leaf
    # per rail (8) per SU = 512 leaves with 32 down + 32 up. 512 leaves > 64 ports -> 3 tiers:
    # pods of 64/2 = 32 leaves -> 16 pods, each with 32 spines (one link per leaf) = 512
    # spines; spine k of each pod goes to core group k: 16 pods * 32 uplinks / 64 ports = 8
    # cores per group, 32 groups = 256 cores. Links: 2048*8 = 16384 per tier.
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=2048)
    assert plan.params["su_nodes"] == 32
    assert plan.params["switch"] == "quantum-2-qm9700"
    assert plan.n_switches == {"leaf": 512, "spine": 512, "core": 256, "scaleup": 0}
    assert plan.n_links == {"server_leaf": 16384, "leaf_spine": 16384, "spine_core": 16384}
    down, up = _switch_degrees(plan)
    leaves = plan.switch_tier == TIER_LEAF
    assert set(down[leaves].tolist()) == {32} and set(up[leaves].tolist()) == {32}
    spines = plan.switch_tier == TIER_SPINE
    assert set(down[spines].tolist()) == {32} and set(up[spines].tolist()) == {32}
    assert plan.n_gpus == 16384
    assert plan.per_gpu_bisection_gbps() == pytest.approx(400.0)


def test_rail_optimized_oversubscribed_2_to_1_halves_bisection(catalog):
    # 2:1 -> leaf 32 down, ceil(32/2) = 16 up; pods of 32 leaves with 16 spines: 16 pods * 16 =
    # 256 spines; cores per group: smallest divisor of 32 with 8 * 64 >= 16*32 -> 8; 16 groups.
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=2048, oversubscription=2.0)
    assert plan.n_switches == {"leaf": 512, "spine": 256, "core": 128, "scaleup": 0}
    assert plan.n_links == {"server_leaf": 16384, "leaf_spine": 8192, "spine_core": 8192}
    assert plan.per_gpu_bisection_gbps() == pytest.approx(200.0)


def test_rail_optimized_two_tier_partial_su(catalog):
    # 100 nodes / 32 = 4 SUs (the last with 4 nodes) -> 32 leaves <= 64 ports -> 2 tiers;
    # spines = smallest divisor of 32 uplinks with S * 64 >= 32 * 32 -> 16, 2 links per pair.
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=100)
    assert plan.n_tiers == 2
    assert plan.n_switches == {"leaf": 32, "spine": 16, "core": 0, "scaleup": 0}
    assert plan.n_links == {"server_leaf": 800, "leaf_spine": 1024, "spine_core": 0}
    down, _ = _switch_degrees(plan)
    last_su = (plan.switch_tier == TIER_LEAF) & (plan.switch_group == 3)
    assert down[last_su].tolist() == [4] * 8
    assert plan.per_gpu_bisection_gbps() == pytest.approx(400.0)


def test_rail_optimized_three_tier_oversubscribed_partial(catalog):
    # 1000 nodes at 3:1 on QM9700: su 32 (32 + ceil(32/3) = 43 <= 64), 11 up; 32 SUs (last
    # with 8 nodes) -> 256 leaves -> 3 tiers, 8 pods * 11 spines = 88; cores per group:
    # smallest divisor of 32 with C * 64 >= 8 * 32 -> 4, 11 groups -> 44.
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=1000, oversubscription=3.0)
    assert plan.n_switches == {"leaf": 256, "spine": 88, "core": 44, "scaleup": 0}
    assert plan.n_links == {"server_leaf": 8000, "leaf_spine": 256 * 11, "spine_core": 88 * 32}


def test_rail_optimized_default_su_fits_qm8700_radix(catalog):
    # DGX A100 has 200G HDR NICs -> QM8700 (40 ports): largest SU with s + s <= 40 is 20.
    plan = generate("rail-optimized", catalog=catalog, server="dgx-a100", nodes=140)
    assert plan.params["switch"] == "quantum-qm8700"
    assert plan.params["su_nodes"] == 20
    assert plan.n_switches["leaf"] == 7 * 8


def test_rail_optimized_nics_are_rail_aligned(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=70)
    nics = plan.nics_per_node
    tier0 = plan.link_tier == LINK_SERVER_LEAF
    port = plan.link_a[tier0]
    leaf = plan.link_b[tier0] - plan.n_nic_ports
    assert np.array_equal(plan.switch_rail[leaf], port % nics)
    assert np.array_equal(plan.switch_group[leaf], (port // nics) // 32)


def test_nvl72_counts_and_scaleup_trays(catalog):
    # 144 trays = 8 racks of 18 trays + 9 NVLink switch trays; SU = 18 trays (whole racks)
    # -> 8 SUs * 4 rails = 32 leaves with 18 up; 2 tiers with the smallest divisor of 18 >=
    # 32*18/64 = 9 -> 9 spines.
    plan = generate("nvl72", catalog=catalog, server="gb200-nvl72", nodes=144)
    assert plan.n_gpus == 576
    assert plan.n_switches == {"leaf": 32, "spine": 9, "core": 0, "scaleup": 72}
    assert plan.n_links == {"server_leaf": 576, "leaf_spine": 32 * 18, "spine_core": 0}
    compute = np.flatnonzero(plan.rack_kind == RACK_COMPUTE)
    assert compute.size == 8
    assert np.array_equal(np.bincount(plan.node_rack, minlength=plan.n_racks)[compute], [18] * 8)
    trays = plan.switch_tier == 3
    assert np.array_equal(np.bincount(plan.switch_rack[trays], minlength=plan.n_racks)[compute], [9] * 8)


def test_nvl72_rack_gets_several_feeds_per_side(catalog):
    plan = generate("nvl72", catalog=catalog, server="gb200-nvl72", nodes=36)
    capacity = np.array([f.capacity_kw for f in plan.feed_types])[plan.feed_type]
    per_side = np.zeros((plan.n_racks, 2))
    np.add.at(
        per_side, (plan.feed_rack_rack, plan.feed_side[plan.feed_rack_feed]), capacity[plan.feed_rack_feed]
    )
    assert np.all(per_side >= plan.rack_budget_kw[:, None] - 1e-9)
    compute = plan.rack_kind == RACK_COMPUTE
    assert plan.rack_budget_kw[compute].min() > 100  # ~120-140 kW NVL72 racks
    feeds_per_rack = np.bincount(plan.feed_rack_rack, minlength=plan.n_racks)
    assert feeds_per_rack[compute].min() >= 4  # more than one feed per side


def test_fat_tree_counts_and_node_locality(catalog):
    # QM9700 at 1:1: 8 NICs per node, largest q with 8q + 8q <= 64 is 4 nodes per leaf
    # (32 down, 32 up); 64 nodes -> 16 leaves -> 2 tiers with the smallest divisor of 32 >=
    # 16*32/64 = 8 -> 8 spines.
    plan = generate("fat-tree", catalog=catalog, server="dgx-h100", nodes=64)
    assert plan.n_switches == {"leaf": 16, "spine": 8, "core": 0, "scaleup": 0}
    assert plan.n_links == {"server_leaf": 512, "leaf_spine": 512, "spine_core": 0}
    tier0 = plan.link_tier == LINK_SERVER_LEAF
    leaf_of_port = (plan.link_b[tier0] - plan.n_nic_ports).reshape(64, 8)
    assert np.all(leaf_of_port == leaf_of_port[:, :1])
    assert plan.per_gpu_bisection_gbps() == pytest.approx(400.0)


def test_fat_tree_forced_three_tiers(catalog):
    # tiers=3 with 16 leaves: one pod of up to 32 leaves with 32 spines; cores per group:
    # smallest divisor of 32 with C * 64 >= 1 * 32 -> 1; 32 groups -> 32 cores.
    plan = generate("fat-tree", catalog=catalog, server="dgx-h100", nodes=64, tiers=3)
    assert plan.n_switches == {"leaf": 16, "spine": 32, "core": 32, "scaleup": 0}
    assert plan.n_links["spine_core"] == 32 * 32


def test_generate_16384_nodes_uses_a_switch_that_fits(catalog):
    # 16,384 DGX H100 need 131,072 ports: more than a 3-tier QM9700 fabric (64^3/4 = 65,536
    # ports at 1:1). SN5600 split 2x400G gives 128 ports: 512 SUs * 8 = 4096 leaves, pods of
    # 64 -> 64 pods * 32 spines = 2048; cores per group: smallest divisor of 64 with
    # C * 128 >= 64 * 64 -> 32, 32 groups -> 1024.
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=16384)
    assert plan.params["switch"] == "spectrum-4-sn5600"
    assert plan.notes and "quantum-2-qm9700" in plan.notes[0]
    assert plan.n_switches == {"leaf": 4096, "spine": 2048, "core": 1024, "scaleup": 0}
    assert plan.n_links == {"server_leaf": 131072, "leaf_spine": 131072, "spine_core": 131072}
    assert plan.per_gpu_bisection_gbps() == pytest.approx(400.0)


def test_generate_accepts_underscore_names(catalog):
    plan = generate("rail_optimized", catalog=catalog, server="dgx-h100", nodes=8)
    assert plan.generator == "rail-optimized"


@pytest.mark.parametrize(
    ("name", "kwargs", "field", "limit"),
    [
        ("rail-optimized", {"nodes": 0}, "nodes", "≥ 1"),
        ("rail-optimized", {"nodes": 2_000_000}, "nodes", "1,000,000"),
        ("rail-optimized", {"nodes": 8, "oversubscription": 0.5}, "oversubscription", "≥ 1"),
        ("rail-optimized", {"nodes": 8, "su_nodes": 60}, "su_nodes", "at most 32"),
        ("rail-optimized", {"nodes": 8, "switch": "quantum-qm8700"}, "nic_gbps", "200"),
        ("rail-optimized", {"nodes": 2048, "tiers": 2}, "tiers", "at most"),
        ("rail-optimized", {"nodes": 16384, "switch": "quantum-2-qm9700"}, "nodes", "at most 8,192"),
        ("rail-optimized", {"nodes": 8, "tiers": 4}, "tiers", "2 or 3"),
        ("rail-optimized", {"nodes": 8, "rack_units": 4}, "rack_units", "8U"),
        ("nvl72", {"server": "gb200-nvl72", "nodes": 20}, "nodes", "multiple of 18"),
        ("nvl72", {"nodes": 18}, "server", "18 trays"),
        ("rail-optimized", {"server": "gb200-nvl72", "nodes": 18}, "server", "nvl72"),
        ("mesh", {"nodes": 8}, "generator", "rail-optimized"),
    ],
)
def test_generate_error_names_parameter_and_limit(catalog, name, kwargs, field, limit):
    params = {"server": "dgx-h100", **kwargs}
    with pytest.raises(FabricError) as error:
        generate(name, catalog=catalog, **params)
    assert str(error.value).startswith(f"{field}:")
    assert limit in str(error.value)


def test_generate_unknown_slug_raises_catalog_error(catalog):
    with pytest.raises(CatalogError, match="server: unknown slug 'dgx-z9'"):
        generate("rail-optimized", catalog=catalog, server="dgx-z9", nodes=8)
    with pytest.raises(CatalogError, match="switch: unknown slug"):
        generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=8, switch="nope")


def test_generate_2048_plan_columns_are_int64_and_consistent(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=2048)
    for name in ("node_rack", "node_u", "switch_type", "switch_rack", "link_a", "link_b", "feed_rack_rack"):
        assert getattr(plan, name).dtype == np.int64, name
    assert plan.validate() is plan
    # leaves sit in the rack row of the SU they serve
    leaves = np.flatnonzero(plan.switch_tier == TIER_LEAF)
    first_node = plan.switch_group[leaves] * 32
    assert np.array_equal(plan.rack_row[plan.switch_rack[leaves]], plan.rack_row[plan.node_rack[first_node]])


def test_layout_racks_are_unique_and_contents_fit(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=300, oversubscription=2.0)
    cells = plan.rack_row * plan.hall_cols + plan.rack_col
    assert np.unique(cells).size == plan.n_racks
    assert plan.rack_row.max() < plan.hall_rows and plan.rack_col.max() < plan.hall_cols
    assert len(set(plan.rack_name)) == plan.n_racks
    # no two devices share a rack unit
    server_u = plan.server.rack_units
    switch_units = np.array([s.rack_units for s in plan.switch_types])[plan.switch_type]
    racks = np.concatenate([np.repeat(plan.node_rack, server_u), np.repeat(plan.switch_rack, switch_units)])
    units = np.concatenate(
        [
            (plan.node_u[:, None] + np.arange(server_u)).ravel(),
            np.concatenate([u + np.arange(k) for u, k in zip(plan.switch_u, switch_units, strict=True)]),
        ]
    )
    assert np.unique(racks * 100 + units).size == racks.size


def test_layout_each_rack_has_a_and_b_sides_each_carrying_the_budget(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=64)
    capacity = np.array([f.capacity_kw for f in plan.feed_types])[plan.feed_type]
    per_side = np.zeros((plan.n_racks, 2))
    np.add.at(
        per_side, (plan.feed_rack_rack, plan.feed_side[plan.feed_rack_feed]), capacity[plan.feed_rack_feed]
    )
    assert np.all(per_side >= plan.rack_budget_kw[:, None])
    server_kw = catalog.server_power_w("dgx-h100") / 1000
    compute = plan.rack_kind == RACK_COMPUTE
    assert np.allclose(plan.rack_budget_kw[compute], 4 * server_kw * 1.10)
    assert all(panel.endswith(("-A", "-B")) for panel in plan.feed_panel)


def test_layout_fixed_feed_type_is_used_everywhere(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=16, feed="415v-32a-3ph")
    assert [f.slug for f in plan.feed_types] == ["415v-32a-3ph"]
    # a 4 x 10.2 kW DGX rack (+10%) needs ceil(44.9 / 17.5) = 3 feeds of 17.5 kW per side
    compute = np.flatnonzero(plan.rack_kind == RACK_COMPUTE)
    per_rack = np.bincount(plan.feed_rack_rack, minlength=plan.n_racks)
    capacity = plan.feed_types[0].capacity_kw
    assert per_rack[compute].tolist() == [2 * math.ceil(plan.rack_budget_kw[r] / capacity) for r in compute]


def test_plan_summary_has_the_documented_keys(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=64)
    summary = plan.summary()
    for key in (
        "gpus",
        "servers",
        "racks",
        "switches",
        "links",
        "feeds",
        "it_power_kw",
        "bisection_gbps",
        "per_gpu_bisection_gbps",
    ):
        assert key in summary
    assert set(summary["switches"]) == {"leaf", "spine", "core", "scaleup"}
    assert set(summary["links"]) == {"server_leaf", "leaf_spine", "spine_core"}
    # nameplate: 64 servers + 16 leaves + 8 spines (1010 W) + optics at the switch ends (a server
    # link's NIC end is in the server's base power: half of it here; leaf-spine links: both ends)
    optics_w = 512 * 17.0 / 2 + 512 * 17.0
    expected_kw = (64 * catalog.server_power_w("dgx-h100") + 24 * 1010.0 + optics_w) / 1000
    assert summary["it_power_kw"] == pytest.approx(expected_kw, abs=1e-3)


def test_plan_validate_rejects_overfull_switch(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=64)
    broken = dataclasses.replace(plan, switch_ports=np.full(plan.switch_ports.size, 16))
    with pytest.raises(FabricError, match="switch_ports"):
        broken.validate()


def test_plan_validate_rejects_out_of_range_rack(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=64)
    node_rack = plan.node_rack.copy()
    node_rack[0] = plan.n_racks
    with pytest.raises(FabricError, match="node_rack"):
        dataclasses.replace(plan, node_rack=node_rack).validate()


def test_plan_validate_rejects_link_skipping_a_tier(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=2048)
    link_tier = plan.link_tier.copy()
    first_spine_core = int(np.flatnonzero(plan.link_tier == LINK_SPINE_CORE)[0])
    link_tier[first_spine_core] = LINK_LEAF_SPINE
    with pytest.raises(FabricError, match="link_tier"):
        dataclasses.replace(plan, link_tier=link_tier).validate()


def test_plan_validate_rejects_two_racks_in_one_position(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=64)
    rack_col = plan.rack_col.copy()
    rack_col[1] = rack_col[0]
    with pytest.raises(FabricError, match="one hall position"):
        dataclasses.replace(plan, rack_col=rack_col).validate()


@pytest.mark.parametrize(
    ("name", "server", "nodes", "extra"),
    [
        ("rail-optimized", "dgx-h100", 2048, {"oversubscription": 2.0}),
        ("rail-optimized", "dgx-h100", 16384, {}),
        ("nvl72", "gb200-nvl72", 90, {}),
        ("fat-tree", "dgx-a100", 3, {}),
        ("fat-tree", "mi300x-platform", 200, {"tiers": 3, "feed": "415v-63a-3ph"}),
    ],
)
def test_generate_from_saved_params_reproduces_the_plan(catalog, name, server, nodes, extra):
    plan = generate(name, catalog=catalog, server=server, nodes=nodes, **extra)
    again = generate(plan.generator, catalog=catalog, **plan.params)
    assert again.params == plan.params
    for column in ("node_rack", "switch_type", "switch_rack", "switch_u", "link_a", "link_b", "feed_type"):
        assert np.array_equal(getattr(again, column), getattr(plan, column)), column


def test_generate_rejects_non_numeric_and_one_tier_too_small(catalog):
    with pytest.raises(FabricError, match=r"^oversubscription: must be a number"):
        generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=8, oversubscription="2")
    with pytest.raises(FabricError, match=r"^tiers: at most 4 dgx-h100 nodes fit a 1-tier"):
        generate("fat-tree", catalog=catalog, server="dgx-h100", nodes=8, tiers=1)


def test_three_tier_pods_are_balanced(catalog):
    # 260 DGX on a QM9700 fat-tree: 4 nodes per leaf -> 65 leaves > 64 ports -> 3 tiers with
    # ceil(65 / 32) = 3 pods of 22, 22 and 21 leaves (not 32, 32, 1), 3 * 32 spines
    plan = generate("fat-tree", catalog=catalog, server="dgx-h100", nodes=260)
    pod = plan.switch_pod()
    leaves = plan.switch_tier == TIER_LEAF
    assert sorted(np.bincount(pod[leaves]).tolist()) == [21, 22, 22]
    assert plan.n_switches["spine"] == 96


def test_rack_budgets_cover_the_racks_switches_and_their_transceivers(catalog):
    """Every rack's budget is its nameplate (servers, switches, switch-end optics) plus the margin:
    network racks are not over budget once their optics are counted."""
    from topology.fabric.layout import RACK_BUDGET_MARGIN

    for name, kw in (
        ("rail-optimized", {"server": "dgx-h100", "nodes": 256}),
        ("nvl72", {"server": "gb200-nvl72", "nodes": 72}),
        ("fat-tree", {"server": "dgx-a100", "nodes": 40}),
    ):
        plan = generate(name, catalog=catalog, **kw)
        nameplate_kw = plan.rack_nameplate_w() / 1000
        np.testing.assert_allclose(plan.rack_budget_kw, nameplate_kw * (1 + RACK_BUDGET_MARGIN), rtol=1e-9)
        network = plan.rack_kind == 1
        switch_only = np.bincount(
            plan.switch_rack,
            weights=np.array([s.power_w for s in plan.switch_types])[plan.switch_type],
            minlength=plan.n_racks,
        )
        assert (nameplate_kw[network] * 1000 > switch_only[network]).all()  # optics counted
