"""NCCL-like collective costs (alpha-beta with bandwidths routed on the real fabric).

:class:`GroupCost` holds, per communication kind, the worst group's shape and effective
bandwidths, which ``scenarios.sim.step.traffic`` derives by routing every concurrent flow on the
fabric (traffic inside one scale-up domain, NVLink / NVSwitch, runs at the GPUs' scale-up
bandwidth). This module turns them into times.

Algorithms follow NCCL (``src/graph/tuning.cc``, NCCL 2.1x, https://github.com/NVIDIA/nccl):

* ring: NCCL runs one ring per channel; with ``nl`` ranks of a group per scale-up domain and
  one channel per local GPU (rail), every channel's ring crosses each domain boundary once, so
  the bus bandwidth is ``min(scale-up bw, nl * per-flow fabric bw)`` and an all-reduce of ``S``
  bytes takes ``2(n-1)/n * S / busbw`` plus ``2(n-1)`` step latencies, ``2(k-1)`` of which are
  network steps (``k`` domains) -- NCCL's ``latencies[]`` formula.
* tree (all-reduce only): NCCL's double binary tree between domains, chain inside; bandwidth
  ``0.9 * busbw`` for an algorithm bandwidth of half of it (time ``2 S / (0.9 busbw)``),
  latency ``2 ((nl-1) intra + log2(k) inter)``.
* protocols: NCCL's Simple, LL and LL128 rows (latency vs bandwidth factor); ``auto`` takes
  the fastest algorithm/protocol per message size, as NCCL's tuner does.
* reduce-scatter / all-gather: ring, half the all-reduce volume and steps.
* all-to-all: every rank sends ``S/n`` to each peer at once; intra-domain peers over
  scale-up, the others over the fabric (all pairs routed, see ``traffic._A2A_MAX_FLOWS``).
* p2p: one message to the next group member while every rank sends at once (pipeline
  neighbours forward and backward for "pp", ring neighbours otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scenarios.sim.step.layout import KIND_NAMES

__all__ = [
    "KIND_NAMES",
    "OPS",
    "CostArrays",
    "GroupCost",
    "collective_time_s",
    "stack_costs",
]

OPS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p")


#: Achieved fraction of the scale-up (NVLink) bandwidth per direction: nccl-tests all-reduce
#: bus bandwidth ~230 GB/s on 8 A100 SXM with 300 GB/s NVLink3 per direction (NVIDIA DGX A100
#: nccl-tests figures as quoted in the project brief); NCCL's tuner caps sm80 bus bandwidth at
#: 235 GB/s (src/graph/tuning.cc, ``if (compCap80) busBw = std::min(busBw, 235.0f)``).
#: Assumed to carry to other NVLink generations.
SCALEUP_BUS_EFFICIENCY = 230.0 / 300.0

#: Achieved fraction of scale-out (InfiniBand / RoCE) line rate. Assumed 0.92: NCCL's tuner
#: models its LL128 ring at 0.92 (~120/128 payload) of the link speed (src/graph/tuning.cc);
#: the same payload/protocol overhead is assumed for the Simple protocol used by large messages.
SCALEOUT_BUS_EFFICIENCY = 0.92

#: NCCL's cost table (src/graph/tuning.cc, NCCL 2.1x: ``baseLat``, ``hwLat`` for NVLink and NET,
#: and the bus-bandwidth refinements of ``ncclTopoTuneModel``), one row per algorithm/protocol:
#: (algorithm, protocol, base latency s, scale-up step latency s, network step latency s,
#: multi-domain bus-bandwidth factor, single-domain bus-bandwidth factor). NCCL's tuner picks
#: the fastest row per message size; so does ``algorithm="auto"`` here.
NCCL_VARIANTS = (
    ("ring", "simple", 8.4e-6, 3.4e-6, 9.6e-6, 1.0, 1.0),
    ("ring", "ll", 6.6e-6, 0.47e-6, 2.7e-6, 1.0 / 4.0, 1.0 / 3.0),
    ("ring", "ll128", 14.0e-6, 1.9e-6, 4.0e-6, 0.92, 0.92),
    ("tree", "simple", 0.0, 28e-6, 50e-6, 0.9, 0.9),
    ("tree", "ll", 6.8e-6, 0.52e-6, 5.0e-6, 0.9 / 3.8, 0.9 / 3.8),
    ("tree", "ll128", 14.0e-6, 1.2e-6, 8.5e-6, 0.9 * 0.915, 0.9 * 7.0 / 9.0),
)
#: The ring/Simple row's latencies, used for the p2p and all-to-all step and the summary.
RING_BASE_LATENCY_S = 8.4e-6
RING_SCALEUP_STEP_LATENCY_S = 3.4e-6
RING_NETWORK_STEP_LATENCY_S = 9.6e-6
#: NCCL multiplies LL's NVLink step latency by 1.8 when the communicator spans nodes.
LL_MULTI_NODE_SCALEUP_LATENCY_FACTOR = 1.8


@dataclass(frozen=True)
class GroupCost:
    """Cost parameters of the worst group of one communication kind.

    Bandwidths are effective (after the NCCL efficiency fractions), in GB/s per rank and
    direction; ``inf`` where a pattern never leaves the scale-up domain.

    Attributes
    ----------
    kind : str
    size : int
        Members per group ``n`` (1 = no communication).
    n_groups : int
    local_size : int
        Members per scale-up domain ``nl`` (smallest over groups; 1 for a non-uniform placement,
        which is then costed as a flat ring).
    n_domains : int
        Scale-up domains spanned by a group ``k`` (largest over groups).
    scaleup_gbytes_per_s : float
        Effective scale-up bandwidth of the slowest member GPU.
    ring_flow_gbytes_per_s : float
        Effective fabric bandwidth of the worst ring flow (one per rank and channel).
    p2p_gbytes_per_s : float
        Effective bandwidth of the worst neighbour send.
    a2a_flow_gbytes_per_s : float
        Effective fabric bandwidth of the worst all-to-all pair flow.
    tree_flow_gbytes_per_s : float
        Effective fabric bandwidth per NIC of NCCL's double binary tree between domains: the
        worst tree flow's share times the most tree flows one GPU sends or receives (equals the
        NIC rate when the fabric is not the bottleneck).
    path_latency_s : float
        Worst routed fabric path latency (cables + switches), added to each network step.
    ring_load, p2p_load, a2a_load : ndarray, shape (2L,)
        Flows per directed link for the ring, neighbour-send and all-to-all patterns (sums of
        routing fractions; the all-to-all load is scaled to all n-1 shifts).
    """

    kind: str
    size: int
    n_groups: int
    local_size: int
    n_domains: int
    scaleup_gbytes_per_s: float
    ring_flow_gbytes_per_s: float
    p2p_gbytes_per_s: float
    a2a_flow_gbytes_per_s: float
    tree_flow_gbytes_per_s: float
    path_latency_s: float
    ring_load: np.ndarray = field(repr=False)
    p2p_load: np.ndarray = field(repr=False)
    a2a_load: np.ndarray = field(repr=False)

    @property
    def busbw_gbytes_per_s(self) -> float:
        """Ring bus bandwidth (GB/s): ``min(scale-up, nl * fabric flow)``; inf if n == 1."""
        return float(_busbw_gbytes_per_s(self))

    @property
    def alpha_s(self) -> float:
        """Latency of the fastest zero-byte all-reduce on the worst group (s); 0 if n == 1."""
        if self.size <= 1:
            return 0.0
        return float(_all_reduce_s(self, np.array([0.0]), "auto")[0])

    def directed_bytes(self, op: str, bytes_per_rank: float) -> np.ndarray:
        """Bytes each directed link carries for one ``op`` of ``bytes_per_rank`` on all groups.

        Returns
        -------
        ndarray, shape (2L,)
        """
        _check_op(op)
        n, nl = self.size, self.local_size
        if n <= 1 or bytes_per_rank == 0:
            return np.zeros_like(self.ring_load)
        if op == "all_reduce":
            return self.ring_load * (2.0 * (n - 1) / n * bytes_per_rank / nl)
        if op in ("reduce_scatter", "all_gather"):
            return self.ring_load * ((n - 1) / n * bytes_per_rank / nl)
        if op == "all_to_all":
            return self.a2a_load * (bytes_per_rank / n)
        return self.p2p_load * bytes_per_rank


@dataclass(frozen=True)
class CostArrays:
    """The scalar fields of :class:`GroupCost` as arrays, one entry per candidate layout.

    Lets the time formulas run for many layouts at once (the layout search); built by
    :func:`stack_costs`. Attribute names and units as in :class:`GroupCost`.
    """

    size: np.ndarray
    local_size: np.ndarray
    n_domains: np.ndarray
    scaleup_gbytes_per_s: np.ndarray
    ring_flow_gbytes_per_s: np.ndarray
    p2p_gbytes_per_s: np.ndarray
    a2a_flow_gbytes_per_s: np.ndarray
    tree_flow_gbytes_per_s: np.ndarray
    path_latency_s: np.ndarray


_SCALAR_FIELDS = tuple(CostArrays.__dataclass_fields__)


def stack_costs(costs: list[GroupCost], index: np.ndarray) -> CostArrays:
    """Gather ``costs[index[c]]`` field by field into a :class:`CostArrays` of ``index``'s shape."""
    index = np.asarray(index, dtype=np.int64)
    columns = {
        name: np.array([float(getattr(cost, name)) for cost in costs])[index] for name in _SCALAR_FIELDS
    }
    return CostArrays(**columns)


