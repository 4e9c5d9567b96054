"""Vectorized routing of GPU-to-GPU flows over a compiled leaf/spine/core fabric.

A flow between GPUs of one scale-up domain never enters the scale-out fabric (0 hops). Else it
leaves through the source GPU's NIC; same leaf -> up and down (1 switch); same pod -> via one
spine both leaves reach (3 switches); across pods -> via a spine, a core and a spine of the
destination pod (5 switches).

ECMP modes:

- ``"hash"``: one path per flow, chosen at every hop from a cheap integer hash of
  (src, dst, salt) (splitmix64 finaliser), deterministic for a salt.
- ``"spread"``: the flow split evenly over all equal-cost next hops at every switch (per-hop
  ECMP). In the regular fabrics the generators build this puts 1/u on each of the source leaf's
  u uplinks and on each of the destination leaf's, and 1/P on each of the P spine-core links of
  the source and of the destination pod. The incidence of a cross-pod flow then has
  2 + 2u + 2P entries (2,114 for a radix-64 1:1 pod), so for many flows prefer
  ``link_load_gbps``, which aggregates per leaf and per pod in O(flows + links).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.sparse import csr_matrix

from topology.fabric.plan import FabricError

if TYPE_CHECKING:
    from topology.fabric.compiled import CompiledFabric

ECMP_MODES = ("hash", "spread")
HOPS_SAME_LEAF, HOPS_SAME_POD, HOPS_CROSS_POD = 1, 3, 5

_MASK64 = 0xFFFFFFFFFFFFFFFF
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_DST = np.uint64(0xC2B2AE3D27D4EB4F)


@dataclass(frozen=True, eq=False)
class Routes:
    """Routes of F flows over the 2L directed links of a fabric.

    incidence : csr_matrix (F, 2L), fraction of flow f on directed link d
    hops : (F,) int, switch traversals (0 within a scale-up domain)
    latency_s : (F,) path latency, optics + switches (the mean over paths for "spread")
    same_domain : (F,) bool, src and dst share a scale-up domain (no fabric used)
    """

    incidence: csr_matrix
    hops: np.ndarray
    latency_s: np.ndarray
    same_domain: np.ndarray


@dataclass(frozen=True, eq=False)
class _Flows:
    """Flow classification shared by both ECMP modes (indices into the flow axis)."""

    n_flows: int
    src_nic: np.ndarray  # (F,)
    dst_nic: np.ndarray  # (F,)
    same_domain: np.ndarray  # (F,) bool
    fabric: np.ndarray  # flow ids that use the fabric
    cross_leaf: np.ndarray  # flow ids whose leaves differ
    src_leaf: np.ndarray  # (len(cross_leaf),)
    dst_leaf: np.ndarray
    cross_pod: np.ndarray  # bool over cross_leaf


def route(
    fabric: CompiledFabric,
    src_gpu: np.ndarray,
    dst_gpu: np.ndarray,
    *,
    ecmp: str = "hash",
    salt: int = 0,
) -> Routes:
    """Route F flows ``src_gpu[f] -> dst_gpu[f]`` (vectorized over flows).

    Parameters
    ----------
    src_gpu, dst_gpu : (F,) int GPU indices
    ecmp : "hash" (one path per flow) or "spread" (even split over equal-cost paths)
    salt : varies the hash-ECMP choice (e.g. per collective or per trial)

    Returns
    -------
    Routes
    """
    flows = _classify(fabric, src_gpu, dst_gpu, ecmp)
    if ecmp == "hash":
        incidence = _hash_incidence(fabric, flows, _hash_walk(fabric, flows, src_gpu, dst_gpu, salt))
    else:
        incidence = _spread_incidence(fabric, flows)
    hops = np.zeros(flows.n_flows, np.int64)
    hops[flows.fabric] = HOPS_SAME_LEAF
    hops[flows.cross_leaf] = np.where(flows.cross_pod, HOPS_CROSS_POD, HOPS_SAME_POD)
    return Routes(incidence, hops, incidence @ fabric.directed_latency_s, flows.same_domain)


def link_load_gbps(
    fabric: CompiledFabric,
    src_gpu: np.ndarray,
    dst_gpu: np.ndarray,
    rate_gbps: np.ndarray | float,
    *,
    ecmp: str = "hash",
    salt: int = 0,
) -> np.ndarray:
    """Offered load on every directed link, (2L,) Gb/s, for flows of ``rate_gbps`` each.

    Equals ``route(...).incidence.T @ rate_gbps`` but for "spread" aggregates per leaf and per
    pod instead of materialising the incidence (O(F + L) time and memory).
    """
    flows = _classify(fabric, src_gpu, dst_gpu, ecmp)
    rate = np.broadcast_to(np.asarray(rate_gbps, dtype=float), (flows.n_flows,))
    if ecmp == "hash":
        incidence = _hash_incidence(fabric, flows, _hash_walk(fabric, flows, src_gpu, dst_gpu, salt))
        return np.asarray(incidence.T @ rate).ravel()
    return _spread_load(fabric, flows, rate)


@dataclass(frozen=True, eq=False)
class SegmentLoads:
    """Flows per directed link of each segment of a flow list, and each flow's path latency.

    loads : list of (2L,) float arrays, one per segment (flow counts; fractional for "spread")
    latency_s : (F,) hash-path latency of every flow (0 within a scale-up domain)
    """

    loads: list[np.ndarray]
    latency_s: np.ndarray


def segment_loads(
    fabric: CompiledFabric,
    src_gpu: np.ndarray,
    dst_gpu: np.ndarray,
    bounds: np.ndarray,
    *,
    ecmp: str = "hash",
    salt: int = 0,
) -> SegmentLoads:
    """Link loads of several flow patterns routed together, without an incidence matrix.

    Segment ``s`` is flows ``bounds[s]:bounds[s+1]``; its load equals the column sums of
    ``route(...).incidence`` over its rows ("hash") or ``link_load_gbps(..., 1.0)`` of its flows
    ("spread"), and ``latency_s`` equals ``route(..., ecmp="hash").latency_s``, bit for bit.
    Building the CSR incidence dominated routing a large job's patterns; counting the hashed
    hops directly skips it, and one classification serves every segment.
    """
    flows = _classify(fabric, src_gpu, dst_gpu, ecmp)
    walk = _hash_walk(fabric, flows, src_gpu, dst_gpu, salt)
    latency = _walk_latency(fabric, flows, walk)
    n_directed = 2 * fabric.n_links
    cross_pod_at = np.flatnonzero(flows.cross_pod)
    pod = fabric.switch_pod
    pods = (pod[flows.src_leaf[flows.cross_pod]], pod[flows.dst_leaf[flows.cross_pod]])
    up, pod_up = 2 * fabric.up_link, 2 * fabric.pod_up_link
    spread_to = (up, up + 1, pod_up, pod_up + 1)  # directed uplink ids, up then down
    loads = []
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        view = _segment(flows, cross_pod_at, lo, hi)
        if ecmp == "hash":
            ids = np.concatenate([hop[part] for hop, part in zip(walk, view.parts, strict=True)])
            loads.append(np.bincount(ids, minlength=n_directed).astype(float))
        else:
            loads.append(_unit_spread_load(fabric, walk, view, pods, spread_to))
    return SegmentLoads(loads, latency)


def _unit_spread_load(
    fabric: CompiledFabric,
    walk: tuple[np.ndarray, ...],
    view: _Segment,
    pods: tuple[np.ndarray, ...],
    spread_to: tuple[np.ndarray, ...],
) -> np.ndarray:
    """``_spread_load`` of one segment at rate 1, reusing the walk's NIC hops and leaf pods.

    The terms are added in ``_spread_load``'s order, but as one NIC count (up and down hit
    even and odd ids apart) and scatters onto each term's own links (``up_link`` and
    ``pod_up_link`` hold every link once), not as full-length bincounts: the same bits.
    """
    fab, in_pod = view.parts[0], view.parts[4]
    nic = np.concatenate([walk[0][fab], walk[1][fab]])
    load = np.bincount(nic, np.ones(nic.size), minlength=2 * fabric.n_links).astype(float, copy=False)
    for leaves, target in ((view.flows.src_leaf, spread_to[0]), (view.flows.dst_leaf, spread_to[1])):
        volume = np.bincount(leaves, minlength=fabric.n_switches)
        load[target] += _spread_over(fabric.up_ptr, volume)
    for pod_of, target in ((pods[0][in_pod], spread_to[2]), (pods[1][in_pod], spread_to[3])):
        volume = np.bincount(pod_of, minlength=fabric.n_pods)
        load[target] += _spread_over(fabric.pod_up_ptr, volume)
    return load


def _spread_load(fabric: CompiledFabric, flows: _Flows, rate: np.ndarray) -> np.ndarray:
    """Per-hop even ECMP split aggregated per leaf and per pod: O(F + L), no incidence."""
    n_directed = 2 * fabric.n_links
    on_fabric = rate[flows.fabric]
    load = np.zeros(n_directed)
    load += np.bincount(2 * fabric.nic_link[flows.src_nic[flows.fabric]], on_fabric, n_directed)
    load += np.bincount(2 * fabric.nic_link[flows.dst_nic[flows.fabric]] + 1, on_fabric, n_directed)
    leaf_rate = rate[flows.cross_leaf]
    n_sw = fabric.n_switches
    per_uplink = _spread_over(fabric.up_ptr, np.bincount(flows.src_leaf, leaf_rate, n_sw))
    load += np.bincount(2 * fabric.up_link, per_uplink, n_directed)
    per_uplink = _spread_over(fabric.up_ptr, np.bincount(flows.dst_leaf, leaf_rate, n_sw))
    load += np.bincount(2 * fabric.up_link + 1, per_uplink, n_directed)
    pod_rate = leaf_rate[flows.cross_pod]
    pod = fabric.switch_pod
    for leaf, direction in ((flows.src_leaf, 0), (flows.dst_leaf, 1)):
        pod_volume = np.bincount(pod[leaf[flows.cross_pod]], pod_rate, fabric.n_pods)
        per_link = _spread_over(fabric.pod_up_ptr, pod_volume)
        load += np.bincount(2 * fabric.pod_up_link + direction, per_link, n_directed)
    return load


def _spread_over(ptr: np.ndarray, volume: np.ndarray) -> np.ndarray:
    """Split ``volume[i]`` evenly over the CSR segment ``ptr[i]:ptr[i+1]``, per segment entry."""
    counts = np.diff(ptr)
    volume = volume.astype(float)
    share = np.divide(volume, counts, out=np.zeros_like(volume), where=counts > 0)
    return np.repeat(share, counts)


# ---- classification and hashing --------------------------------------------------------------
def _classify(fabric: CompiledFabric, src_gpu: np.ndarray, dst_gpu: np.ndarray, ecmp: str) -> _Flows:
    if ecmp not in ECMP_MODES:
        raise FabricError(f"ecmp: must be one of {', '.join(ECMP_MODES)} (got {ecmp!r})")
    src = np.asarray(src_gpu)
    dst = np.asarray(dst_gpu)
    if src.ndim != 1 or src.shape != dst.shape:
        raise FabricError(
            f"src_gpu, dst_gpu: must be 1-D arrays of one length (got {src.shape}, {dst.shape})"
        )
    if src.size and not (np.issubdtype(src.dtype, np.integer) and np.issubdtype(dst.dtype, np.integer)):
        raise FabricError("src_gpu, dst_gpu: must be integer GPU indices")
    for name, values in (("src_gpu", src), ("dst_gpu", dst)):
        if values.size and (values.min() < 0 or values.max() >= fabric.n_gpus):
            raise FabricError(f"{name}: GPU indices must lie in 0..{fabric.n_gpus - 1}")
    same_domain = fabric.gpu_domain[src] == fabric.gpu_domain[dst]
    src_nic, dst_nic = fabric.gpu_nic[src], fabric.gpu_nic[dst]
    gpu_leaf = fabric.nic_leaf[fabric.gpu_nic]  # one lookup per GPU, not two per flow
    fabric_flows = np.flatnonzero(~same_domain)
    src_fabric, dst_fabric = src[fabric_flows], dst[fabric_flows]
    differ = gpu_leaf[src_fabric] != gpu_leaf[dst_fabric]
    cross_leaf = fabric_flows[differ]
    src_leaf, dst_leaf = gpu_leaf[src_fabric[differ]], gpu_leaf[dst_fabric[differ]]
    cross_pod = fabric.switch_pod[src_leaf] != fabric.switch_pod[dst_leaf]
    return _Flows(
        src.size, src_nic, dst_nic, same_domain, fabric_flows, cross_leaf, src_leaf, dst_leaf, cross_pod
    )


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (Steele, Lea & Flood 2014), on uint64 arrays (wrapping)."""
    x = x ^ (x >> np.uint64(30))  # a new array: the caller's input is left alone
    x *= _MIX1
    x ^= x >> np.uint64(27)
    x *= _MIX2
    x ^= x >> np.uint64(31)
    return x


