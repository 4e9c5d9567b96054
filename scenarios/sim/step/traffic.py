"""Traffic patterns of parallel groups, routed on a compiled fabric, condensed into costs.

For each communication kind of a :class:`~scenarios.sim.step.layout.Layout`, the flows that all its
groups send at once are built as arrays (ring channels, NCCL double binary trees, pipeline
neighbours, all-to-all pairs) and every cross-domain flow of every kind and pattern is routed
in a single ``fabric.route`` call. Per pattern, the load of each directed link is
``incidence.T @ 1`` and a flow runs at its share of its bottleneck link,
``min_d capacity_d / load_d`` over the links it crosses; the worst flow bounds the synchronous
collective. The result is one :class:`~scenarios.sim.step.collectives.GroupCost` per kind, which
``collectives.collective_time_s`` turns into times. See docs/network-model.md.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from scenarios.sim.step.collectives import (
    SCALEOUT_BUS_EFFICIENCY,
    SCALEUP_BUS_EFFICIENCY,
    GroupCost,
)
from scenarios.sim.step.layout import KIND_NAMES, Layout

__all__ = ["A2A_KINDS", "costs_for_groups", "group_costs", "nccl_tree_parents"]

#: Kinds whose all-to-all pattern is routed pair by pair (MoE dispatch, Ulysses-style context
#: parallelism, tensor-parallel sequence swaps); others estimate it from the ring's NIC load.
A2A_KINDS = ("ep", "cp", "tp")

#: Cap on the fabric flows routed for one kind's all-to-all; above it an evenly spaced subset of
#: the n-1 peer shifts is routed and the link loads are scaled up (the pattern is shift-symmetric).
_A2A_MAX_FLOWS = 1_000_000

_GBPS_TO_GBYTES = 1.0 / 8.0


@dataclass
class _Pattern:
    """Flows of one traffic pattern of one kind (cross-domain flows only are routed)."""

    key: Hashable
    name: str  # "ring" | "tree" | "p2p" | "a2a"
    src: np.ndarray
    dst: np.ndarray
    has_intra: bool  # some hop of the pattern stays inside a scale-up domain
    load_scale: float = 1.0


def group_costs(fabric, layout: Layout, *, ecmp: str = "hash") -> dict[str, GroupCost]:
    """Cost parameters of every communication kind of ``layout`` on ``fabric``.

    All cross-domain flows of all kinds and patterns are routed with a single
    ``fabric.route`` call.

    Returns
    -------
    dict[str, GroupCost]
        Keyed by :data:`~scenarios.sim.step.layout.KIND_NAMES`.
    """
    if layout.world_size > int(fabric.n_gpus) or int(layout.rank_gpu.max()) >= int(fabric.n_gpus):
        raise ValueError(f"parallel: the job needs {layout.world_size} GPUs, the fabric has {fabric.n_gpus}")
    distinct = _distinct_kinds(layout)
    costs = costs_for_groups(fabric, {kind: (kind, layout.gpu_groups(kind)) for kind in distinct}, ecmp=ecmp)
    return {kind: replace(costs[_alias(layout, kind)], kind=kind) for kind in KIND_NAMES}


def costs_for_groups(
    fabric, requests: Mapping[Hashable, tuple[str, np.ndarray]], *, ecmp: str = "hash"
) -> dict[Hashable, GroupCost]:
    """Cost parameters of several sets of concurrent groups, routed in one ``fabric.route`` call.

    Parameters
    ----------
    fabric : CompiledFabric
    requests : mapping key -> (kind, gpus)
        ``gpus`` is an int array ``[n_groups, size]`` of GPU indices, all groups of one kind
        running at once; ``kind`` selects the traffic patterns ("pp": pipeline chain).
    ecmp : {"hash", "spread"}

    Returns
    -------
    dict key -> GroupCost
    """
    if ecmp not in ("hash", "spread"):
        raise ValueError(f"ecmp: must be 'hash' or 'spread' (got {ecmp!r})")
    gpu_domain = np.asarray(fabric.gpu_domain, dtype=np.int64)
    shapes = {}
    patterns: list[_Pattern] = []
    for key, (kind, gpus) in requests.items():
        if gpus.shape[1] <= 1:
            continue
        shapes[key] = _domain_shape(gpus, gpu_domain)
        patterns.extend(_kind_patterns(key, kind, gpus, gpu_domain, shapes[key]))
    routed = _route_patterns(fabric, patterns, ecmp)
    scaleup = np.asarray(fabric.gpu_scaleup_gbytes_per_s, dtype=float)
    costs = {}
    for key, (kind, gpus) in requests.items():
        if key in shapes:
            costs[key] = _kind_cost(kind, gpus, shapes[key], routed[key], scaleup)
        else:
            costs[key] = _trivial_cost(kind, gpus.shape[0], 2 * int(fabric.n_links))
    return costs


def _alias(layout: Layout, kind: str) -> str:
    """Kinds that coincide with another (dp_cp = dp when cp == 1, edp = dp_cp when ep == 1)."""
    if kind == "edp" and layout.ep == 1:
        kind = "dp_cp"
    if kind == "dp_cp" and layout.cp == 1:
        kind = "dp"
    return kind


def _distinct_kinds(layout: Layout) -> list[str]:
    return [kind for kind in KIND_NAMES if _alias(layout, kind) == kind]


@dataclass(frozen=True)
class _DomainShape:
    local_size: int  # members per domain (1 if non-uniform)
    n_domains: int  # domains per group (max)
    uniform: bool


def _domain_shape(gpus: np.ndarray, gpu_domain: np.ndarray) -> _DomainShape:
    """Members per scale-up domain and domains per group, shape (ng, n) input."""
    n = gpus.shape[1]
    sorted_domains = np.sort(gpu_domain[gpus], axis=1)
    # Members per (group, domain): run lengths of each sorted row (no second sort).
    starts = np.ones(sorted_domains.shape, bool)
    starts[:, 1:] = sorted_domains[:, 1:] != sorted_domains[:, :-1]
    counts = np.diff(np.append(np.flatnonzero(starts), starts.size))
    n_domains_per_group = np.count_nonzero(starts, axis=1)
    uniform = bool(counts.min() == counts.max()) and n % int(counts.min()) == 0
    local_size = int(counts.min()) if uniform else 1
    return _DomainShape(local_size, int(n_domains_per_group.max()), uniform)


def _kind_patterns(
    key: Hashable, kind: str, gpus: np.ndarray, gpu_domain: np.ndarray, shape: _DomainShape
) -> list[_Pattern]:
    patterns = [_ring_pattern(key, gpus, gpu_domain, shape), _p2p_pattern(key, kind, gpus, gpu_domain)]
    if shape.uniform and shape.n_domains > 1:
        patterns.append(_tree_pattern(key, gpus, gpu_domain, shape))
    if kind in A2A_KINDS:
        patterns.append(_a2a_pattern(key, gpus, gpu_domain))
    return patterns


def _cross_domain(key, name, src, dst, gpu_domain, load_scale=1.0) -> _Pattern:
    src, dst = src.ravel(), dst.ravel()
    cross = gpu_domain[src] != gpu_domain[dst]
    return _Pattern(key, name, src[cross], dst[cross], bool((~cross).any()), load_scale)


def _ring_pattern(key, gpus, gpu_domain, shape: _DomainShape) -> _Pattern:
    """NCCL channels: rank (domain i, slot j) sends to (domain i+1, slot j)."""
    order = np.lexsort((gpus, gpu_domain[gpus]), axis=1)
    ordered = np.take_along_axis(gpus, order, axis=1)
    if shape.uniform:
        by_domain = ordered.reshape(gpus.shape[0], -1, shape.local_size)
        return _cross_domain(key, "ring", by_domain, np.roll(by_domain, -1, axis=1), gpu_domain)
    return _cross_domain(key, "ring", ordered, np.roll(ordered, -1, axis=1), gpu_domain)


def nccl_tree_parents(n_ranks: int) -> tuple[np.ndarray, np.ndarray]:
    """Parents of NCCL's double binary tree over ``n_ranks`` nodes (-1 for a root).

    Tree 1 is NCCL's ``ncclGetBtree`` (parent of r: clear r's lowest set bit and set the next
    one, or just clear it when that leaves the range); tree 2 is tree 1 shifted by one rank
    (odd counts) or mirrored (even counts), as ``ncclGetDtree`` (NCCL src/graph/trees.cc).

    Returns
    -------
    (parent1, parent2) : ndarrays of int, shape (n_ranks,)
    """

    def btree(rank: np.ndarray) -> np.ndarray:
        bit = rank & -rank
        up = (rank ^ bit) | (bit << 1)
        up = np.where(up >= n_ranks, rank ^ bit, up)
        return np.where(rank == 0, -1, up)

    rank = np.arange(n_ranks, dtype=np.int64)
    parent1 = btree(rank)
    if n_ranks % 2 == 1:
        up = btree((rank - 1) % n_ranks)
        parent2 = np.where(up < 0, -1, (up + 1) % n_ranks)
    else:
        up = btree(n_ranks - 1 - rank)
        parent2 = np.where(up < 0, -1, n_ranks - 1 - up)
    return parent1, parent2


def _tree_pattern(key, gpus, gpu_domain, shape: _DomainShape) -> _Pattern:
    """NCCL double binary tree between domains, one per channel (slot), both directions."""
    order = np.lexsort((gpus, gpu_domain[gpus]), axis=1)
    by_domain = np.take_along_axis(gpus, order, axis=1).reshape(gpus.shape[0], -1, shape.local_size)
    child, parent = [], []
    for parents in nccl_tree_parents(by_domain.shape[1]):
        has_parent = np.flatnonzero(parents >= 0)
        child.append(has_parent)
        parent.append(parents[has_parent])
    child_node, parent_node = np.concatenate(child), np.concatenate(parent)
    src = np.concatenate([by_domain[:, child_node], by_domain[:, parent_node]], axis=1)
    dst = np.concatenate([by_domain[:, parent_node], by_domain[:, child_node]], axis=1)
    return _cross_domain(key, "tree", src, dst, gpu_domain)


def _p2p_pattern(key, kind, gpus, gpu_domain) -> _Pattern:
    """Neighbour sends: pipeline chain both ways for "pp", ring successor otherwise."""
    if kind == "pp":
        src = np.concatenate([gpus[:, :-1], gpus[:, 1:]], axis=1)
        dst = np.concatenate([gpus[:, 1:], gpus[:, :-1]], axis=1)
        return _cross_domain(key, "p2p", src, dst, gpu_domain)
    return _cross_domain(key, "p2p", gpus, np.roll(gpus, -1, axis=1), gpu_domain)


def _a2a_pattern(key, gpus, gpu_domain) -> _Pattern:
    """All ordered pairs as peer shifts 1..n-1 (a spaced subset when there are too many)."""
    n = gpus.shape[1]
    n_shifts = max(1, min(n - 1, _A2A_MAX_FLOWS // max(gpus.size, 1)))
    shifts = np.unique(np.linspace(1, n - 1, n_shifts).round().astype(np.int64))
    member = np.arange(n)
    peer = (member[None, :] + shifts[:, None]) % n  # (n_shifts, n)
    src = np.broadcast_to(gpus[:, None, :], (gpus.shape[0], shifts.size, n))
    dst = gpus[:, peer]
    return _cross_domain(key, "a2a", src, dst, gpu_domain, load_scale=(n - 1) / shifts.size)


@dataclass(frozen=True)
class _Routed:
    load: np.ndarray  # (2L,) flows per directed link (scaled)
    flow_gbytes_per_s: float  # worst flow's share of its bottleneck, raw line rate
    latency_s: float  # worst routed path latency
    has_intra: bool
    has_inter: bool
    max_flows_per_gpu: int = 1  # most flows one GPU sends or receives in the pattern


def _route_patterns(fabric, patterns: list[_Pattern], ecmp: str) -> dict[Hashable, dict[str, _Routed]]:
    """Route every pattern's flows in one call; per key and pattern, loads and worst rates.

    One ``fabric.segment_loads`` call routes all flows and returns each pattern's
    per-directed-link load: for "hash", the column sums of the hashed incidence over the
    pattern's rows; for "spread", the even split over all equal-cost paths aggregated per leaf
    and pod (``link_load_gbps``). Path latencies come from the hashed paths in both modes
    (equal-cost paths have equal latency in the generated fabrics).
    """
    n_directed = 2 * int(fabric.n_links)
    capacity = np.asarray(fabric.directed_capacity_gbps, dtype=float)
    out: dict[Hashable, dict[str, _Routed]] = {p.key: {} for p in patterns}
    bounds = np.concatenate([[0], np.cumsum([p.src.size for p in patterns])]).astype(np.int64)
    if bounds[-1] > 0:
        src = np.concatenate([p.src for p in patterns])
        dst = np.concatenate([p.dst for p in patterns])
        routed = fabric.segment_loads(src, dst, bounds, ecmp=ecmp)
        latency = routed.latency_s
    for i, pattern in enumerate(patterns):
        start, stop = int(bounds[i]), int(bounds[i + 1])
        if stop == start:
            out[pattern.key][pattern.name] = _Routed(
                np.zeros(n_directed), float("inf"), 0.0, pattern.has_intra, False
            )
            continue
        load = routed.loads[i]
        load *= pattern.load_scale
        used = load > 0
        with np.errstate(divide="ignore"):
            rate_gbps = float(np.min(capacity[used] / load[used])) if used.any() else float("inf")
        out[pattern.key][pattern.name] = _Routed(
            load=load,
            flow_gbytes_per_s=rate_gbps * _GBPS_TO_GBYTES,
            latency_s=float(latency[start:stop].max()),
            has_intra=pattern.has_intra,
            has_inter=True,
            max_flows_per_gpu=_max_flows_per_gpu(pattern),
        )
    return out


def _max_flows_per_gpu(pattern: _Pattern) -> int:
    """Most flows one GPU sends or receives (a count per GPU id: no sort, unlike ``np.unique``)."""
    return int(max(np.bincount(pattern.src).max(), np.bincount(pattern.dst).max()))


def _kind_cost(
    kind: str,
    gpus: np.ndarray,
    shape: _DomainShape,
    routed: dict[str, _Routed],
    scaleup_gbytes_per_s: np.ndarray,
) -> GroupCost:
    n = gpus.shape[1]
    scaleup = float(scaleup_gbytes_per_s[gpus].min()) * SCALEUP_BUS_EFFICIENCY
    ring, p2p = routed["ring"], routed["p2p"]
    ring_flow = ring.flow_gbytes_per_s * SCALEOUT_BUS_EFFICIENCY
    p2p_bw = p2p.flow_gbytes_per_s * SCALEOUT_BUS_EFFICIENCY
    if p2p.has_intra:
        p2p_bw = min(p2p_bw, scaleup)
    local = shape.local_size
    if "a2a" in routed:
        a2a, a2a_bw = routed["a2a"].load, routed["a2a"].flow_gbytes_per_s * SCALEOUT_BUS_EFFICIENCY
    else:
        # NIC-bound estimate for kinds that rarely use all-to-all: n - nl peers share the rail.
        a2a, a2a_bw = ring.load * max(n - local, 0), ring_flow / max(n - local, 1)
    tree_flow = ring_flow
    path_latency = max(ring.latency_s, p2p.latency_s)
    if "tree" in routed:
        tree = routed["tree"]
        tree_flow = tree.flow_gbytes_per_s * tree.max_flows_per_gpu * SCALEOUT_BUS_EFFICIENCY
        path_latency = max(path_latency, tree.latency_s)
    return GroupCost(
        kind=kind,
        size=n,
        n_groups=gpus.shape[0],
        local_size=local,
        n_domains=shape.n_domains,
        scaleup_gbytes_per_s=scaleup,
        ring_flow_gbytes_per_s=ring_flow,
        p2p_gbytes_per_s=p2p_bw,
        a2a_flow_gbytes_per_s=a2a_bw,
        tree_flow_gbytes_per_s=tree_flow,
        path_latency_s=path_latency,
        ring_load=ring.load,
        p2p_load=p2p.load,
        a2a_load=a2a,
    )


def _trivial_cost(kind: str, n_groups: int, n_directed: int) -> GroupCost:
    zeros = np.zeros(n_directed)
    return GroupCost(
        kind=kind,
        size=1,
        n_groups=n_groups,
        local_size=1,
        n_domains=1,
        scaleup_gbytes_per_s=float("inf"),
        ring_flow_gbytes_per_s=float("inf"),
        p2p_gbytes_per_s=float("inf"),
        a2a_flow_gbytes_per_s=float("inf"),
        tree_flow_gbytes_per_s=float("inf"),
        path_latency_s=0.0,
        ring_load=zeros,
        p2p_load=zeros,
        a2a_load=zeros,
    )
