"""A ``FabricPlan`` compiled into the index arrays the simulation core routes traffic on.

``compile_plan`` derives the tree structure from the plan's link columns (not from generator
parameters), so a plan rebuilt from database rows compiles the same way:

- NIC port -> its leaf and the link to it (``nic_leaf``, ``nic_link``);
- switch -> its uplinks, grouped by lower switch as CSR (``up_ptr``, ``up_link``, ``up_upper``);
- (spine, leaf) -> the spine's down links to that leaf, as a dense (start, count) table;
- (core, pod) -> the core's down links into that pod, likewise;
- pod -> its spine-core links (``pod_up_ptr``, ``pod_up_link``) for ECMP spreading.

Routing (``routing.py``) uses only these arrays, vectorized over flows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from topology.fabric import routing
from topology.fabric.plan import (
    LINK_LEAF_SPINE,
    LINK_SERVER_LEAF,
    LINK_SPINE_CORE,
    LINK_TIERS,
    TIER_LEAF,
    FabricError,
    FabricPlan,
)

TIER_NAMES = LINK_TIERS


@dataclass(frozen=True, eq=False)
class CompiledFabric:
    """Index arrays of one fabric (G GPUs, N nodes, R racks, L links, P NIC ports, S switches).

    Directed link ``d = 2*l`` is link ``l`` upward (towards the upper switch), ``2*l + 1``
    downward. Bandwidths are Gb/s per direction, latencies seconds.
    """

    n_gpus: int
    n_nodes: int
    n_racks: int
    n_links: int
    n_tiers: int
    gpu_node: np.ndarray  # (G,)
    gpu_rack: np.ndarray  # (G,)
    gpu_domain: np.ndarray  # (G,) scale-up domain id
    gpu_local: np.ndarray  # (G,) index of the GPU in its server
    gpu_nic: np.ndarray  # (G,) NIC port vertex the GPU uses (rail-aligned)
    gpu_scaleup_gbytes_per_s: np.ndarray  # (G,) per direction
    node_rack: np.ndarray  # (N,)
    rack_row: np.ndarray  # (R,)
    rack_col: np.ndarray  # (R,)
    link_gbps: np.ndarray  # (L,)
    link_latency_s: np.ndarray  # (L,) optic + the upper switch it enters
    link_tier: np.ndarray  # (L,) index into TIER_NAMES
    link_rack: np.ndarray  # (L,) rack of the link's lower end
    directed_capacity_gbps: np.ndarray  # (2L,)
    directed_latency_s: np.ndarray  # (2L,) optic + the switch entered (none for a NIC)
    bisection_gbps: float
    per_gpu_bisection_gbps: float
    # tree structure
    nic_leaf: np.ndarray  # (P,) switch id of the NIC's leaf
    nic_link: np.ndarray  # (P,) link id NIC -> leaf
    switch_pod: np.ndarray  # (S,) pod of leaves and spines, -1 otherwise
    up_ptr: np.ndarray  # (S+1,) CSR of uplinks by lower switch
    up_link: np.ndarray  # (U,) link ids, grouped by lower switch
    up_upper: np.ndarray  # (U,) switch id of each uplink's upper end
    leaf_rank: np.ndarray  # (S,) rank of a leaf among the leaves of its pod
    pod_width: int  # most leaves in one pod
    leaf_down_start: np.ndarray  # (S*pod_width,) by spine*pod_width + leaf_rank: first entry
    leaf_down_count: np.ndarray  # (S*pod_width,) number of parallel links spine -> leaf
    leaf_down_link: np.ndarray  # (L1,) link ids grouped by (spine, leaf)
    core_down_start: np.ndarray  # (S*n_pods,) by core*n_pods + pod
    core_down_count: np.ndarray  # (S*n_pods,)
    core_down_link: np.ndarray  # (L2,) link ids grouped by (core, pod)
    core_down_spine: np.ndarray  # (L2,) the spine each of them enters
    pod_up_ptr: np.ndarray  # (n_pods+1,) CSR of spine-core links by pod
    pod_up_link: np.ndarray  # (L2,)
    n_switches: int
    n_pods: int

    @property
    def tier_names(self) -> tuple[str, ...]:
        return TIER_NAMES

    def route(
        self, src_gpu: np.ndarray, dst_gpu: np.ndarray, *, ecmp: str = "hash", salt: int = 0
    ) -> routing.Routes:
        """Route flows ``src_gpu[f] -> dst_gpu[f]``; see ``topology.fabric.routing.route``."""
        return routing.route(self, src_gpu, dst_gpu, ecmp=ecmp, salt=salt)

    def link_load_gbps(
        self,
        src_gpu: np.ndarray,
        dst_gpu: np.ndarray,
        rate_gbps: np.ndarray | float,
        *,
        ecmp: str = "hash",
        salt: int = 0,
    ) -> np.ndarray:
        """Load on every directed link, (2L,) Gb/s; see ``topology.fabric.routing.link_load_gbps``."""
        return routing.link_load_gbps(self, src_gpu, dst_gpu, rate_gbps, ecmp=ecmp, salt=salt)

    def segment_loads(
        self,
        src_gpu: np.ndarray,
        dst_gpu: np.ndarray,
        bounds: np.ndarray,
        *,
        ecmp: str = "hash",
        salt: int = 0,
    ) -> routing.SegmentLoads:
        """Per-segment link loads and path latencies; see ``topology.fabric.routing.segment_loads``."""
        return routing.segment_loads(self, src_gpu, dst_gpu, bounds, ecmp=ecmp, salt=salt)


def compile_plan(plan: FabricPlan) -> CompiledFabric:
    """Compile a plan into index arrays (vectorized; no Python loop per GPU or link).

    Parameters
    ----------
    plan : a validated ``FabricPlan`` whose scale-out fabric is a tree of leaves, spines and
        (optionally) cores in which every leaf reaches every spine of its pod and every core
        reaches every pod.

    Returns
    -------
    CompiledFabric

    Raises
    ------
    FabricError when a NIC has no leaf or the wiring breaks the reachability rules above.
    """
    server = plan.server
    gpus, nics = int(server.gpus_per_server), plan.nics_per_node
    n_gpus, n_ports = plan.n_gpus, plan.n_nic_ports
    gpu = np.arange(n_gpus, dtype=np.int64)
    gpu_node, gpu_local = gpu // gpus, gpu % gpus
    structure = _structure(plan)
    latency = _latencies(plan)
    bisection = plan.bisection_gbps()
    lower_vertex = plan.link_a
    lower_is_nic = lower_vertex < n_ports
    link_rack = np.where(
        lower_is_nic,
        plan.node_rack[np.minimum(lower_vertex, max(n_ports - 1, 0)) // max(nics, 1)],
        plan.switch_rack[np.maximum(lower_vertex - n_ports, 0)] if plan.switch_rack.size else 0,
    )
    fabric = CompiledFabric(
        n_gpus=n_gpus,
        n_nodes=plan.n_nodes,
        n_racks=plan.n_racks,
        n_links=int(plan.link_a.size),
        n_tiers=plan.n_tiers,
        gpu_node=gpu_node,
        gpu_rack=plan.node_rack[gpu_node],
        gpu_domain=plan.gpu_domain(),
        gpu_local=gpu_local,
        gpu_nic=gpu_node * nics + gpu_local * nics // gpus,
        gpu_scaleup_gbytes_per_s=np.full(n_gpus, float(plan.gpu.scaleup_gbytes_per_s)),
        node_rack=plan.node_rack,
        rack_row=plan.rack_row,
        rack_col=plan.rack_col,
        link_gbps=plan.link_gbps.astype(float),
        link_latency_s=latency["link"],
        link_tier=plan.link_tier,
        link_rack=link_rack.astype(np.int64),
        directed_capacity_gbps=np.repeat(plan.link_gbps.astype(float), 2),
        directed_latency_s=latency["directed"],
        bisection_gbps=bisection,
        per_gpu_bisection_gbps=bisection / (n_gpus / 2.0) if n_gpus else 0.0,
        **structure,
    )
    return _read_only(fabric)


def _read_only(fabric: CompiledFabric) -> CompiledFabric:
    """Freeze every array: a compiled fabric is cached and shared between runs."""
    for value in vars(fabric).values():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return fabric


def _latencies(plan: FabricPlan) -> dict[str, np.ndarray]:
    """Per-link and per-directed-link latency: optic + the switch the direction enters."""
    optic_s = np.array([t.latency_ns for t in plan.link_types])[plan.link_type] * 1e-9
    switch_s = np.array([s.latency_ns for s in plan.switch_types])[plan.switch_type] * 1e-9
    offset = plan.n_nic_ports
    upper_s = switch_s[plan.link_b - offset] if plan.link_b.size else np.zeros(0)
    lower_is_switch = plan.link_a >= offset
    lower_s = np.where(
        lower_is_switch, switch_s[np.maximum(plan.link_a - offset, 0)] if switch_s.size else 0, 0.0
    )
    directed = np.empty(2 * plan.link_a.size)
    directed[0::2] = optic_s + upper_s
    directed[1::2] = optic_s + lower_s
    return {"link": optic_s + upper_s, "directed": directed}


def _structure(plan: FabricPlan) -> dict[str, np.ndarray | int]:
    """Tree index arrays from the link columns (see the module docstring)."""
    offset, n_ports = plan.n_nic_ports, plan.n_nic_ports
    n_switches = int(plan.switch_type.size)
    link_id = np.arange(plan.link_a.size, dtype=np.int64)
    tier0 = plan.link_tier == LINK_SERVER_LEAF
    nic_link = np.full(n_ports, -1, np.int64)
    nic_link[plan.link_a[tier0]] = link_id[tier0]
    if np.any(nic_link < 0):
        missing = int(np.flatnonzero(nic_link < 0)[0])
        raise FabricError(f"link_a: NIC port {missing} has no server_leaf link")
    nic_leaf = plan.link_b[nic_link] - offset

    switched = ~tier0
    lower = plan.link_a[switched] - offset
    order = np.argsort(lower, kind="stable")
    up_link = link_id[switched][order]
    up_upper = plan.link_b[up_link] - offset
    up_ptr = np.zeros(n_switches + 1, np.int64)
    np.cumsum(np.bincount(lower, minlength=n_switches), out=up_ptr[1:])

    pod = plan.switch_pod()
    n_pods = int(pod.max()) + 1 if pod.size and pod.max() >= 0 else 1
    leaf_rank, pod_width = _leaf_ranks(plan, pod, n_pods)
    tier1 = link_id[plan.link_tier == LINK_LEAF_SPINE]
    leaf_of_1, spine_of_1 = plan.link_a[tier1] - offset, plan.link_b[tier1] - offset
    key1 = spine_of_1 * pod_width + leaf_rank[leaf_of_1]
    order1 = np.argsort(key1, kind="stable")
    start1, count1 = _key_table(key1[order1], n_switches * pod_width)
    tier2 = link_id[plan.link_tier == LINK_SPINE_CORE]
    spine_of_2, core_of_2 = plan.link_a[tier2] - offset, plan.link_b[tier2] - offset
    key2 = core_of_2 * n_pods + pod[spine_of_2]
    order2 = np.argsort(key2, kind="stable")
    start2, count2 = _key_table(key2[order2], n_switches * n_pods)
    pod_order = np.argsort(pod[spine_of_2], kind="stable")
    pod_up_ptr = np.zeros(n_pods + 1, np.int64)
    np.cumsum(np.bincount(pod[spine_of_2], minlength=n_pods), out=pod_up_ptr[1:])
    _check_reachability(plan, pod, count1, count2, n_pods)
    return {
        "nic_leaf": nic_leaf,
        "nic_link": nic_link,
        "switch_pod": pod,
        "up_ptr": up_ptr,
        "up_link": up_link,
        "up_upper": up_upper,
        "leaf_rank": leaf_rank,
        "pod_width": pod_width,
        "leaf_down_start": start1,
        "leaf_down_count": count1,
        "leaf_down_link": tier1[order1],
        "core_down_start": start2,
        "core_down_count": count2,
        "core_down_link": tier2[order2],
        "core_down_spine": spine_of_2[order2],
        "pod_up_ptr": pod_up_ptr,
        "pod_up_link": tier2[pod_order],
        "n_switches": n_switches,
        "n_pods": n_pods,
    }


def _leaf_ranks(plan: FabricPlan, pod: np.ndarray, n_pods: int) -> tuple[np.ndarray, int]:
    """Rank of every leaf among the leaves of its pod, and the largest pod's leaf count."""
    leaves = np.flatnonzero(plan.switch_tier == TIER_LEAF)
    rank = np.zeros(pod.size, np.int64)
    if leaves.size == 0:
        return rank, 1
    leaf_pod = pod[leaves]
    order = np.argsort(leaf_pod, kind="stable")
    per_pod = np.bincount(leaf_pod, minlength=n_pods)
    first = np.cumsum(per_pod) - per_pod
    rank[leaves[order]] = np.arange(leaves.size) - first[leaf_pod[order]]
    return rank, int(per_pod.max())


