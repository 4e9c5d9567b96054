"""Where a job runs on its cluster: the nodes it uses and the rank -> GPU map (pure, vectorized).

A job may use part of the cluster: ``job.nodes`` servers (default: every eligible one), chosen

* ``packed`` -- the first eligible nodes in the generator's order, i.e. the same leaves, racks
  and scalable units a cluster of that size would have;
* ``spread`` -- evenly spaced over the eligible nodes (node ``floor(i E / J)`` of ``E`` eligible
  for the ``i``-th of ``J``), as a scheduler that scatters a job over a busy cluster would: more
  leaves, more spine traffic.

With ``job.gpus_per_domain`` only the first ``gpus_per_domain / gpus_per_server`` servers of each
scale-up domain are eligible. GB200 NVL72 jobs commonly use 64 of a rack's 72 GPUs (16 of its
18 compute trays, two kept as spares): the MLPerf Training GB200 NVL72 submissions are multiples
of 64 GPUs (e.g. 2,496 = 39 x 64, 5,120 and 8,192; read from the published system sizes, an
assumption about how the racks were used).

Rank ``r`` runs on the ``r``-th GPU of the job's nodes (node order, then the GPU's index in its
server), so the fastest Megatron axis, tensor parallelism, stays inside a server as ``torchrun``
places local ranks; on a whole cluster this is the identity map.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scenarios.sim.format.errors import ScenarioError
from scenarios.sim.format.schema import PLACEMENTS

__all__ = [
    "PLACEMENTS",
    "JobPlacement",
    "choose_nodes",
    "eligible_node_count",
    "eligible_nodes",
    "job_gpus",
    "job_placement",
    "place_job",
    "scenario_job_gpus",
]


@dataclass(frozen=True)
class JobPlacement:
    """The fabric nodes and GPUs of a job.

    Attributes
    ----------
    nodes : ndarray of int64, shape (J,)
        Node indices the job uses, increasing.
    rank_gpu : ndarray of int64, shape (W,)
        Fabric GPU of every rank (``W`` = the job's GPUs).
    n_fabric_gpus : int
        GPUs of the fabric ``G``.
    """

    nodes: np.ndarray = field(repr=False)
    rank_gpu: np.ndarray = field(repr=False)
    n_fabric_gpus: int

    @property
    def world_size(self) -> int:
        """GPUs (ranks) of the job ``W``."""
        return int(self.rank_gpu.size)

    def gpu_values(self, per_rank, fill) -> np.ndarray:
        """A per-rank array spread over the fabric's GPUs, shape (G,); ``fill`` elsewhere."""
        per_rank = np.asarray(per_rank)
        out = np.full(self.n_fabric_gpus, fill, dtype=np.result_type(per_rank, np.asarray(fill)))
        out[self.rank_gpu] = per_rank
        return out


def eligible_nodes(gpu_node, gpu_domain, *, n_nodes: int, gpus_per_domain: int | None = None) -> np.ndarray:
    """Nodes a job may use: all, or those within the first ``gpus_per_domain`` GPUs (node order)
    of their scale-up domain.

    Parameters
    ----------
    gpu_node, gpu_domain : ndarray of int, shape (G,)
        Node and scale-up domain of every GPU (``CompiledFabric``).
    n_nodes : int
    gpus_per_domain : int, optional

    Returns
    -------
    ndarray of int64, shape (E,), increasing
    """
    nodes = np.arange(int(n_nodes), dtype=np.int64)
    if gpus_per_domain is None:
        return nodes
    gpu_node = np.asarray(gpu_node, dtype=np.int64)
    node_gpus = np.bincount(gpu_node, minlength=nodes.size)
    node_domain = np.full(nodes.size, -1, dtype=np.int64)
    node_domain[gpu_node] = np.asarray(gpu_domain, dtype=np.int64)
    order = np.argsort(node_domain, kind="stable")  # grouped by domain, node order inside
    domain = node_domain[order]
    gpus = node_gpus[order]
    before = np.cumsum(gpus) - gpus
    first = np.flatnonzero(np.r_[True, domain[1:] != domain[:-1]])
    group_first = np.repeat(first, np.diff(np.r_[first, domain.size]))
    within = before - before[group_first]  # GPUs of the same domain on earlier nodes
    return np.sort(order[within + gpus <= int(gpus_per_domain)])


def choose_nodes(eligible: np.ndarray, count: int, placement: str = "packed") -> np.ndarray:
    """``count`` of the eligible nodes, ``packed`` (the first) or ``spread`` (evenly spaced)."""
    eligible = np.asarray(eligible, dtype=np.int64)
    if placement not in PLACEMENTS:
        raise ValueError(f"placement: must be one of {', '.join(PLACEMENTS)} (got {placement!r})")
    if not 0 < count <= eligible.size:
        raise ValueError(f"count: must be in [1, {eligible.size}] (got {count})")
    if placement == "packed":
        return eligible[:count]
    return eligible[np.arange(count, dtype=np.int64) * eligible.size // count]


def job_placement(
    fabric, *, nodes: int | None = None, placement: str = "packed", gpus_per_domain: int | None = None
) -> JobPlacement:
    """The nodes and rank -> GPU map of a job on ``fabric``.

    Parameters
    ----------
    fabric : CompiledFabric
        Uses ``gpu_node``, ``gpu_local``, ``gpu_domain``, ``n_nodes``, ``n_gpus``.
    nodes : int, optional
        Servers the job uses (default: every eligible one).
    placement : {"packed", "spread"}
    gpus_per_domain : int, optional
        GPUs the job uses in each scale-up domain.

    Raises
    ------
    ScenarioError
        When ``nodes`` exceeds the eligible nodes (naming ``job.nodes``).
    """
    gpu_node = np.asarray(fabric.gpu_node, dtype=np.int64)
    eligible = eligible_nodes(
        gpu_node, fabric.gpu_domain, n_nodes=int(fabric.n_nodes), gpus_per_domain=gpus_per_domain
    )
    count = eligible.size if nodes is None else int(nodes)
    if count > eligible.size:
        limit = (
            f"the fabric's nodes ({eligible.size})"
            if gpus_per_domain is None
            else f"the fabric's nodes eligible under job.gpus_per_domain {gpus_per_domain} ({eligible.size})"
        )
        raise ScenarioError(f"job.nodes: must be ≤ {limit} (got {count})")
    if count < 1:
        raise ScenarioError(f"job.nodes: no node of the fabric is eligible (got {count})")
    chosen = choose_nodes(eligible, count, placement)
    in_job = np.zeros(int(fabric.n_nodes), dtype=bool)
    in_job[chosen] = True
    gpus = np.flatnonzero(in_job[gpu_node])
    order = np.lexsort((np.asarray(fabric.gpu_local)[gpus], gpu_node[gpus]))
    return JobPlacement(nodes=chosen, rank_gpu=gpus[order].astype(np.int64), n_fabric_gpus=int(fabric.n_gpus))


def place_job(fabric, job) -> JobPlacement:
    """:func:`job_placement` with a ``JobSpec``'s ``nodes``, ``placement`` and ``gpus_per_domain``."""
    return job_placement(
        fabric, nodes=job.nodes, placement=job.placement, gpus_per_domain=job.gpus_per_domain
    )


def eligible_node_count(
    *, cluster_nodes: int, gpus_per_server: int, scaleup_domain_gpus: int, gpus_per_domain: int | None = None
) -> int:
    """Nodes eligible under ``gpus_per_domain`` on a generated cluster (no fabric needed).

    Scale-up domains are consecutive groups of ``scaleup_domain_gpus / gpus_per_server`` servers
    (one server when the domain fits in it), as the generators build them.
    """
    if gpus_per_domain is None:
        return int(cluster_nodes)
    servers_per_domain = max(int(scaleup_domain_gpus) // int(gpus_per_server), 1)
    allowed = min(int(gpus_per_domain) // int(gpus_per_server), servers_per_domain)
    full, rest = divmod(int(cluster_nodes), servers_per_domain)
    return full * allowed + min(rest, allowed)


def job_gpus(job, *, cluster_nodes: int, gpus_per_server: int, scaleup_domain_gpus: int) -> tuple[int, str]:
    """GPUs of a job on a generated cluster and how they are counted (for error messages).

    Returns
    -------
    (gpus, description) : int, str
        e.g. ``(8192, "the cluster's GPUs (1024 nodes × 8 = 8192)")`` or
        ``(4096, "the job's GPUs (job.nodes 512 × 8 = 4096)")``.
    """
    if job.nodes is not None:
        gpus = job.nodes * gpus_per_server
        return gpus, f"the job's GPUs (job.nodes {job.nodes} × {gpus_per_server} = {gpus})"
    if job.gpus_per_domain is not None:
        nodes = eligible_node_count(
            cluster_nodes=cluster_nodes,
            gpus_per_server=gpus_per_server,
            scaleup_domain_gpus=scaleup_domain_gpus,
            gpus_per_domain=job.gpus_per_domain,
        )
        gpus = nodes * gpus_per_server
        return gpus, (
            f"the job's GPUs ({nodes} nodes eligible under job.gpus_per_domain {job.gpus_per_domain} "
            f"× {gpus_per_server} = {gpus})"
        )
    gpus = cluster_nodes * gpus_per_server
    return gpus, f"the cluster's GPUs ({cluster_nodes} nodes × {gpus_per_server} = {gpus})"


def scenario_job_gpus(scenario, catalog) -> int:
    """GPUs the scenario's job uses on its (generated) cluster."""
    cluster = scenario.effective_cluster()
    server = catalog.server(cluster.server)
    gpus, _ = job_gpus(
        scenario.job,
        cluster_nodes=cluster.nodes,
        gpus_per_server=server.gpus_per_server,
        scaleup_domain_gpus=server.scaleup_domain_gpus,
    )
    return gpus
