"""A ``FabricPlan`` as a networkx graph, for analysis and small UI views (not the hot path).

Vertices (tuples, so that ids never collide):

- ``("gpu", g)``: kind "gpu", node, local (index in the server), domain (scale-up domain id);
- ``("nic", p)``: kind "nic", node, index (NIC port p = node*nics + index);
- ``("switch", s)``: kind "switch", tier (name), type (slug), rack, group, rail;
- ``("domain", d)``: kind "scaleup", domain, switches (NVLink switch trays of the domain, 0
  when the NVSwitch chips sit inside the server as in HGX/DGX).

Edges carry ``gbps`` (per direction) and ``latency_s``, and ``kind``: "pcie" (GPU-NIC),
"scaleup" (GPU-domain), or the link tier name. Parallel links between the same two switches
become one edge with the summed ``gbps`` and their count in ``links``.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from topology.fabric.plan import LINK_TIERS, SWITCH_TIERS, TIER_SCALEUP, FabricPlan

# PCIe x16 payload bandwidth per direction: PCI-SIG PCIe 4.0 base spec, 16 GT/s per lane, and
# PCIe 5.0 base spec, 32 GT/s per lane, both 128b/130b encoded: 16 lanes x 16 GT/s x 128/130
# = 252 Gb/s (Gen4), 504 Gb/s (Gen5). A100 systems attach NICs over Gen4 (DGX A100 datasheet);
# assumed Gen5 for every later GPU generation in the catalog (H100/H200/B200/GB200/MI300X
# platforms are PCIe Gen5 hosts).
PCIE_GEN4_X16_GBPS = 16 * 16 * 128 / 130
PCIE_GEN5_X16_GBPS = 16 * 32 * 128 / 130
PCIE_GEN4_GPUS = ("a100-sxm-80gb",)
# Assumed: ~0.5 us GPU -> NIC PCIe traversal through a switch (order of magnitude; not a
# datasheet figure); scale-up hop latency is taken from the NVLink switch spec when present.
PCIE_LATENCY_S = 0.5e-6


def pcie_gbps(gpu_slug: str) -> float:
    """GPU-NIC PCIe x16 bandwidth per direction, Gb/s (see the module constants' sources)."""
    return PCIE_GEN4_X16_GBPS if gpu_slug in PCIE_GEN4_GPUS else PCIE_GEN5_X16_GBPS


def plan_to_graph(plan: FabricPlan) -> nx.Graph:
    """Build the graph of GPUs, NICs, switches and scale-up domains of a plan.

    Parameters
    ----------
    plan : FabricPlan

    Returns
    -------
    networkx.Graph (see the module docstring for vertex and edge attributes)
    """
    graph = nx.Graph(generator=plan.generator, params=dict(plan.params))
    gpus, nics = int(plan.server.gpus_per_server), plan.nics_per_node
    gpu = np.arange(plan.n_gpus)
    gpu_node, gpu_local = gpu // gpus, gpu % gpus
    gpu_domain = plan.gpu_domain()
    gpu_nic = gpu_node * nics + gpu_local * nics // gpus
    graph.add_nodes_from(
        (("gpu", g), {"kind": "gpu", "node": n, "local": k, "domain": d})
        for g, n, k, d in zip(
            gpu.tolist(), gpu_node.tolist(), gpu_local.tolist(), gpu_domain.tolist(), strict=True
        )
    )
    port = np.arange(plan.n_nic_ports)
    graph.add_nodes_from(
        (("nic", p), {"kind": "nic", "node": p // nics, "index": p % nics}) for p in port.tolist()
    )
    _add_switches(graph, plan)
    _add_domains(graph, plan, gpu_domain)
    pcie = pcie_gbps(plan.gpu.slug)
    graph.add_edges_from(
        (("gpu", g), ("nic", p), {"kind": "pcie", "gbps": pcie, "latency_s": PCIE_LATENCY_S})
        for g, p in zip(gpu.tolist(), gpu_nic.tolist(), strict=True)
    )
    _add_links(graph, plan)
    return graph


def _add_switches(graph: nx.Graph, plan: FabricPlan) -> None:
    scale_out = np.flatnonzero(plan.switch_tier != TIER_SCALEUP)
    slugs = [spec.slug for spec in plan.switch_types]
    graph.add_nodes_from(
        (
            ("switch", s),
            {
                "kind": "switch",
                "tier": SWITCH_TIERS[int(plan.switch_tier[s])],
                "type": slugs[int(plan.switch_type[s])],
                "rack": int(plan.switch_rack[s]),
                "group": int(plan.switch_group[s]),
                "rail": int(plan.switch_rail[s]),
            },
        )
        for s in scale_out.tolist()
    )


def _add_domains(graph: nx.Graph, plan: FabricPlan, gpu_domain: np.ndarray) -> None:
    """One vertex per scale-up domain, joined to its GPUs at the GPU's scale-up bandwidth."""
    n_domains = int(gpu_domain.max()) + 1 if gpu_domain.size else 0
    trays = plan.switch_tier == TIER_SCALEUP
    rack_domain = np.full(plan.n_racks, -1, np.int64)
    rack_domain[plan.node_rack] = gpu_domain[:: int(plan.server.gpus_per_server)]
    tray_domain = rack_domain[plan.switch_rack[trays]]
    trays_per_domain = np.bincount(tray_domain[tray_domain >= 0], minlength=n_domains)
    tray_types = plan.switch_type[trays]
    hop_s = plan.switch_types[int(tray_types[0])].latency_ns * 1e-9 if tray_types.size else 0.0
    graph.add_nodes_from(
        (("domain", d), {"kind": "scaleup", "domain": d, "switches": int(trays_per_domain[d])})
        for d in range(n_domains)
    )
    scaleup_gbps = float(plan.gpu.scaleup_gbytes_per_s) * 8.0
    graph.add_edges_from(
        (("gpu", g), ("domain", d), {"kind": "scaleup", "gbps": scaleup_gbps, "latency_s": hop_s})
        for g, d in enumerate(gpu_domain.tolist())
    )


def _add_links(graph: nx.Graph, plan: FabricPlan) -> None:
    """NIC-leaf and switch-switch links; parallel links merged (summed gbps, count)."""
    if plan.link_a.size == 0:
        return
    offset = plan.n_nic_ports
    optic_s = np.array([t.latency_ns for t in plan.link_types])[plan.link_type] * 1e-9
    switch_s = np.array([s.latency_ns for s in plan.switch_types])[plan.switch_type] * 1e-9
    latency_s = optic_s + switch_s[plan.link_b - offset]
    pairs, first, inverse, counts = np.unique(
        np.stack([plan.link_a, plan.link_b], axis=1),
        axis=0,
        return_index=True,
        return_inverse=True,
        return_counts=True,
    )
    gbps = np.bincount(inverse.ravel(), weights=plan.link_gbps, minlength=pairs.shape[0])

    def vertex(v: int) -> tuple[str, int]:
        return ("nic", v) if v < offset else ("switch", v - offset)

    graph.add_edges_from(
        (
            vertex(a),
            vertex(b),
            {
                "kind": LINK_TIERS[int(plan.link_tier[i])],
                "gbps": float(g),
                "links": int(c),
                "latency_s": float(latency_s[i]),
            },
        )
        for (a, b), i, g, c in zip(
            pairs.tolist(), first.tolist(), gbps.tolist(), counts.tolist(), strict=True
        )
    )