def _flow_hash(src_gpu: np.ndarray, dst_gpu: np.ndarray, salt: int) -> np.ndarray:
    src = np.asarray(src_gpu).astype(np.uint64)
    dst = np.asarray(dst_gpu).astype(np.uint64)
    salted = np.full(src.shape, int(salt) & _MASK64, dtype=np.uint64)
    return _mix(src * _GOLDEN + dst * _DST + _mix(salted))


def _choice(hash_: np.ndarray, hop: int, counts: np.ndarray) -> np.ndarray:
    """Deterministic choice in 0..counts-1 for one hop of each flow."""
    rehashed = _mix(hash_ + np.uint64((hop * int(_GOLDEN)) & _MASK64))
    return (rehashed % counts.astype(np.uint64)).astype(np.int64)


def _pick_uplink(fabric: CompiledFabric, switch: np.ndarray, hash_: np.ndarray, hop: int):
    """(link id, upper switch) of one hashed uplink of each ``switch``."""
    start = fabric.up_ptr[switch]
    counts = fabric.up_ptr[switch + 1] - start
    if np.any(counts == 0):
        raise FabricError(
            f"link_a: switch {int(switch[counts == 0][0])} has no uplink for a flow that needs one"
        )
    index = start + _choice(hash_, hop, counts)
    return fabric.up_link[index], fabric.up_upper[index]