def collective_time_s(
    cost: GroupCost | CostArrays,
    op: str,
    bytes_per_rank: np.ndarray,
    *,
    algorithm: str = "auto",
    protocol: str = "auto",
) -> np.ndarray:
    """Time of ``op`` on every group of a kind at once (s), vectorized over sizes.

    Parameters
    ----------
    cost : GroupCost or CostArrays
        One kind's costs, or per-candidate costs broadcasting against ``bytes_per_rank``.
    op : str
        One of :data:`OPS`.
    bytes_per_rank : ndarray, shape (M,)
        Per-rank buffer size ``S`` (bytes, nccl-tests convention), >= 0.
    algorithm : {"auto", "ring", "tree"}
        All-reduce algorithm (ring/tree restrict NCCL's choice to that algorithm, any
        protocol); reduce-scatter and all-gather are always rings.
    protocol : {"auto", "simple", "ll", "ll128"}
        NCCL protocol of the collective ops (auto: the fastest per size).

    Returns
    -------
    ndarray, shape (M,) (broadcast with the cost arrays)
        0 where the group has one member or the size is 0.
    """
    _check_op(op)
    if algorithm not in ("auto", "ring", "tree"):
        raise ValueError(f"algorithm: must be auto, ring or tree (got {algorithm!r})")
    if protocol not in ("auto", "simple", "ll", "ll128"):
        raise ValueError(f"protocol: must be auto, simple, ll or ll128 (got {protocol!r})")
    size = np.asarray(bytes_per_rank, dtype=float)
    if np.any(size < 0) or not np.all(np.isfinite(size)):
        raise ValueError("bytes: must be finite and >= 0")
    with np.errstate(divide="ignore", invalid="ignore"):
        if op == "all_reduce":
            time = _all_reduce_s(cost, size, algorithm, protocol)
        elif op in ("reduce_scatter", "all_gather"):
            time = _nccl_time_s(cost, size, passes=1, algorithms=("ring",), protocol=protocol)
        elif op == "all_to_all":
            time = _all_to_all_s(cost, size)
        else:
            time = _hop_latency_s(cost) + size / (np.asarray(cost.p2p_gbytes_per_s) * 1e9)
    return np.where((size > 0) & (np.asarray(cost.size) > 1), time, 0.0)


