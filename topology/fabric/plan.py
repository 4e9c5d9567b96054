"""A cluster design as plain column arrays: racks, nodes, switches, links and power feeds.

A generator (``topology.fabric.generators``) returns a ``FabricPlan``; the lead's services save
it row for row with ``bulk_create`` and ``topology.fabric.compiled.compile_plan`` turns it into
the index arrays the simulation core routes traffic on. There is no Python object per GPU or
link: every entity kind is a set of equally long numpy arrays (one element per row).

Vertex space of the links: vertices ``0 .. n_nodes*nics - 1`` are NIC ports (``node*nics + k``),
then ``n_nodes*nics + s`` is switch ``s``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from topology.fabric.specs import FeedSpec, GpuSpec, LinkSpec, ServerSpec, SwitchSpec, server_nameplate_w

RACK_KINDS = ("compute", "network")
SWITCH_TIERS = ("leaf", "spine", "core", "scaleup")
LINK_TIERS = ("server_leaf", "leaf_spine", "spine_core")
FEED_SIDES = ("A", "B")

RACK_COMPUTE, RACK_NETWORK = 0, 1
TIER_LEAF, TIER_SPINE, TIER_CORE, TIER_SCALEUP = 0, 1, 2, 3
LINK_SERVER_LEAF, LINK_LEAF_SPINE, LINK_SPINE_CORE = 0, 1, 2


class FabricError(ValueError):
    """Impossible fabric parameters or an inconsistent plan; the message names the field."""


def rack_nameplate_w(
    n_racks: int, *, node_rack: np.ndarray, node_w: np.ndarray, switch_rack: np.ndarray, switch_w: np.ndarray
) -> np.ndarray:
    """Nameplate power of every rack, (R,) W: its servers (each at base power plus its GPUs at
    TDP) and its switches with their transceivers (``switch_w``, see :func:`switch_optics_w`).
    The one place rack power is summed: budgets, floor plans and the power model use it."""
    rack_w = np.bincount(np.asarray(node_rack, dtype=np.int64), weights=node_w, minlength=n_racks)
    return rack_w + np.bincount(np.asarray(switch_rack, dtype=np.int64), weights=switch_w, minlength=n_racks)


def switch_optics_w(
    n_switches: int, *, link_a: np.ndarray, link_b: np.ndarray, link_w: np.ndarray, n_nic_ports: int
) -> np.ndarray:
    """Transceiver power at each switch, (S,) W: half of each link's optics power at every switch
    end. A link's NIC end is part of the server's base power (the DGX datasheet maximum includes
    its NICs), so a server link puts only its switch half here.

    Ends are vertices: a NIC end is below ``n_nic_ports``, switch ``s`` is ``n_nic_ports + s``
    (a caller outside the plan's vertex space passes switch indices, -1 for a NIC end, and
    ``n_nic_ports=0``). The one place the rule is written: plans, generators and saved designs
    (``topology.selectors``) use it."""
    half = np.asarray(link_w, dtype=float) / 2.0
    link_a, link_b = np.asarray(link_a, dtype=np.int64), np.asarray(link_b, dtype=np.int64)
    out = np.bincount(link_b - n_nic_ports, weights=half, minlength=n_switches)
    lower = link_a >= n_nic_ports
    return out + np.bincount(link_a[lower] - n_nic_ports, weights=half[lower], minlength=n_switches)


@dataclass(frozen=True, eq=False)
class FabricPlan:
    """One cluster design as column arrays (see the module docstring for the vertex space).

    Shapes: R racks, N nodes, S switches, L links, F feeds, K feed-to-rack pairs. Integer
    columns are ``int64``; powers are kW, speeds Gb/s, positions 1-based rack units.
    """

    generator: str
    params: dict[str, Any]
    hall_rows: int
    hall_cols: int
    server: ServerSpec
    gpu: GpuSpec
    switch_types: tuple[SwitchSpec, ...]
    link_types: tuple[LinkSpec, ...]
    feed_types: tuple[FeedSpec, ...]
    # racks (R)
    rack_name: list[str]
    rack_row: np.ndarray
    rack_col: np.ndarray
    rack_kind: np.ndarray
    rack_units: np.ndarray
    rack_budget_kw: np.ndarray
    # nodes (N)
    node_rack: np.ndarray
    node_u: np.ndarray
    # switches (S)
    switch_type: np.ndarray
    switch_tier: np.ndarray
    switch_rack: np.ndarray
    switch_u: np.ndarray
    switch_group: np.ndarray
    switch_rail: np.ndarray
    switch_ports: np.ndarray  # usable ports at the fabric speed (radix x breakout)
    # links (L)
    link_a: np.ndarray
    link_b: np.ndarray
    link_type: np.ndarray
    link_gbps: np.ndarray
    link_tier: np.ndarray
    # feeds (F) and the racks they serve (K pairs)
    feed_type: np.ndarray
    feed_side: np.ndarray
    feed_panel: list[str]
    feed_rack_feed: np.ndarray
    feed_rack_rack: np.ndarray
    notes: tuple[str, ...] = field(default=())

    # ---- sizes -----------------------------------------------------------------------------
    @property
    def nics_per_node(self) -> int:
        return int(self.server.nics_per_server)

    @property
    def n_nodes(self) -> int:
        return int(self.node_rack.size)

    @property
    def n_gpus(self) -> int:
        return self.n_nodes * int(self.server.gpus_per_server)

    @property
    def n_racks(self) -> int:
        return int(self.rack_row.size)

    @property
    def n_nic_ports(self) -> int:
        return self.n_nodes * self.nics_per_node

    @property
    def n_vertices(self) -> int:
        return self.n_nic_ports + int(self.switch_type.size)

    @property
    def n_switches(self) -> dict[str, int]:
        counts = np.bincount(self.switch_tier, minlength=len(SWITCH_TIERS))
        return {name: int(counts[i]) for i, name in enumerate(SWITCH_TIERS)}

    @property
    def n_links(self) -> dict[str, int]:
        counts = np.bincount(self.link_tier, minlength=len(LINK_TIERS))
        return {name: int(counts[i]) for i, name in enumerate(LINK_TIERS)}

    @property
    def n_feeds(self) -> int:
        return int(self.feed_type.size)

    @property
    def n_tiers(self) -> int:
        """Scale-out switch tiers in use (1 leaf only, 2 leaf-spine, 3 with cores)."""
        tiers = self.switch_tier[self.switch_tier != TIER_SCALEUP]
        return int(tiers.max()) + 1 if tiers.size else 0

    @property
    def it_power_kw(self) -> float:
        """Nameplate IT power: every rack's servers, switches and their transceivers."""
        return float(self.rack_nameplate_w().sum()) / 1000.0

    @property
    def switch_power_w(self) -> np.ndarray:
        """Each switch's nameplate plus the transceivers at its ports, (S,) W."""
        if not self.switch_type.size:
            return np.zeros(0)
        own = np.array([s.power_w for s in self.switch_types], dtype=float)[self.switch_type]
        link_w = np.array([t.power_w for t in self.link_types], dtype=float)[self.link_type]
        return own + switch_optics_w(
            int(self.switch_type.size),
            link_a=self.link_a,
            link_b=self.link_b,
            link_w=link_w,
            n_nic_ports=self.n_nic_ports,
        )

    def rack_nameplate_w(self) -> np.ndarray:
        """Nameplate power of every rack, (R,) W (:func:`rack_nameplate_w`)."""
        server_w = server_nameplate_w(
            base_power_w=self.server.base_power_w,
            gpus_per_server=self.server.gpus_per_server,
            tdp_w=self.gpu.tdp_w,
        )
        return rack_nameplate_w(
            self.n_racks,
            node_rack=self.node_rack,
            node_w=np.full(self.n_nodes, server_w),
            switch_rack=self.switch_rack,
            switch_w=self.switch_power_w,
        )

    def gpu_domain(self) -> np.ndarray:
        """Scale-up domain id of every GPU, shape (G,), int64.

        The server when the domain fits in one server (HGX/DGX NVSwitch, MI300X mesh: domain
        index ``gpu // scaleup_domain_gpus``); otherwise the server's rack (NVL72: the 18 trays
        of a rack share one NVLink domain), numbered densely in rack order.
        """
        gpus = int(self.server.gpus_per_server)
        domain_gpus = int(self.server.scaleup_domain_gpus)
        gpu = np.arange(self.n_gpus, dtype=np.int64)
        if domain_gpus <= gpus:
            return gpu // max(domain_gpus, 1)
        _, rack_domain = np.unique(self.node_rack, return_inverse=True)
        return rack_domain.astype(np.int64)[gpu // gpus]

    # ---- bisection -------------------------------------------------------------------------
    def nic_gpu_count(self) -> np.ndarray:
        """GPUs that use each NIC port, shape (n_nic_ports,) (GPU k uses NIC k*nics//gpus)."""
        gpus, nics = int(self.server.gpus_per_server), self.nics_per_node
        per_node = np.bincount(np.arange(gpus) * nics // gpus, minlength=nics)
        return np.tile(per_node, self.n_nodes)

    def switch_pod(self) -> np.ndarray:
        """Pod id of every leaf and spine (connected through leaf-spine links), -1 otherwise.

        Returns
        -------
        ndarray, shape (S,), int64
        """
        n_switches = int(self.switch_type.size)
        pod = np.full(n_switches, -1, dtype=np.int64)
        mask = self.link_tier == LINK_LEAF_SPINE
        lower = self.link_a[mask] - self.n_nic_ports
        upper = self.link_b[mask] - self.n_nic_ports
        in_tree = np.isin(self.switch_tier, (TIER_LEAF, TIER_SPINE))
        members = np.flatnonzero(in_tree)
        if members.size == 0:
            return pod
        local = np.full(n_switches, -1, dtype=np.int64)
        local[members] = np.arange(members.size)
        adjacency = coo_matrix(
            (np.ones(lower.size), (local[lower], local[upper])), shape=(members.size, members.size)
        )
        _, labels = connected_components(adjacency, directed=False)
        pod[members] = labels
        return pod

    def bisection_gbps(self) -> float:
        """Worst-case bisection bandwidth of the scale-out fabric, Gb/s per direction.

        For each tier (NIC ports, leaves, pods) the cut that puts whole units of that tier on
        either side, choosing the units with the least uplink capacity per GPU first until half
        of the GPUs are on one side, crosses that side's uplinks; the bisection is the minimum
        over tiers. A tier whose single unit holds every GPU is skipped (its uplinks are not
        crossed). Oversubscription therefore shows up as a lower per-GPU figure.
        """
        if self.n_gpus == 0 or self.link_tier.size == 0:
            return 0.0
        half_gpus = self.n_gpus / 2.0
        candidates = []
        for gpus, capacity in self._tier_units():
            if gpus.size < 2 or gpus.max() >= self.n_gpus:
                continue
            candidates.append(_cheapest_cut(gpus, capacity, half_gpus))
        return float(min(candidates)) if candidates else 0.0

    def _tier_units(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """(gpus per unit, uplink Gb/s per unit) for NIC ports, leaves and pods."""
        offset = self.n_nic_ports
        nic_gpus = self.nic_gpu_count().astype(float)
        tier0 = self.link_tier == LINK_SERVER_LEAF
        nic_capacity = np.bincount(self.link_a[tier0], weights=self.link_gbps[tier0], minlength=offset)
        n_switches = int(self.switch_type.size)
        leaf_of_nic = np.full(offset, -1, dtype=np.int64)
        leaf_of_nic[self.link_a[tier0]] = self.link_b[tier0] - offset
        connected = leaf_of_nic >= 0
        leaf_gpus = np.bincount(leaf_of_nic[connected], weights=nic_gpus[connected], minlength=n_switches)
        tier1 = self.link_tier == LINK_LEAF_SPINE
        leaf_capacity = np.bincount(
            self.link_a[tier1] - offset, weights=self.link_gbps[tier1], minlength=n_switches
        )
        leaves = np.flatnonzero(self.switch_tier == TIER_LEAF)
        units = [(nic_gpus[connected], nic_capacity[connected])]
        units.append((leaf_gpus[leaves], leaf_capacity[leaves]))
        tier2 = self.link_tier == LINK_SPINE_CORE
        if tier2.any():
            pod = self.switch_pod()
            n_pods = int(pod.max()) + 1
            pod_gpus = np.bincount(pod[leaves], weights=leaf_gpus[leaves], minlength=n_pods)
            spine_of_link = self.link_a[tier2] - offset
            pod_capacity = np.bincount(pod[spine_of_link], weights=self.link_gbps[tier2], minlength=n_pods)
            units.append((pod_gpus, pod_capacity))
        return units

    def per_gpu_bisection_gbps(self) -> float:
        """Bisection bandwidth per GPU of one half, Gb/s (NIC speed for a 1:1 rail fabric)."""
        return self.bisection_gbps() / (self.n_gpus / 2.0) if self.n_gpus else 0.0

    # ---- reporting -------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Plain numbers describing the design (the management command prints this)."""
        bisection = self.bisection_gbps()
        return {
            "generator": self.generator,
            "server": self.server.slug,
            "gpus": self.n_gpus,
            "servers": self.n_nodes,
            "racks": self.n_racks,
            "racks_by_kind": {
                name: int(count)
                for name, count in zip(
                    RACK_KINDS, np.bincount(self.rack_kind, minlength=len(RACK_KINDS)), strict=True
                )
            },
            "hall": {"rows": self.hall_rows, "cols": self.hall_cols},
            "tiers": self.n_tiers,
            "switches": self.n_switches,
            "links": self.n_links,
            "feeds": self.n_feeds,
            "it_power_kw": round(self.it_power_kw, 3),
            "bisection_gbps": round(bisection, 3),
            "per_gpu_bisection_gbps": round(bisection / (self.n_gpus / 2.0), 3) if self.n_gpus else 0.0,
        }

    # ---- consistency -----------------------------------------------------------------------
    def validate(self) -> FabricPlan:
        """Check internal consistency; raise ``FabricError`` naming the column and the rule.

        Returns the plan itself so that a generator can end with ``return plan.validate()``.
        """
        self._check_lengths()
        self._check_ranges()
        self._check_links()
        self._check_rack_space()
        return self

    def _check_lengths(self) -> None:
        groups = {
            "rack": ("rack_row", "rack_col", "rack_kind", "rack_units", "rack_budget_kw"),
            "node": ("node_rack", "node_u"),
            "switch": (
                "switch_type",
                "switch_tier",
                "switch_rack",
                "switch_u",
                "switch_group",
                "switch_rail",
                "switch_ports",
            ),
            "link": ("link_a", "link_b", "link_type", "link_gbps", "link_tier"),
            "feed": ("feed_type", "feed_side"),
            "feed_rack": ("feed_rack_feed", "feed_rack_rack"),
        }
        for group, names in groups.items():
            sizes = {name: int(np.asarray(getattr(self, name)).size) for name in names}
            if len(set(sizes.values())) > 1:
                raise FabricError(f"{group} columns: lengths differ {sizes}")
        if len(self.rack_name) != self.n_racks:
            raise FabricError(f"rack_name: {len(self.rack_name)} names for {self.n_racks} racks")
        if len(self.feed_panel) != self.n_feeds:
            raise FabricError(f"feed_panel: {len(self.feed_panel)} panels for {self.n_feeds} feeds")

    def _check_ranges(self) -> None:
        limits = {
            "node_rack": self.n_racks,
            "switch_rack": self.n_racks,
            "switch_type": len(self.switch_types),
            "switch_tier": len(SWITCH_TIERS),
            "link_type": len(self.link_types),
            "link_tier": len(LINK_TIERS),
            "link_a": self.n_vertices,
            "link_b": self.n_vertices,
            "feed_type": len(self.feed_types),
            "feed_side": len(FEED_SIDES),
            "feed_rack_feed": self.n_feeds,
            "feed_rack_rack": self.n_racks,
            "rack_kind": len(RACK_KINDS),
        }
        for name, limit in limits.items():
            column = np.asarray(getattr(self, name))
            if column.size and (column.min() < 0 or column.max() >= limit):
                raise FabricError(
                    f"{name}: indices must lie in 0..{limit - 1} (got {column.min()}..{column.max()})"
                )

    def _check_links(self) -> None:
        offset = self.n_nic_ports
        if np.any(self.link_b < offset):
            raise FabricError("link_b: the upper end of every link must be a switch vertex")
        tier0 = self.link_tier == LINK_SERVER_LEAF
        if np.any((self.link_a < offset) != tier0):
            raise FabricError("link_a: NIC ports appear exactly on server_leaf links")
        lower_tier = np.where(tier0, -1, self.switch_tier[np.maximum(self.link_a - offset, 0)])
        upper_tier = self.switch_tier[self.link_b - offset]
        if np.any(upper_tier != self.link_tier) or np.any(lower_tier[~tier0] != self.link_tier[~tier0] - 1):
            raise FabricError(
                "link_tier: a link must join adjacent switch tiers (nic-leaf, leaf-spine, spine-core)"
            )
        if np.bincount(self.link_a[tier0], minlength=offset).max(initial=0) > 1:
            raise FabricError("link_a: a NIC port may carry at most one link")
        ends = np.concatenate([self.link_a[~tier0], self.link_b]) - offset
        degree = np.bincount(ends, minlength=int(self.switch_type.size))
        over = np.flatnonzero(degree > self.switch_ports)
        if over.size:
            s = int(over[0])
            raise FabricError(
                f"switch_ports: switch {s} uses {int(degree[s])} ports but has {int(self.switch_ports[s])}"
            )
        if np.any(self.link_gbps <= 0):
            raise FabricError("link_gbps: must be > 0")

    def _check_rack_space(self) -> None:
        inside = (self.rack_row >= 0) & (self.rack_row < self.hall_rows)
        inside &= (self.rack_col >= 0) & (self.rack_col < self.hall_cols)
        if not np.all(inside):
            raise FabricError(
                f"rack_row, rack_col: racks must lie inside the {self.hall_rows}x{self.hall_cols} hall"
            )
        cells = self.rack_row * self.hall_cols + self.rack_col
        if np.unique(cells).size != cells.size:
            raise FabricError("rack_row, rack_col: two racks occupy one hall position")
        node_top = self.node_u + int(self.server.rack_units) - 1
        if self.n_nodes and (self.node_u.min() < 1 or np.any(node_top > self.rack_units[self.node_rack])):
            raise FabricError("node_u: a server does not fit inside its rack's units")
        if self.switch_type.size:
            switch_units = np.array([s.rack_units for s in self.switch_types])[self.switch_type]
            top = self.switch_u + switch_units - 1
            if self.switch_u.min() < 1 or np.any(top > self.rack_units[self.switch_rack]):
                raise FabricError("switch_u: a switch does not fit inside its rack's units")


def _cheapest_cut(gpus: np.ndarray, capacity: np.ndarray, half_gpus: float) -> float:
    """Least uplink capacity of units holding ``half_gpus`` GPUs (fractional last unit)."""
    has_gpus = gpus > 0
    gpus, capacity = gpus[has_gpus], capacity[has_gpus]
    order = np.argsort(capacity / gpus, kind="stable")
    gpus, capacity = gpus[order], capacity[order]
    cumulative = np.cumsum(gpus)
    last = int(np.searchsorted(cumulative, half_gpus, side="left"))
    before_gpus = cumulative[last - 1] if last > 0 else 0.0
    before_capacity = capacity[:last].sum()
    fraction = (half_gpus - before_gpus) / gpus[last]
    return float(before_capacity + fraction * capacity[last])
