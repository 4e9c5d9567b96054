"""Failure components, blast radius, rates, checkpoint size and degraded fabrics
(scenarios/sim/failures/model.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from scenarios.sim.failures import (
    checkpoint_size,
    degraded_fabric,
    failure_components,
    simulate_failures,
)
from scenarios.sim.format.failures import parse_failures
from tests.sim.failures._helpers import (
    design,
    llama_job,
    small_model,
)

# --- components and blast radius --------------------------------------------------------------


def test_failure_components_count_only_what_the_job_uses():
    plan, fabric, catalog = design()
    su = plan.params["su_nodes"]
    one_su = failure_components(plan, fabric, np.arange(su), catalog)
    counts = one_su.counts()
    assert counts["gpu"] == counts["hbm"] == su * 8 and counts["host"] == su and counts["nic"] == su * 8
    assert counts["leaf"] == 8  # one rail-k leaf of one scalable unit per rail
    assert one_su.idle_nodes == 64 - su
    leaves = np.unique(fabric.nic_leaf[: su * 8])
    spines = np.unique(plan.link_b[np.isin(plan.link_a - plan.n_nic_ports, leaves)] - plan.n_nic_ports)
    racks = np.unique(
        np.concatenate([plan.node_rack[:su], plan.switch_rack[leaves], plan.switch_rack[spines]])
    )
    feeds = plan.feed_rack_feed[np.isin(plan.feed_rack_rack, racks)]
    assert counts["feed"] == np.unique(feeds).size == 2 * racks.size  # A and B per rack
    whole = small_model().counts()
    assert whole["leaf"] == 32 and whole["nic_link"] == 64 * 8


def test_blast_radius_leaf_fault_stops_exactly_the_servers_under_it():
    model = small_model()
    plan, _, _ = design()
    leaf = 8 * 2 + 3  # rail 3 of scalable unit 2
    su = plan.params["su_nodes"]
    assert plan.switch_rail[leaf] == 3 and plan.switch_group[leaf] == 2
    assert model.blast_radius("leaf", leaf).tolist() == list(range(2 * su, 3 * su))
    plan_ft, fabric_ft, catalog = design(32, "fat-tree")
    fat = failure_components(plan_ft, fabric_ft, None, catalog)
    nodes_on_leaf0 = np.unique(np.flatnonzero(fabric_ft.nic_leaf == 0) // 8)
    assert fat.blast_radius("leaf", 0).tolist() == nodes_on_leaf0.tolist()
    assert model.blast_radius("gpu", 8 * 5 + 2).tolist() == [5]
    assert model.blast_radius("spine", int(np.flatnonzero(plan.switch_tier == 1)[0])).size == 0


def test_server_rate_override_scales_the_server_hazards():
    model = small_model()
    base = {
        "trials": 400,
        "window_days": 30,
        "spare_servers": 64,
        "checkpoint": {"save_s": 30},
        "reload_s": 30,
    }
    rates = {"server_per_1000_node_days": 6.5, "software_per_day": 0, "maintenance_per_day": 0}
    result = simulate_failures(model, parse_failures(base | {"rates": rates}), step_time_s=5.0)
    by = result.interruptions["by_category"]
    links = [c for c in model.classes if c.kind in ("nic_link", "leaf")]
    network = sum(c.rate_per_year * c.count for c in links) * 30 / 365
    assert by["gpu"] + by["host"] == pytest.approx(6.5 / 1000 * 64 * 30, rel=0.05)
    assert by["network"] == pytest.approx(network, rel=0.15)


def test_checkpoint_size_follows_the_model_and_zero_sharding():
    job = llama_job()
    size = checkpoint_size(job)
    assert size.save_bytes == pytest.approx(405e9 * 14, rel=0.02)
    assert size.reload_bytes == size.save_bytes
    unsharded = checkpoint_size(replace(job, zero=0))
    assert unsharded.reload_bytes == pytest.approx(4 * size.save_bytes)


def test_degraded_fabric_removes_the_lost_share_of_capacity():
    _, fabric, _ = design(2048, server="dgx-h100")
    spine = degraded_fabric(fabric, "spine")
    changed = np.asarray(spine.link_gbps) != np.asarray(fabric.link_gbps)
    assert np.allclose(np.asarray(spine.link_gbps)[changed], 400 * (1 - 1 / 32))
    assert changed.sum() == 32 * 32  # every leaf-spine link of one pod
    link = degraded_fabric(fabric, "fabric_link")
    assert (np.asarray(link.link_gbps) != np.asarray(fabric.link_gbps)).sum() == 32