def _check_op(op: str) -> None:
    if op not in OPS:
        raise ValueError(f"op: must be one of {', '.join(OPS)} (got {op!r})")


def _busbw_gbytes_per_s(cost) -> np.ndarray:
    busbw = np.minimum(cost.scaleup_gbytes_per_s, np.multiply(cost.local_size, cost.ring_flow_gbytes_per_s))
    return np.where(np.asarray(cost.size) > 1, busbw, np.inf)


def _tree_busbw_gbytes_per_s(cost) -> np.ndarray:
    busbw = np.minimum(cost.scaleup_gbytes_per_s, np.multiply(cost.local_size, cost.tree_flow_gbytes_per_s))
    return np.where(np.asarray(cost.size) > 1, busbw, np.inf)


def _hop_latency_s(cost) -> np.ndarray:
    network = RING_NETWORK_STEP_LATENCY_S + np.asarray(cost.path_latency_s)
    return RING_BASE_LATENCY_S + np.where(
        np.asarray(cost.n_domains) > 1, network, RING_SCALEUP_STEP_LATENCY_S
    )


def _all_reduce_s(cost, size: np.ndarray, algorithm: str, protocol: str = "auto") -> np.ndarray:
    algorithms = ("ring", "tree") if algorithm == "auto" else (algorithm,)
    return _nccl_time_s(cost, size, passes=2, algorithms=algorithms, protocol=protocol)


