"""Communication model of a training job on a compiled fabric (the API the step-time model calls).

``comm_model(fabric, layout)`` routes, once, every flow of every concurrent group of each
parallelism kind ("tp", "cp", "ep", "pp", "dp", plus "dp_cp" and "edp" when cp > 1 / ep > 1)
over the real fabric and condenses the result into a :class:`CommModel`: per kind the latency
(alpha) and the effective bandwidth of the worst group, and the per-directed-link load of each
traffic pattern so that per-link utilization can be derived from the bytes a step moves.

Conventions (same as nccl-tests, https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):
``bytes`` given to :meth:`CommModel.time_s` is the per-rank buffer size ``S``: the all-reduce
buffer, the all-gather *output*, the reduce-scatter *input*, the all-to-all send buffer (all
peers together), and the message of one point-to-point send.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from scenarios.sim.step.collectives import (
    KIND_NAMES,
    OPS,
    CostArrays,
    GroupCost,
    collective_time_s,
    stack_costs,
)
from scenarios.sim.step.layout import Layout
from scenarios.sim.step.traffic import A2A_KINDS, costs_for_groups, group_costs
from topology.fabric.plan import LINK_TIERS

__all__ = [
    "KIND_NAMES",
    "OPS",
    "CommModel",
    "CommTable",
    "comm_model",
    "comm_table",
    "fabric_with_capacity_scale",
    "fabric_with_tier_capacity_scale",
    "megatron_bucket_bytes",
    "megatron_group_shape",
    "rack_link_utilization",
]


@dataclass(frozen=True)
class CommModel:
    """Costs of the collectives of one job on one fabric.

    Attributes
    ----------
    costs : dict[str, GroupCost]
        Per kind ("tp", "cp", "ep", "pp", "dp", "dp_cp", "edp"): the cost parameters of the worst
        group of that kind (group size, scale-up / scale-out bandwidths, latencies, per-link
        loads). Kinds whose groups have one member are present with ``size == 1`` (zero cost).
    n_links : int
        Number of (undirected) fabric links ``L``.
    directed_capacity_gbps : ndarray, shape (2L,)
        Capacity of each directed link (Gb/s), copied from the fabric.
    """

    costs: dict[str, GroupCost]
    n_links: int
    directed_capacity_gbps: np.ndarray = field(repr=False)

    @property
    def alpha_s(self) -> dict[str, float]:
        """Per kind: latency of one ring step of the worst group (s)."""
        return {kind: cost.alpha_s for kind, cost in self.costs.items()}

    @property
    def bw_gbytes_per_s(self) -> dict[str, float]:
        """Per kind: effective per-rank (bus) bandwidth of the worst group (GB/s).

        This is the nccl-tests "busbw" the ring all-reduce of the kind reaches for large
        messages (inf for a one-member group).
        """
        return {kind: cost.busbw_gbytes_per_s for kind, cost in self.costs.items()}

    def time_s(
        self,
        kind: str,
        op: str,
        bytes: float | np.ndarray,
        *,
        bucket_bytes: float | np.ndarray | None = None,
    ) -> np.ndarray:
        """Time of one collective of ``kind`` on every group concurrently (s).

        Parameters
        ----------
        kind : {"tp", "cp", "ep", "pp", "dp", "dp_cp", "edp"}
            Which parallel groups run the collective (all groups of the kind at once).
        op : {"all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p"}
            The operation; "p2p" is one send to the next member of the group (pipeline
            neighbour for "pp", ring neighbour otherwise) while every rank sends at once.
        bytes : float or ndarray, shape (M,)
            Per-rank buffer size ``S`` in bytes (see module docstring). Vectorized.
        bucket_bytes : float or ndarray, optional
            Split ``S`` into back-to-back collectives of this size (the last one partial), as
            data-parallel gradient buckets are (:func:`megatron_bucket_bytes`). Many small
            collectives pay the latency many times and can pick a different NCCL algorithm
            (the tree, whose links cross more of the fabric, for mid sizes at scale).

        Returns
        -------
        ndarray, same shape as ``bytes``
            Completion time of the slowest group (s); 0 where the group has one member or
            ``bytes`` is 0.
        """
        cost = self._cost(kind)
        return _bucketed_time_s(cost, op, np.asarray(bytes, dtype=float), bucket_bytes)

    def link_utilization(
        self,
        volumes_per_kind: Mapping[str, float | Mapping[str, float]],
        step_time_s: float,
    ) -> np.ndarray:
        """Average utilization of each fabric link over one step.

        Parameters
        ----------
        volumes_per_kind : mapping
            ``{kind: {op: bytes_per_step}}``: per kind and op, the sum over the step of the
            per-rank buffer sizes ``S`` passed to :meth:`time_s`. A bare number for a kind means
            all-reduce bytes.
        step_time_s : float
            Step duration (s), > 0.

        Returns
        -------
        ndarray, shape (L,)
            For each undirected link, the busier direction's bytes / (capacity * step time).
            Values above 1 mean the volume cannot fit in the step.
        """
        directed_bytes = np.zeros(2 * self.n_links)
        for kind, volume in volumes_per_kind.items():
            ops = volume if isinstance(volume, Mapping) else {"all_reduce": volume}
            cost = self._cost(kind)
            for op, op_bytes in ops.items():
                directed_bytes += cost.directed_bytes(op, float(op_bytes))
        capacity_bytes = self.directed_capacity_gbps * 1e9 / 8.0 * float(step_time_s)
        with np.errstate(divide="ignore", invalid="ignore"):
            directed_util = np.where(capacity_bytes > 0, directed_bytes / capacity_bytes, 0.0)
        return directed_util.reshape(self.n_links, 2).max(axis=1)

    def _cost(self, kind: str) -> GroupCost:
        try:
            return self.costs[kind]
        except KeyError:
            known = ", ".join(self.costs)
            raise ValueError(f"kind: unknown communication kind {kind!r} (known: {known})") from None


def comm_model(fabric, layout: Layout, *, ecmp: str = "hash") -> CommModel:
    """Route every group's traffic on ``fabric`` and build the :class:`CommModel`.

    Parameters
    ----------
    fabric : topology.fabric.CompiledFabric
        Compiled fabric (uses ``gpu_domain``, ``gpu_scaleup_gbytes_per_s``,
        ``directed_capacity_gbps``, ``route``).
    layout : Layout
        Rank -> GPU mapping and the groups of each kind (``scenarios.sim.step.layout.build_layout``).
    ecmp : {"hash", "spread"}
        ECMP model passed to ``fabric.route``: one hashed path per flow, or an even split over
        all equal-cost paths.

    Returns
    -------
    CommModel
    """
    costs = group_costs(fabric, layout, ecmp=ecmp)
    return CommModel(
        costs=costs,
        n_links=int(fabric.n_links),
        directed_capacity_gbps=np.asarray(fabric.directed_capacity_gbps, dtype=float),
    )


def fabric_with_capacity_scale(fabric, link_mask: np.ndarray, factor: float):
    """A copy of ``fabric`` whose chosen links carry ``factor`` times their capacity.

    Models a degraded spine, a slower optic or a down-rated port as a what-if: routing is
    unchanged, only the capacities that :func:`comm_model` shares between flows shrink.

    Parameters
    ----------
    fabric : topology.fabric.CompiledFabric
    link_mask : ndarray of bool, shape (L,), or ndarray of int (link indices)
        The undirected links to scale (both directions).
    factor : float
        Capacity multiplier, > 0 (0.5 = half the bandwidth).

    Returns
    -------
    CompiledFabric
        A shallow copy with new ``link_gbps`` and ``directed_capacity_gbps`` arrays.
    """
    if not factor > 0:
        raise ValueError(f"factor: must be > 0 (got {factor})")
    scale = np.ones(int(fabric.n_links))
    scale[np.asarray(link_mask)] = float(factor)
    link_gbps = np.asarray(fabric.link_gbps, dtype=float) * scale
    directed = np.asarray(fabric.directed_capacity_gbps, dtype=float) * np.repeat(scale, 2)
    return _replace_arrays(fabric, link_gbps=link_gbps, directed_capacity_gbps=directed)


def fabric_with_tier_capacity_scale(
    fabric, factor: float, *, tiers: tuple[str, ...] = ("leaf_spine", "spine_core")
):
    """A copy of ``fabric`` whose links of the given tiers carry ``factor`` times their capacity.

    The what-if "degraded spine" (``spine_capacity_scale``): scale every leaf-spine and
    spine-core link, or any subset of tiers (names from ``topology.fabric.plan.LINK_TIERS``).

    Parameters
    ----------
    fabric : topology.fabric.CompiledFabric
        Uses ``link_tier[L]``.
    factor : float
        Capacity multiplier, > 0.
    tiers : tuple of str
        Link tiers to scale.
    """
    unknown = [tier for tier in tiers if tier not in LINK_TIERS]
    if unknown:
        raise ValueError(f"tiers: must be among {', '.join(LINK_TIERS)} (got {unknown})")
    codes = [LINK_TIERS.index(tier) for tier in tiers]
    return fabric_with_capacity_scale(fabric, np.isin(np.asarray(fabric.link_tier), codes), factor)


def rack_link_utilization(fabric, link_utilization: np.ndarray) -> np.ndarray:
    """Hottest link of each rack.

    Parameters
    ----------
    fabric : topology.fabric.CompiledFabric
        Uses ``link_rack[L]`` and ``n_racks``.
    link_utilization : ndarray, shape (L,)

    Returns
    -------
    ndarray, shape (R,)
        Per rack, the maximum utilization over the links whose lower end sits in it (0 for a
        rack without links).
    """
    out = np.zeros(int(fabric.n_racks))
    rack = np.asarray(fabric.link_rack)
    valid = (rack >= 0) & (rack < out.size)
    np.maximum.at(out, rack[valid], np.asarray(link_utilization, dtype=float)[valid])
    return out


def _replace_arrays(fabric, **arrays):
    """Shallow copy of a (possibly frozen) fabric object with some attributes replaced."""
    if dataclasses.is_dataclass(fabric):
        fields = {f.name for f in dataclasses.fields(fabric) if f.init}
        if set(arrays) <= fields:
            return dataclasses.replace(fabric, **arrays)
    clone = copy.copy(fabric)
    for name, value in arrays.items():
        object.__setattr__(clone, name, value)
    return clone


def megatron_group_shape(kind: str, *, tp, pp, dp, cp=1, ep=1) -> tuple[np.ndarray, np.ndarray]:
    """Size and rank stride of the groups of ``kind`` in Megatron order (vectorized).

    With ranks ``r = t + tp*(c + cp*(d + dp*p))`` every group of a kind is ``size`` ranks
    ``stride`` apart (see :mod:`scenarios.sim.step.layout`).

    Returns
    -------
    (size, stride) : ndarrays of int, broadcast shape of the degrees
    """
    tp, pp, dp, cp, ep = (np.asarray(v, dtype=np.int64) for v in (tp, pp, dp, cp, ep))
    shapes = {
        "tp": (tp, np.ones_like(tp)),
        "cp": (cp, tp),
        "dp": (dp, tp * cp),
        "pp": (pp, tp * cp * dp),
        "dp_cp": (dp * cp, tp),
        "ep": (ep, tp),
        "edp": (dp * cp // ep, tp * ep),
    }
    if kind not in shapes:
        raise ValueError(f"kind: must be one of {', '.join(KIND_NAMES)} (got {kind!r})")
    size, stride = shapes[kind]
    return np.broadcast_arrays(size, stride)


class CommTable:
    """Collective costs of many candidate layouts on one fabric (for the layout search).

    Every Megatron group set is determined by its kind's pattern, its size and its rank stride
    (:func:`megatron_group_shape`); rank ``r`` runs on GPU ``rank_gpu[r]`` (the job's placement,
    ``scenarios.sim.placement``; identity on a whole cluster). The table routes each distinct
    (pattern, size, stride) once, on first use, batching all new ones of a call into one
    ``fabric.route`` call, and caches the result; evaluating times is then pure array work.

    Parameters
    ----------
    fabric : CompiledFabric
    ecmp : {"hash", "spread"}
    rank_gpu : ndarray of int, shape (W,), optional
        Fabric GPU of every rank of the job (distinct); default every GPU in order. Candidates
        must use exactly these ranks (``tp*pp*dp*cp == W``).
    """

    def __init__(self, fabric, *, ecmp: str = "hash", rank_gpu: np.ndarray | None = None) -> None:
        if ecmp not in ("hash", "spread"):
            raise ValueError(f"ecmp: must be 'hash' or 'spread' (got {ecmp!r})")
        self.fabric = fabric
        self.ecmp = ecmp
        n_gpus = int(fabric.n_gpus)
        if rank_gpu is None:
            rank_gpu = np.arange(n_gpus, dtype=np.int64)
        rank_gpu = np.asarray(rank_gpu, dtype=np.int64)
        if rank_gpu.ndim != 1 or np.unique(rank_gpu).size != rank_gpu.size:
            raise ValueError("rank_gpu: must be distinct GPU indices, one per rank")
        if rank_gpu.size and (rank_gpu.min() < 0 or rank_gpu.max() >= n_gpus):
            raise ValueError(f"rank_gpu: GPU indices must be in [0, {n_gpus})")
        self.rank_gpu = rank_gpu
        self._keys: dict[tuple[str, int, int], int] = {}
        self._costs: list[GroupCost] = []

    @property
    def world_size(self) -> int:
        """Ranks of the job ``W``."""
        return int(self.rank_gpu.size)

    def costs(self, kind: str, *, tp, pp, dp, cp=1, ep=1) -> CostArrays:
        """Per-candidate cost parameters of ``kind`` (arrays of the degrees' broadcast shape)."""
        size, stride = megatron_group_shape(kind, tp=tp, pp=pp, dp=dp, cp=cp, ep=ep)
        world = np.broadcast_to(np.asarray(tp) * np.asarray(pp) * np.asarray(dp) * np.asarray(cp), size.shape)
        if np.any(world != self.world_size):
            raise ValueError(f"parallel: tp*pp*dp*cp must equal the job's GPUs ({self.world_size})")
        pattern = "pp" if kind == "pp" else ("a2a" if kind in A2A_KINDS else "ring")
        pairs, inverse = _distinct_pairs(size.ravel(), stride.ravel())
        keys = [(pattern, int(n), int(s)) for n, s in pairs]
        self._add([key for key in keys if key not in self._keys])
        index = np.array([self._keys[key] for key in keys], dtype=np.int64)[inverse]
        return stack_costs(self._costs, index.reshape(size.shape))

    def time_s(self, kind: str, op: str, bytes, *, bucket_bytes=None, **degrees) -> np.ndarray:
        """Time of ``op`` for every candidate (s); arguments broadcast together.

        Same semantics as :meth:`CommModel.time_s`, with the parallel degrees of each
        candidate given as arrays: ``degrees`` are the keyword arguments of :meth:`costs`
        (tp, pp, dp, and cp, ep defaulting to 1).
        """
        cost = self.costs(kind, **degrees)
        return _bucketed_time_s(cost, op, np.asarray(bytes, dtype=float), bucket_bytes)

    def _add(self, keys: list[tuple[str, int, int]]) -> None:
        if not keys:
            return
        ranks = np.arange(self.world_size, dtype=np.int64)
        requests = {}
        for pattern, n, stride in keys:  # distinct group shapes of this call (a handful)
            groups = ranks.reshape(-1, n, stride).swapaxes(1, 2).reshape(-1, n)
            requests[(pattern, n, stride)] = ("ep" if pattern == "a2a" else pattern, self.rank_gpu[groups])
        for key, cost in costs_for_groups(self.fabric, requests, ecmp=self.ecmp).items():
            self._keys[key] = len(self._costs)
            self._costs.append(cost)


def _distinct_pairs(size: np.ndarray, stride: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct (size, stride) rows and each input's row, as ``np.unique(axis=0)`` gives.

    One int64 key per pair (size-major, so the order is the same) and a bisection into the few
    distinct keys: ``np.unique`` of rows sorts the candidates through a slow structured view.
    """
    size = size.astype(np.int64)
    stride = stride.astype(np.int64)
    radix = int(stride.max(initial=0)) + 1
    key = size * radix + stride
    distinct = np.unique(key)
    return np.stack([distinct // radix, distinct % radix], axis=1), np.searchsorted(distinct, key)


def comm_table(fabric, *, ecmp: str = "hash", rank_gpu: np.ndarray | None = None) -> CommTable:
    """A :class:`CommTable` for ``fabric`` and the job's ranks (see its docstring)."""
    return CommTable(fabric, ecmp=ecmp, rank_gpu=rank_gpu)


#: Megatron-core's default gradient bucket when gradient reduction overlaps the backward pass:
#: ``max(40_000_000, 1_000_000 * dp_size)`` parameters
#: (megatron/core/distributed/distributed_data_parallel.py, ``ddp_config.bucket_size``; without
#: overlap the whole buffer is one bucket).
MEGATRON_MIN_BUCKET_ELEMENTS = 40_000_000
MEGATRON_BUCKET_ELEMENTS_PER_DP_RANK = 1_000_000


def megatron_bucket_bytes(dp, bytes_per_element) -> np.ndarray:
    """Megatron-core's default gradient bucket size (bytes) for data-parallel size ``dp``."""
    per_rank = MEGATRON_BUCKET_ELEMENTS_PER_DP_RANK * np.asarray(dp)
    elements = np.maximum(MEGATRON_MIN_BUCKET_ELEMENTS, per_rank)
    return elements * np.asarray(bytes_per_element, dtype=float)


def _bucketed_time_s(cost, op: str, size: np.ndarray, bucket_bytes) -> np.ndarray:
    """``floor(S/B)`` collectives of ``B`` bytes, then one of the remainder."""
    if bucket_bytes is None:
        return collective_time_s(cost, op, size)
    bucket = np.asarray(bucket_bytes, dtype=float)
    if np.any(~(bucket > 0)):
        raise ValueError(f"bucket_bytes: must be > 0 (got {bucket_bytes})")
    full = np.floor(size / bucket)
    remainder = size - full * bucket
    shape = np.broadcast(size, bucket).shape
    per_bucket = collective_time_s(cost, op, np.broadcast_to(np.minimum(bucket, size), shape))
    return np.where(full > 0, full * per_bucket, 0.0) + collective_time_s(cost, op, remainder)
