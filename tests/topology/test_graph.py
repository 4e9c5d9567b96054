"""plan_to_graph: vertices, edges, bandwidths and connectivity."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from topology.fabric.generators import generate
from topology.fabric.graph import PCIE_GEN4_X16_GBPS, PCIE_GEN5_X16_GBPS, plan_to_graph


@pytest.mark.parametrize(
    ("name", "server", "nodes", "extra"),
    [
        ("rail-optimized", "dgx-h100", 24, {}),
        ("rail-optimized", "dgx-h100", 40, {"su_nodes": 2, "tiers": 3}),
        ("nvl72", "gb200-nvl72", 36, {}),
        ("fat-tree", "dgx-a100", 30, {}),
    ],
)
def test_graph_every_gpu_pair_is_connected(catalog, name, server, nodes, extra):
    plan = generate(name, catalog=catalog, server=server, nodes=nodes, **extra)
    graph = plan_to_graph(plan)
    assert nx.is_connected(graph)
    # without the scale-up shortcuts the scale-out fabric alone still joins every NIC
    network = graph.subgraph(v for v in graph if v[0] in ("nic", "switch"))
    assert nx.is_connected(network)


def test_graph_vertex_and_edge_counts(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=24)
    graph = plan_to_graph(plan)
    kinds = np.array([data["kind"] for _, data in graph.nodes(data=True)])
    assert (kinds == "gpu").sum() == 192
    assert (kinds == "nic").sum() == 192
    assert (kinds == "switch").sum() == sum(plan.n_switches.values())
    assert (kinds == "scaleup").sum() == 24  # one NVSwitch domain per DGX
    edge_kinds = [data["kind"] for _, _, data in graph.edges(data=True)]
    assert edge_kinds.count("pcie") == 192
    assert edge_kinds.count("scaleup") == 192
    assert edge_kinds.count("server_leaf") == 192


def test_graph_bandwidths_and_latency(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=24)
    graph = plan_to_graph(plan)
    assert graph.edges[("gpu", 0), ("nic", 0)]["gbps"] == pytest.approx(PCIE_GEN5_X16_GBPS)
    assert graph.edges[("gpu", 0), ("domain", 0)]["gbps"] == pytest.approx(450.0 * 8)
    leaf = ("switch", int(plan.link_b[0] - plan.n_nic_ports))
    edge = graph.edges[("nic", 0), leaf]
    assert edge["gbps"] == 400.0 and edge["latency_s"] == pytest.approx(230e-9)
    # parallel leaf-spine links merge, total bandwidth kept: 8 leaves * 32 uplinks over the
    # smallest divisor of 32 spines with S * 64 >= 256 -> 4 spines, 32 / 4 = 8 links per pair
    switch_gbps = sum(d["gbps"] for _, _, d in graph.edges(data=True) if d["kind"] == "leaf_spine")
    assert switch_gbps == pytest.approx(plan.link_gbps[plan.link_tier == 1].sum())
    assert max(d["links"] for _, _, d in graph.edges(data=True) if d["kind"] == "leaf_spine") == 8


def test_graph_a100_uses_pcie_gen4_and_nvl72_domains_have_trays(catalog):
    a100 = plan_to_graph(generate("rail-optimized", catalog=catalog, server="dgx-a100", nodes=4))
    assert a100.edges[("gpu", 0), ("nic", 0)]["gbps"] == pytest.approx(PCIE_GEN4_X16_GBPS)
    nvl = plan_to_graph(generate("nvl72", catalog=catalog, server="gb200-nvl72", nodes=36))
    assert nvl.nodes[("domain", 1)]["switches"] == 9
    assert nvl.degree(("domain", 1)) == 72
    assert nvl.nodes[("gpu", 72)]["domain"] == 1