def _pick_down(
    start: np.ndarray, count: np.ndarray, query: np.ndarray, hash_: np.ndarray, hop: int
) -> np.ndarray:
    """Index of one hashed link among the parallel links of each dense-table cell ``query``."""
    counts = count[query]
    if np.any(counts == 0):
        raise FabricError("link_b: a flow needs a down link that the fabric does not have")
    return start[query] + _choice(hash_, hop, counts)


# ---- incidence matrices ----------------------------------------------------------------------
def _csr(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n_flows: int, n_directed: int
) -> csr_matrix:
    return csr_matrix((data, indices, indptr), shape=(n_flows, n_directed), copy=False)


def _index_dtype(n_entries: int, n_directed: int) -> type:
    return np.int32 if max(n_entries, n_directed) < np.iinfo(np.int32).max else np.int64


def _hash_walk(
    fabric: CompiledFabric, flows: _Flows, src_gpu: np.ndarray, dst_gpu: np.ndarray, salt: int
) -> tuple[np.ndarray, ...]:
    """Directed link ids of each hop of the hashed paths, in walk order.

    (NIC up, NIC down) per fabric flow, (leaf up, spine down) per cross-leaf flow and
    (spine up, core down) per cross-pod flow. Only cross-leaf flows choose among links, so only
    they are hashed (the hash is element-wise: the same values as hashing every flow).
    """
    rows, cross = flows.cross_leaf, flows.cross_pod
    hashes = _flow_hash(np.asarray(src_gpu)[rows], np.asarray(dst_gpu)[rows], salt)
    on_fabric = flows.fabric
    nic_up = 2 * fabric.nic_link[flows.src_nic[on_fabric]]
    nic_down = 2 * fabric.nic_link[flows.dst_nic[on_fabric]] + 1
    leaf_up, spine = _pick_uplink(fabric, flows.src_leaf, hashes, 1)
    width = np.int64(fabric.pod_width)
    dst_rank = fabric.leaf_rank[flows.dst_leaf]
    spine_down = np.empty(rows.size, np.int64)
    same = ~cross
    cell = spine[same] * width + dst_rank[same]
    down = _pick_down(fabric.leaf_down_start, fabric.leaf_down_count, cell, hashes[same], 2)
    spine_down[same] = 2 * fabric.leaf_down_link[down] + 1
    spine_up, core = _pick_uplink(fabric, spine[cross], hashes[cross], 2)
    cell = core * np.int64(fabric.n_pods) + fabric.switch_pod[flows.dst_leaf[cross]]
    core_down = _pick_down(fabric.core_down_start, fabric.core_down_count, cell, hashes[cross], 3)
    cell = fabric.core_down_spine[core_down] * width + dst_rank[cross]
    down = _pick_down(fabric.leaf_down_start, fabric.leaf_down_count, cell, hashes[cross], 4)
    spine_down[cross] = 2 * fabric.leaf_down_link[down] + 1
    return nic_up, nic_down, 2 * leaf_up, spine_down, 2 * spine_up, 2 * fabric.core_down_link[core_down] + 1