def _nccl_time_s(
    cost,
    size: np.ndarray,
    *,
    passes: int,
    algorithms: tuple[str, ...],
    protocol: str = "auto",
) -> np.ndarray:
    """Fastest NCCL algorithm/protocol row: latency + bus volume / (factor * busbw).

    ``passes`` is 2 for all-reduce (reduce-scatter + all-gather), 1 for either half.
    Works element-wise on array-valued costs (the loop is over NCCL's six table rows).
    """
    n = np.asarray(cost.size, dtype=float)
    nl = np.asarray(cost.local_size, dtype=float)
    k = np.asarray(cost.n_domains, dtype=float)
    multi = k > 1
    busbw = _busbw_gbytes_per_s(cost) * 1e9
    tree_busbw = _tree_busbw_gbytes_per_s(cost) * 1e9
    steps, network_steps = passes * (n - 1), passes * (k - 1)
    log2_domains = np.floor(np.log2(np.maximum(k, 1.0)))  # NCCL's integer log2i
    path = np.asarray(cost.path_latency_s, dtype=float)
    best = np.full(np.broadcast(size, n).shape, np.inf)
    for algo, proto, base, intra, inter, multi_factor, single_factor in NCCL_VARIANTS:
        if algo not in algorithms or protocol not in ("auto", proto):
            continue
        if proto == "ll":
            intra = intra * np.where(multi, LL_MULTI_NODE_SCALEUP_LATENCY_FACTOR, 1.0)
        inter = inter + path
        bw = (busbw if algo == "ring" else tree_busbw) * np.where(multi, multi_factor, single_factor)
        if algo == "ring":
            latency = base + (steps - network_steps) * intra + network_steps * inter
            time = latency + passes * (n - 1) / np.maximum(n, 1.0) * size / bw
        else:
            latency = base + 2.0 * ((nl - 1) * intra + log2_domains * inter)
            time = latency + 2.0 * size / bw
        best = np.minimum(best, time)
    return best


def _all_to_all_s(cost, size: np.ndarray) -> np.ndarray:
    n = np.asarray(cost.size, dtype=float)
    nl = np.asarray(cost.local_size, dtype=float)
    intra = (nl - 1) / n * size / (np.asarray(cost.scaleup_gbytes_per_s) * 1e9)
    inter = np.where(n > nl, size / n / (np.asarray(cost.a2a_flow_gbytes_per_s) * 1e9), 0.0)
    return _hop_latency_s(cost) + np.maximum(intra, inter)
