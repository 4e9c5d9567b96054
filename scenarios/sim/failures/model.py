"""What can fail under a job, how often, and what each fault takes with it (pure, vectorized).

``failure_components(plan, fabric, job_nodes, catalog)`` turns a design and the servers a job
runs on into a :class:`FailureModel`: hazard classes (every member of a class has the same
annual failure rate, from the catalog entry of its type) with flat member arrays giving each
member's component index, rack, job slot and blast radius.

Blast radius (``docs/failure-model.md``):

- GPU, HBM, host, NIC, PSU, and the NIC-to-leaf cable/optic: the job stops and loses that
  server until it is repaired (the cable until it is replaced);
- a leaf: the job stops and loses every server with a NIC on that leaf (rail-optimized: one
  rail of a whole scalable unit) until the leaf is replaced;
- a spine, a core or a switch-to-switch link: the job keeps running on the degraded fabric
  (at the step time the caller computed for it) until the part is replaced;
- a power feed: its racks lose power only when every feed serving them is down (A/B: a rack
  stays up while one side still works); a rack without power loses its servers and the
  switches in it (a leaf takes its servers, a spine or core degrades the fabric).

Only components the job uses count: its servers, the leaves its NICs reach, the spines above
those leaves, the cores above those spines when the job spans several pods, the links between
them and the feeds of every rack holding any of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from scenarios.sim.format.errors import ScenarioError
from topology.fabric.plan import LINK_LEAF_SPINE, LINK_SPINE_CORE, TIER_CORE, TIER_LEAF, TIER_SPINE

if TYPE_CHECKING:
    from topology.fabric.compiled import CompiledFabric
    from topology.fabric.plan import FabricPlan
    from topology.fabric.specs import Catalog

__all__ = [
    "CATEGORIES",
    "DEGRADE_KINDS",
    "FailureModel",
    "HazardClass",
    "failure_components",
]

#: Interruption categories (those of Dubey et al. 2024, Table 5, plus power and planned).
CATEGORIES = ("gpu", "host", "network", "software", "maintenance", "power", "planned")
#: Fabric parts whose loss slows the job instead of stopping it.
DEGRADE_KINDS = ("spine", "core", "fabric_link")
#: Server hardware kinds: the hazards a lemon node multiplies.
SERVER_KINDS = ("gpu", "hbm", "host", "nic", "psu")
#: Effects of a hazard class.
STOP_REMOVE, DEGRADE, FEED = "stop_remove", "degrade", "feed"
#: Which repair time returns a removed part: spec.repair_hours, switch_, link_ or feed_repair_hours.
REPAIR_KINDS = ("server", "switch", "link", "feed")


@dataclass(frozen=True)
class HazardClass:
    """Components of one kind and type, all with the same hazard.

    Attributes
    ----------
    kind : str
        gpu, hbm, host, nic, psu, nic_link, leaf, spine, core, fabric_link, feed.
    category : str
        One of ``CATEGORIES``.
    effect : str
        ``stop_remove`` (the job stops; ``member_removes`` servers leave until repaired),
        ``degrade`` (the job slows until repaired) or ``feed`` (see the module docstring).
    rate_per_year : float
        Failures per member per 365-day year (catalog ``*annual_failure_rate``).
    offset, count : int
        The members are ``offset .. offset + count - 1`` of the model's member arrays.
    repair : str
        One of ``REPAIR_KINDS``: which repair time brings the part (and its servers) back.
    """

    kind: str
    category: str
    effect: str
    rate_per_year: float
    offset: int
    count: int
    repair: str


@dataclass(frozen=True, eq=False)
class FailureModel:
    """The failure-relevant structure of a job on a design.

    Shapes: N job servers, M members over all classes, R racks, F feeds of the job's racks
    (K = most racks one feed serves), S switches of the design.

    Attributes
    ----------
    job_nodes : ndarray (N,) int64
        Design node index of each job slot.
    node_rack : ndarray (N,) int64
        Rack of each job slot.
    classes : tuple of HazardClass
    member_component : ndarray (M,) int64
        Component index in its kind's index space (GPU, NIC port, node, link, switch, feed).
    member_rack : ndarray (M,) int64
        Rack the member sits in (a link: the rack of its lower end).
    member_slot : ndarray (M,) int64
        Job slot of the server it belongs to (-1 for network parts and feeds).
    member_removes : ndarray (M,) int64
        Servers the job loses when it fails alone (0 for degrading parts and feeds).
    member_feed : ndarray (M,) int64
        For feed members, the row in ``feed_racks`` (else -1).
    feed_racks : ndarray (F, K) int64
        Racks each job-relevant feed serves (-1 padding).
    rack_n_feeds : ndarray (R,) int64
        Feeds serving each rack.
    rack_removes : ndarray (R,) int64
        Distinct job servers lost when the rack loses power (its servers and those under
        the leaves it holds).
    rack_degrades : ndarray (R, 3) bool
        Whether the rack holds used spines / cores (``DEGRADE_KINDS`` order; links never).
    nic_leaf : ndarray (N * nics,) int64
        Leaf switch of each job NIC port (slot-major), for blast-radius queries.
    switch_rack : ndarray (S,) int64
    """

    n_racks: int
    n_design_nodes: int
    gpus_per_server: int
    nics_per_server: int
    job_nodes: np.ndarray
    node_rack: np.ndarray
    classes: tuple[HazardClass, ...]
    member_component: np.ndarray
    member_rack: np.ndarray
    member_slot: np.ndarray
    member_removes: np.ndarray
    member_feed: np.ndarray
    feed_racks: np.ndarray
    rack_n_feeds: np.ndarray
    rack_removes: np.ndarray
    rack_degrades: np.ndarray
    nic_leaf: np.ndarray
    switch_rack: np.ndarray

    @property
    def n_job_nodes(self) -> int:
        return int(self.job_nodes.size)

    @property
    def idle_nodes(self) -> int:
        """Design servers the job does not use: hot spares (with ``spare_servers``)."""
        return self.n_design_nodes - self.n_job_nodes

    def server_hazards_per_year(self) -> dict[str, float]:
        """Per-server hardware hazard by kind (failures per server-year), for lemon nodes."""
        out = dict.fromkeys(SERVER_KINDS, 0.0)
        for cls in self.classes:
            if cls.kind in out:
                out[cls.kind] += cls.rate_per_year * cls.count / max(self.n_job_nodes, 1)
        return out

    def counts(self) -> dict[str, int]:
        """Components the job depends on, by kind."""
        out: dict[str, int] = {}
        for cls in self.classes:
            out[cls.kind] = out.get(cls.kind, 0) + cls.count
        return out

    def blast_radius(self, kind: str, component: int) -> np.ndarray:
        """Design node indices of the job servers lost when one component fails alone.

        Parameters
        ----------
        kind : str
            A ``HazardClass.kind`` or "rack" (the rack losing power).
        component : int
            Index in that kind's index space (a rack index for "rack").

        Returns
        -------
        ndarray of int64, sorted (empty for a part that degrades, or a feed whose racks keep
        another feed).
        """
        if kind == "rack":
            return np.sort(self.job_nodes[self._rack_slots(int(component))])
        member = self.member_index(kind, component)
        cls = next(c for c in self.classes if c.offset <= member < c.offset + c.count)
        if cls.effect == DEGRADE:
            return np.zeros(0, np.int64)
        if kind == "leaf":
            slots = np.unique(np.flatnonzero(self.nic_leaf == component) // self.nics_per_server)
            return np.sort(self.job_nodes[slots])
        if cls.effect == FEED:
            racks = self.feed_racks[self.member_feed[member]]
            racks = racks[(racks >= 0) & (self.rack_n_feeds[np.maximum(racks, 0)] == 1)]
            slots = [self._rack_slots(int(r)) for r in racks]
            joined = np.unique(np.concatenate(slots)) if slots else np.zeros(0, np.int64)
            return np.sort(self.job_nodes[joined])
        return self.job_nodes[self.member_slot[member : member + 1]]

    def member_index(self, kind: str, component: int) -> int:
        """Row in the member arrays of component ``component`` of ``kind``.

        Raises
        ------
        ScenarioError
            When the job does not depend on that component.
        """
        for cls in self.classes:
            if cls.kind != kind:
                continue
            rows = cls.offset + np.flatnonzero(
                self.member_component[cls.offset : cls.offset + cls.count] == component
            )
            if rows.size:
                return int(rows[0])
        raise ScenarioError(f"failures.events: the job does not use {kind} {component}")

    def _rack_slots(self, rack: int) -> np.ndarray:
        in_rack = np.flatnonzero(self.node_rack == rack)
        leaves = np.flatnonzero(self.switch_rack == rack)
        under = np.flatnonzero(np.isin(self.nic_leaf, leaves)) // self.nics_per_server
        return np.unique(np.concatenate([in_rack, under]))


def failure_components(
    plan: FabricPlan,
    fabric: CompiledFabric,
    job_nodes: np.ndarray | list[int] | None = None,
    catalog: Catalog | None = None,
) -> FailureModel:
    """Hazard classes and blast radii of a job on a design.

    Parameters
    ----------
    plan : topology.fabric.plan.FabricPlan
        The design (a generator's output or ``topology.selectors.design_plan``).
    fabric : topology.fabric.compiled.CompiledFabric
        ``compile_plan(plan)``: NIC -> leaf, switch pods.
    job_nodes : array-like of int, optional
        Design node indices the job runs on (default: every node).
    catalog : topology.fabric.specs.Catalog, optional
        Take failure rates from this catalog (by the plan's slugs) instead of the specs stored
        in the plan, so a saved design picks up a curator's newer figures.

    Returns
    -------
    FailureModel

    Raises
    ------
    ScenarioError
        When ``job_nodes`` is empty, repeats a node or names one outside the design.
    """
    slots = _job_slots(plan.n_nodes, job_nodes)
    job = _JobParts.of(plan, fabric, slots)
    specs = _specs(plan, catalog)
    used = _used_network(plan, fabric, job.nic_leaf)
    builder = _Builder()
    _add_server_hazards(builder, specs, job)
    _add_network_hazards(builder, plan, fabric, specs, job, used)
    racks = _rack_structure(plan, job.node_rack, job.nic_leaf, job.nics, used)
    _add_feed_hazards(builder, plan, specs, racks)
    return FailureModel(
        n_racks=int(plan.n_racks),
        n_design_nodes=int(plan.n_nodes),
        gpus_per_server=job.gpus,
        nics_per_server=int(job.nics),
        job_nodes=slots,
        node_rack=job.node_rack,
        nic_leaf=job.nic_leaf,
        switch_rack=np.asarray(plan.switch_rack),
        **builder.arrays(),
        **racks,
    )


def _job_slots(n_nodes: int, job_nodes) -> np.ndarray:
    """The job's design node indices, checked (every node by default)."""
    slots = np.arange(n_nodes, dtype=np.int64) if job_nodes is None else np.asarray(job_nodes, np.int64)
    if slots.ndim != 1 or slots.size == 0:
        raise ScenarioError("failures.job_nodes: must list at least one node index")
    if slots.min() < 0 or slots.max() >= n_nodes:
        raise ScenarioError(
            f"failures.job_nodes: node indices must lie in 0..{n_nodes - 1} "
            f"(got {slots.min()}..{slots.max()})"
        )
    if np.unique(slots).size != slots.size:
        raise ScenarioError("failures.job_nodes: a node is listed twice")
    return slots


@dataclass(frozen=True)
class _JobParts:
    """The server parts of a job (job slot ``i`` is design node ``slots[i]``), slot-major."""

    gpus: int  # per server
    nics: int  # per server
    node_rack: np.ndarray  # (N,) rack of each slot
    gpu_ids: np.ndarray  # (N * gpus,) design GPU index
    gpu_slot: np.ndarray  # (N * gpus,)
    ports: np.ndarray  # (N * nics,) design NIC port index
    nic_slot: np.ndarray  # (N * nics,)
    nic_leaf: np.ndarray  # (N * nics,) leaf of each port
    slots: np.ndarray  # (N,)

    @classmethod
    def of(cls, plan, fabric, slots: np.ndarray) -> _JobParts:
        nics, gpus = plan.nics_per_node, int(plan.server.gpus_per_server)
        ports = (slots[:, None] * nics + np.arange(nics)).ravel()
        slot_of = np.arange(slots.size)
        return cls(
            gpus=gpus,
            nics=nics,
            node_rack=np.asarray(plan.node_rack)[slots],
            gpu_ids=(slots[:, None] * gpus + np.arange(gpus)).ravel(),
            gpu_slot=np.repeat(slot_of, gpus),
            ports=ports,
            nic_slot=np.repeat(slot_of, nics),
            nic_leaf=np.asarray(fabric.nic_leaf)[ports],
            slots=slots,
        )


def _add_server_hazards(builder: _Builder, specs: dict, job: _JobParts) -> None:
    """GPU, HBM, host, NIC and PSU faults: the job stops and loses the server."""
    gpu, server = specs["gpu"], specs["server"]
    slots, slot_of, gpu_rack = job.slots, np.arange(job.slots.size), job.node_rack[job.gpu_slot]
    builder.add(_Kind("gpu", "gpu"), gpu.annual_failure_rate, job.gpu_ids, gpu_rack, job.gpu_slot)
    builder.add(_Kind("hbm", "gpu"), gpu.hbm_annual_failure_rate, job.gpu_ids, gpu_rack, job.gpu_slot)
    builder.add(_Kind("host", "host"), server.annual_failure_rate, slots, job.node_rack, slot_of)
    nic_rack = job.node_rack[job.nic_slot]
    builder.add(_Kind("nic", "host"), server.nic_annual_failure_rate, job.ports, nic_rack, job.nic_slot)
    builder.add(_Kind("psu", "host"), server.psu_annual_failure_rate, slots, job.node_rack, slot_of)


def _add_network_hazards(builder: _Builder, plan, fabric, specs: dict, job: _JobParts, used: dict) -> None:
    """NIC cables (stop, the server is lost), leaves (stop, their servers are lost), spines,
    cores and switch-to-switch links (the job slows down)."""
    nic_links = np.asarray(fabric.nic_link)[job.ports]
    link_rate = specs["link_rate"][plan.link_type]
    link_rack = np.asarray(fabric.link_rack)
    builder.add_grouped(
        _Kind("nic_link", "network", repair="link"),
        link_rate[nic_links],
        nic_links,
        link_rack[nic_links],
        job.nic_slot,
    )
    switch_rate = specs["switch_rate"][plan.switch_type]
    switch_rack = np.asarray(plan.switch_rack)
    leaves = used["leaves"]
    builder.add_grouped(
        _Kind("leaf", "network", repair="switch"),
        switch_rate[leaves],
        leaves,
        switch_rack[leaves],
        -1,
        removes=used["leaf_removes"],
    )
    for kind in ("spine", "core"):
        ids = used[kind]
        builder.add_grouped(
            _Kind(kind, "network", DEGRADE, "switch"), switch_rate[ids], ids, switch_rack[ids], -1, removes=0
        )
    links = used["fabric_links"]
    builder.add_grouped(
        _Kind("fabric_link", "network", DEGRADE, "link"),
        link_rate[links],
        links,
        link_rack[links],
        -1,
        removes=0,
    )


def _add_feed_hazards(builder: _Builder, plan, specs: dict, racks: dict) -> None:
    """The power feeds of the racks that matter (``racks["feeds"]`` is taken out of ``racks``)."""
    feeds = racks.pop("feeds")
    feed_rate = specs["feed_rate"][np.asarray(plan.feed_type)[feeds]] if feeds.size else np.zeros(0)
    first_rack = racks["feed_racks"][:, 0] if feeds.size else np.zeros(0, np.int64)
    builder.add_grouped(
        _Kind("feed", "power", FEED, "feed"),
        feed_rate,
        feeds,
        first_rack,
        -1,
        removes=0,
        aux=np.arange(feeds.size),
    )


def _specs(plan, catalog) -> dict:
    """The plan's specs, re-read from ``catalog`` by slug when one is given."""
    server, gpu = plan.server, plan.gpu
    switches, links, feeds = plan.switch_types, plan.link_types, plan.feed_types
    if catalog is not None:
        server, gpu = catalog.server(server.slug), catalog.gpu(gpu.slug)
        switches = tuple(catalog.switch(s.slug) for s in switches)
        links = tuple(catalog.link(s.slug) for s in links)
        feeds = tuple(catalog.feed(s.slug) for s in feeds)
    return {
        "server": server,
        "gpu": gpu,
        "switch_rate": np.array([s.annual_failure_rate for s in switches] or [0.0]),
        "link_rate": np.array([s.annual_failure_rate for s in links] or [0.0]),
        "feed_rate": np.array([s.annual_failure_rate for s in feeds] or [0.0]),
    }


@dataclass(frozen=True)
class _Kind:
    """What a hazard class is: its kind and category, its effect and which repair returns it."""

    kind: str
    category: str
    effect: str = STOP_REMOVE
    repair: str = "server"


class _Builder:
    """Collects hazard classes and concatenates their member arrays."""

    def __init__(self) -> None:
        self.classes: list[HazardClass] = []
        self.columns: dict[str, list[np.ndarray]] = {
            k: [] for k in ("component", "rack", "slot", "removes", "feed")
        }
        self.size = 0

    def add(self, kind: _Kind, rate, component, rack, slot, removes=1, aux=None):
        component = np.asarray(component, np.int64)
        count = int(component.size)
        if count == 0:
            return
        self.classes.append(
            HazardClass(kind.kind, kind.category, kind.effect, float(rate), self.size, count, kind.repair)
        )
        for key, value in (("component", component), ("rack", rack), ("slot", slot), ("removes", removes)):
            self.columns[key].append(np.broadcast_to(np.asarray(value, np.int64), (count,)).copy())
        self.columns["feed"].append(
            np.full(count, -1, np.int64) if aux is None else np.asarray(aux, np.int64)
        )
        self.size += count

    def add_grouped(self, kind: _Kind, rates, component, rack, slot, removes=1, aux=None):
        """One class per distinct rate (members of one kind may be of several catalog types)."""
        rates = np.asarray(rates, float)
        count = rates.size
        columns = [
            np.broadcast_to(np.asarray(v, np.int64), (count,)) for v in (component, rack, slot, removes)
        ]
        aux = None if aux is None else np.asarray(aux, np.int64)
        for rate in np.unique(rates):
            pick = rates == rate
            self.add(
                kind,
                rate,
                *(column[pick] for column in columns[:3]),
                removes=columns[3][pick],
                aux=None if aux is None else aux[pick],
            )

    def arrays(self) -> dict:
        def join(key):
            parts = self.columns[key]
            return np.concatenate(parts) if parts else np.zeros(0, np.int64)

        return {
            "classes": tuple(self.classes),
            "member_component": join("component"),
            "member_rack": join("rack"),
            "member_slot": join("slot"),
            "member_removes": join("removes"),
            "member_feed": join("feed"),
        }


def _used_network(plan, fabric, nic_leaf: np.ndarray) -> dict[str, np.ndarray]:
    """Leaves, spines, cores and switch-to-switch links the job's traffic can use."""
    n_switches = int(plan.switch_type.size)
    offset = plan.n_nic_ports
    nics = plan.nics_per_node
    leaf_slot = np.repeat(np.arange(nic_leaf.size // max(nics, 1)), nics)
    pairs = np.unique(nic_leaf * (leaf_slot.size + 1) + leaf_slot)
    leaves, leaf_removes = np.unique(pairs // (leaf_slot.size + 1), return_counts=True)
    is_used_leaf = np.zeros(n_switches, bool)
    is_used_leaf[leaves] = True
    lower = np.asarray(plan.link_a) - offset
    upper = np.asarray(plan.link_b) - offset
    tier = np.asarray(plan.link_tier)
    tier1 = np.flatnonzero((tier == LINK_LEAF_SPINE) & is_used_leaf[np.maximum(lower, 0)])
    spines = np.unique(upper[tier1])
    # Rail-aligned traffic stays in its rail; cores carry it only when one rail's (or, in a
    # fat tree, the job's) leaves sit in several pods.
    rail = np.asarray(plan.switch_rail)[leaves]
    pod = np.asarray(fabric.switch_pod)[leaves]
    rail_pods = np.unique(np.stack([rail, pod]), axis=1)
    if np.unique(rail_pods[0]).size < rail_pods.shape[1]:
        is_used_spine = np.zeros(n_switches, bool)
        is_used_spine[spines] = True
        tier2 = np.flatnonzero((tier == LINK_SPINE_CORE) & is_used_spine[np.maximum(lower, 0)])
    else:
        tier2 = np.zeros(0, np.int64)
    cores = np.unique(upper[tier2])
    switch_tier = np.asarray(plan.switch_tier)
    assert np.all(switch_tier[leaves] == TIER_LEAF)
    assert np.all(switch_tier[spines] == TIER_SPINE) and np.all(switch_tier[cores] == TIER_CORE)
    return {
        "leaves": leaves,
        "leaf_removes": leaf_removes,
        "spine": spines,
        "core": cores,
        "fabric_links": np.concatenate([tier1, tier2]),
    }


def _rack_structure(plan, node_rack, nic_leaf, nics, used) -> dict[str, np.ndarray]:
    """Per rack: servers lost without power and degrading switches; the feeds that matter."""
    n_racks = int(plan.n_racks)
    n_slots = node_rack.size
    leaf_slot = np.repeat(np.arange(n_slots), nics)
    switch_rack = np.asarray(plan.switch_rack)
    pair_rack = np.concatenate([node_rack, switch_rack[nic_leaf]])
    pair_slot = np.concatenate([np.arange(n_slots), leaf_slot])
    unique_pairs = np.unique(pair_rack * n_slots + pair_slot)
    rack_removes = np.bincount(unique_pairs // n_slots, minlength=n_racks).astype(np.int64)
    rack_degrades = np.zeros((n_racks, len(DEGRADE_KINDS)), bool)
    rack_degrades[switch_rack[used["spine"]], 0] = True
    rack_degrades[switch_rack[used["core"]], 1] = True
    feed_of_pair = np.asarray(plan.feed_rack_feed)
    rack_of_pair = np.asarray(plan.feed_rack_rack)
    rack_n_feeds = np.bincount(rack_of_pair, minlength=n_racks).astype(np.int64)
    matters = (rack_removes > 0) | rack_degrades.any(axis=1)
    relevant = matters[rack_of_pair]
    feeds = np.unique(feed_of_pair[relevant])
    pair_feed, pair_rack = feed_of_pair[relevant], rack_of_pair[relevant]
    order = np.lexsort((pair_rack, pair_feed))
    pair_feed, pair_rack = pair_feed[order], pair_rack[order]
    row = np.searchsorted(feeds, pair_feed)
    per_feed = np.bincount(row, minlength=feeds.size)
    width = int(per_feed.max()) if feeds.size else 1
    column = np.arange(row.size) - (np.cumsum(per_feed) - per_feed)[row]
    feed_racks = np.full((feeds.size, width), -1, np.int64)
    feed_racks[row, column] = pair_rack
    return {
        "feeds": feeds.astype(np.int64),
        "feed_racks": feed_racks,
        "rack_n_feeds": rack_n_feeds,
        "rack_removes": rack_removes,
        "rack_degrades": rack_degrades,
    }
