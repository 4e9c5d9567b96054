"""What a failure run needs from the job beside its failure model: the size of its checkpoint
(what a save writes and a restart reads) and its fabric with one degrading part lost (for the
step time the job slows to)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from scenarios.sim.failures.model import DEGRADE_KINDS
from scenarios.sim.format.errors import ScenarioError
from scenarios.sim.format.scenario import JobSpec
from scenarios.sim.step.flops import embedding_params, layer_params
from scenarios.sim.step.network import fabric_with_capacity_scale
from topology.fabric.plan import LINK_LEAF_SPINE, LINK_SPINE_CORE

if TYPE_CHECKING:
    from topology.fabric.compiled import CompiledFabric

__all__ = ["CheckpointSize", "checkpoint_size", "degraded_fabric"]

#: Checkpoint bytes per parameter: bf16 weights (2) + fp32 master weights (4) + Adam m and v
#: (4 + 4); gradients are not saved (Megatron-LM distributed optimizer checkpoint layout, the
#: same 12 B of optimizer state as scenarios.sim.step.memory).
CHECKPOINT_BYTES_PER_PARAM = 14.0


@dataclass(frozen=True)
class CheckpointSize:
    """Bytes a checkpoint writes and a restart reads.

    Attributes
    ----------
    save_bytes : float
        Unique training state written by one checkpoint (every shard once).
    reload_bytes : float
        Bytes read from storage by one restart: the state once with ZeRO >= 1 (each rank reads
        its own shard); without ZeRO every data-parallel replica reads the full state of its
        model-parallel slice (assumed: no read-once-and-broadcast), ``dp * cp`` times the state.
    """

    save_bytes: float
    reload_bytes: float

    def save_s(self, storage_gbytes_per_s: float) -> float:
        return self.save_bytes / (storage_gbytes_per_s * 1e9)

    def reload_s(self, storage_gbytes_per_s: float) -> float:
        return self.reload_bytes / (storage_gbytes_per_s * 1e9)


def checkpoint_size(job: JobSpec) -> CheckpointSize:
    """Checkpoint size of a job from its model (``layer_params``, ``embedding_params``).

    ``CHECKPOINT_BYTES_PER_PARAM`` bytes per parameter; ZeRO sharding changes what a restart
    reads, not what is saved (see :class:`CheckpointSize`).
    """
    per_layer = sum(layer_params(job.model).values())
    embed_in, embed_out = embedding_params(job.model)
    params = job.model.layers * per_layer + embed_in + embed_out
    state = params * CHECKPOINT_BYTES_PER_PARAM
    replicas = 1 if job.zero >= 1 else job.parallel.dp * job.parallel.cp
    return CheckpointSize(save_bytes=state, reload_bytes=state * replicas)


def degraded_fabric(fabric: CompiledFabric, kind: str) -> CompiledFabric:
    """The fabric with one part of ``kind`` lost, for the caller's degraded step time.

    Routing is unchanged (the core's ECMP spreads over every path), so instead of removing the
    part, every switch right below it loses the share of its uplink capacity that went to it:
    one of ``n`` spines costs each leaf of that pod ``1/n`` of its uplinks, one core costs each
    spine wired to it the share of its uplinks to that core, one leaf uplink costs its leaf
    ``1/n``. The part is the first one the first NIC's traffic can reach (generated designs
    are uniform, so any other gives the same figure).

    Parameters
    ----------
    fabric : CompiledFabric
    kind : one of ``DEGRADE_KINDS``

    Returns
    -------
    CompiledFabric
        A copy with scaled capacities (``scenarios.sim.step.network.fabric_with_capacity_scale``),
        or ``fabric`` itself when it has no such part.
    """

    if kind not in DEGRADE_KINDS:
        raise ScenarioError(f"kind: must be one of {', '.join(DEGRADE_KINDS)} (got {kind!r})")
    up_ptr = np.asarray(fabric.up_ptr)
    up_link = np.asarray(fabric.up_link)
    up_upper = np.asarray(fabric.up_upper)
    lower = np.repeat(np.arange(up_ptr.size - 1), np.diff(up_ptr))
    tier = np.asarray(fabric.link_tier)[up_link]
    leaf = int(np.asarray(fabric.nic_leaf)[0])
    if kind == "fabric_link":
        affected = lower == leaf
        share = 1.0 / max(int(affected.sum()), 1)
    else:
        wanted = LINK_LEAF_SPINE if kind == "spine" else LINK_SPINE_CORE
        candidates = np.flatnonzero((tier == wanted) & ((lower == leaf) if kind == "spine" else True))
        if candidates.size == 0:
            return fabric
        part = up_upper[candidates[0]]
        lowers = np.unique(lower[(tier == wanted) & (up_upper == part)])
        affected = np.isin(lower, lowers) & (tier == wanted)
        first = lower == lowers[0]
        share = np.count_nonzero(first & (up_upper == part)) / np.count_nonzero(first & (tier == wanted))
    if not affected.any() or share >= 1.0:
        return fabric
    return fabric_with_capacity_scale(fabric, up_link[affected], 1.0 - share)