def _key_table(sorted_keys: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense (start, count) of each key's run in ``sorted_keys`` (start -1 where absent)."""
    start = np.full(size, -1, np.int64)
    count = np.zeros(size, np.int64)
    # The keys are sorted already: runs start where a key changes (np.unique would re-sort).
    is_first = np.ones(sorted_keys.size, bool)
    is_first[1:] = sorted_keys[1:] != sorted_keys[:-1]
    first = np.flatnonzero(is_first)
    keys, runs = sorted_keys[first], np.diff(np.append(first, sorted_keys.size))
    start[keys] = first
    count[keys] = runs
    return start, count


def _check_reachability(
    plan: FabricPlan, pod: np.ndarray, count1: np.ndarray, count2: np.ndarray, n_pods: int
) -> None:
    """Every leaf must reach every spine of its pod; every core every pod.

    ``count1`` / ``count2`` are the dense link counts per (spine, leaf rank) and (core, pod):
    their non-zero cells are the distinct pairs the wiring connects.
    """
    leaves = np.flatnonzero(plan.switch_tier == TIER_LEAF)
    spine_count = np.bincount(pod[(pod >= 0) & (plan.switch_tier != TIER_LEAF)], minlength=n_pods)
    leaf_count = np.bincount(pod[leaves][pod[leaves] >= 0], minlength=n_pods)
    if np.count_nonzero(count1) != int((spine_count * leaf_count).sum()):
        raise FabricError("link_b: every leaf must connect to every spine of its pod")
    per_core = count2.reshape(-1, max(n_pods, 1))
    n_cores = np.count_nonzero(per_core.any(axis=1))
    n_pairs = np.count_nonzero(per_core)
    if n_pairs and n_pairs != n_cores * n_pods:
        raise FabricError("link_b: every core must connect to every pod")
    if leaves.size > 1 and n_pods > 1 and n_pairs == 0:
        raise FabricError("link_tier: leaves in several pods need a core tier to reach each other")