def _walk_latency(fabric: CompiledFabric, flows: _Flows, walk: tuple[np.ndarray, ...]) -> np.ndarray:
    """Per-flow path latency summed hop by hop in walk order, as the CSR product sums a row.

    Summed on the compact per-subset arrays, scattered into the flow axis once at the end.
    """
    nic_up, nic_down, leaf_up, spine_down, spine_up, core_down = walk
    hop_s = fabric.directed_latency_s
    leaf_at = np.searchsorted(flows.fabric, flows.cross_leaf)  # cross-leaf flows among fabric flows
    on_fabric = hop_s[nic_up]
    leaf = on_fabric[leaf_at] + hop_s[leaf_up]
    leaf[flows.cross_pod] = leaf[flows.cross_pod] + hop_s[spine_up] + hop_s[core_down]
    leaf += hop_s[spine_down]
    on_fabric[leaf_at] = leaf
    on_fabric += hop_s[nic_down]
    latency = np.zeros(flows.n_flows)
    latency[flows.fabric] = on_fabric
    return latency


@dataclass(frozen=True, eq=False)
class _Segment:
    """The flows ``lo:hi`` of a classification, and the matching slice of every walk array."""

    flows: _Flows
    parts: tuple[slice, ...]


def _segment(flows: _Flows, cross_pod_at: np.ndarray, lo: int, hi: int) -> _Segment:
    """Restrict a classification to flows ``lo:hi`` (its id arrays are sorted: two bisections)."""
    a, b = np.searchsorted(flows.fabric, (lo, hi)).tolist()
    c, d = np.searchsorted(flows.cross_leaf, (lo, hi)).tolist()
    e, f = np.searchsorted(cross_pod_at, (c, d)).tolist()
    view = _Flows(
        flows.n_flows,
        flows.src_nic,
        flows.dst_nic,
        flows.same_domain,
        flows.fabric[a:b],
        flows.cross_leaf[c:d],
        flows.src_leaf[c:d],
        flows.dst_leaf[c:d],
        flows.cross_pod[c:d],
    )
    fab, leaf, pod = slice(a, b), slice(c, d), slice(e, f)
    return _Segment(view, (fab, fab, leaf, leaf, pod, pod))


def _hash_incidence(fabric: CompiledFabric, flows: _Flows, walk: tuple[np.ndarray, ...]) -> csr_matrix:
    """Rows in walk order: NIC up, leaf up, spine up, core down, spine down, NIC down.

    Built straight into CSR arrays (no COO sort): a flow has 0, 2, 4 or 6 entries.
    """
    nic_up, nic_down, leaf_up, spine_down, spine_up, core_down = walk
    rows, cross = flows.cross_leaf, flows.cross_pod
    lengths = np.zeros(flows.n_flows, np.int64)
    lengths[flows.fabric] = 2
    lengths[rows] += np.where(cross, 4, 2)
    indptr = np.zeros(flows.n_flows + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    n_directed = 2 * fabric.n_links
    dtype = _index_dtype(int(indptr[-1]), n_directed)
    indices = np.empty(int(indptr[-1]), dtype)
    indices[indptr[flows.fabric]] = nic_up
    indices[indptr[flows.fabric + 1] - 1] = nic_down
    first, last = indptr[rows], indptr[rows + 1]
    indices[first + 1] = leaf_up
    indices[last - 2] = spine_down
    indices[first[cross] + 2] = spine_up
    indices[first[cross] + 3] = core_down
    data = np.ones(indices.size)
    return _csr(indptr.astype(dtype), indices, data, flows.n_flows, n_directed)


def _spread_incidence(fabric: CompiledFabric, flows: _Flows) -> csr_matrix:
    """Per-hop even ECMP split: NIC links 1, leaf uplinks 1/u, pod spine-core links 1/P.

    Row layout: NIC up, source leaf uplinks, source pod spine-core (up), destination pod
    spine-core (down), destination leaf uplinks (down), NIC down; built straight into CSR.
    """
    leaf_count = np.diff(fabric.up_ptr)
    pod_count = np.diff(fabric.pod_up_ptr)
    pod = fabric.switch_pod
    rows, cross = flows.cross_leaf, flows.cross_pod
    lengths = np.zeros((flows.n_flows, 6), np.int64)
    lengths[flows.fabric, 0] = 1
    lengths[flows.fabric, 5] = 1
    lengths[rows, 1] = leaf_count[flows.src_leaf]
    lengths[rows, 4] = leaf_count[flows.dst_leaf]
    lengths[rows[cross], 2] = pod_count[pod[flows.src_leaf[cross]]]
    lengths[rows[cross], 3] = pod_count[pod[flows.dst_leaf[cross]]]
    indptr = np.zeros(flows.n_flows + 1, np.int64)
    np.cumsum(lengths.sum(axis=1), out=indptr[1:])
    segment_start = indptr[:-1, None] + np.cumsum(lengths, axis=1) - lengths
    n_directed = 2 * fabric.n_links
    dtype = _index_dtype(int(indptr[-1]), n_directed)
    indices = np.empty(int(indptr[-1]), dtype)
    data = np.empty(int(indptr[-1]))
    on_fabric = flows.fabric
    indices[segment_start[on_fabric, 0]] = 2 * fabric.nic_link[flows.src_nic[on_fabric]]
    indices[segment_start[on_fabric, 5]] = 2 * fabric.nic_link[flows.dst_nic[on_fabric]] + 1
    data[segment_start[on_fabric, 0]] = 1.0
    data[segment_start[on_fabric, 5]] = 1.0
    out = (indices, data)
    _fill(out, segment_start[rows, 1], fabric.up_ptr, fabric.up_link, flows.src_leaf, 0)
    _fill(out, segment_start[rows, 4], fabric.up_ptr, fabric.up_link, flows.dst_leaf, 1)
    cross_rows = rows[cross]
    _fill(
        out,
        segment_start[cross_rows, 2],
        fabric.pod_up_ptr,
        fabric.pod_up_link,
        pod[flows.src_leaf[cross]],
        0,
    )
    _fill(
        out,
        segment_start[cross_rows, 3],
        fabric.pod_up_ptr,
        fabric.pod_up_link,
        pod[flows.dst_leaf[cross]],
        1,
    )
    return _csr(indptr.astype(dtype), indices, data, flows.n_flows, n_directed)


def _fill(
    out: tuple[np.ndarray, np.ndarray],
    destination: np.ndarray,
    ptr: np.ndarray,
    links: np.ndarray,
    owner: np.ndarray,
    direction: int,
) -> None:
    """Write the CSR segment ``links[ptr[owner]:ptr[owner+1]]`` of each flow at ``destination``.

    Entries are directed ids ``2*link + direction`` with the even share 1/segment length. One
    broadcast per distinct segment length (a regular fabric has one), not a loop over flows.
    """
    indices, data = out
    start = ptr[owner]
    counts = ptr[owner + 1] - start
    for count in np.unique(counts[counts > 0]).tolist():
        chosen = counts == count
        step = np.arange(count)
        target = destination[chosen, None] + step
        indices[target] = 2 * links[start[chosen, None] + step] + direction
        data[target] = 1.0 / count
