"""Pure fabric generators: design parameters -> ``FabricPlan`` (column arrays, no Django).

Three generators share one leaf/spine/core builder and one hall layout:

- ``rail-optimized``: NVIDIA DGX SuperPOD-style scalable units (SU). NIC k of every node of an SU
  goes to the SU's rail-k leaf; leaves fan out to spines (2 tiers) or to pods of spines joined
  by a core tier (3 tiers, k-ary fat-tree wiring).
- ``nvl72``: GB200 NVL72 racks (18 compute trays + 9 NVLink switch trays, one 72-GPU scale-up
  domain per rack) with the same rail-optimized scale-out fabric over the trays' NICs.
- ``fat-tree``: a plain 2- or 3-tier fat-tree in which all NICs of a node share one leaf.

Everything is built with ``np.repeat``/``np.arange``/broadcasting: a 16,384-node plan is arrays of
about half a million rows built in well under a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from topology.fabric.layout import HallSwitches, layout_hall
from topology.fabric.plan import (
    LINK_LEAF_SPINE,
    LINK_SERVER_LEAF,
    LINK_SPINE_CORE,
    TIER_CORE,
    TIER_LEAF,
    TIER_SCALEUP,
    TIER_SPINE,
    FabricError,
    FabricPlan,
    switch_optics_w,
)
from topology.fabric.specs import Catalog, ServerSpec, SwitchSpec

GENERATORS = ("rail-optimized", "nvl72", "fat-tree")
MAX_NODES = 1_000_000
# NVIDIA DGX SuperPOD (H100) reference architecture: a scalable unit is 32 DGX nodes.
DEFAULT_SU_NODES = 32
# Assumed: a switch port may be split in two at half speed (QM9700: 64x NDR400 or 128x NDR200;
# SN5600: 64x 800GbE or 128x 400GbE, per their datasheets); wider splits are not assumed.
MAX_BREAKOUT = 2
# NVIDIA GB200 NVL72 datasheet: 18 compute trays and 9 NVLink switch trays per rack.
NVL72_TRAYS_PER_RACK = 18
NVL72_SWITCH_TRAYS = 9
NVL72_SWITCH_SLUG = "nvlink-switch"
SCALE_OUT_ROLES = ("leaf", "spine", "core")


@dataclass(frozen=True)
class _Tree:
    """A leaf/spine/core fabric in local switch numbering (leaves, then spines, then cores)."""

    n_tiers: int
    n_leaves: int
    spine_pod: np.ndarray
    core_group: np.ndarray
    leaf_spine: tuple[np.ndarray, np.ndarray]  # (leaf id, spine id) per link
    spine_core: tuple[np.ndarray, np.ndarray]  # (spine id, core id) per link


@dataclass(frozen=True)
class _Fabric:
    """The chosen scale-out switch and how its ports are used."""

    switch: SwitchSpec
    breakout: int
    ports: int
    port_gbps: float
    nodes_per_leaf_group: int  # SU size (rail) or nodes per leaf (fat tree)
    leaf_up: int


# One keyword per generator parameter: the scenario file's cluster keys, and plan.params, so that
# generate(plan.generator, **plan.params) rebuilds a plan.
def generate(  # noqa: PLR0913
    name: str,
    *,
    catalog: Catalog,
    server: str,
    nodes: int,
    oversubscription: float = 1.0,
    nic_gbps: float | None = None,
    su_nodes: int | None = None,
    switch: str | None = None,
    tiers: int | None = None,
    feed: str | None = None,
    rack_units: int | None = None,
) -> FabricPlan:
    """Generate a cluster design.

    Parameters
    ----------
    name : "rail-optimized" | "nvl72" | "fat-tree"
    catalog : the hardware catalog (``topology.fabric.specs.load_catalog()``)
    server : server slug; every node is of this type
    nodes : number of servers (compute trays for nvl72, a multiple of 18 there)
    oversubscription : leaf down:up bandwidth ratio, >= 1 (1.0 = non-blocking)
    nic_gbps : NIC speed override, Gb/s (default: the server's)
    su_nodes : nodes per scalable unit (rail designs) or per leaf (fat-tree); default the
        largest that fits the switch radix at the ratio, capped at 32 for rail designs
    switch : scale-out switch slug (default ``catalog.switch_for_gbps(nic_gbps)``; when that
        one cannot connect ``nodes`` in 3 tiers, the first catalog switch that can)
    tiers : 2 or 3 (default the smallest that fits; 1 = a single leaf, when one suffices)
    feed : feed slug for every rack (default per rack: fewest feeds per side, then the smallest
        capacity that carries the rack budget)
    rack_units : rack height in U (default 42; 48 for nvl72 racks)

    Returns
    -------
    FabricPlan, validated. ``plan.params`` holds these keyword arguments after defaults, so
    ``generate(plan.generator, catalog=catalog, **plan.params)`` rebuilds the same plan.

    Raises
    ------
    FabricError (a ValueError) naming the parameter and its limit; CatalogError for unknown slugs.
    """
    request = _Request(
        name=str(name).replace("_", "-"),  # "rail_optimized" and "rail-optimized" both work
        server=server,
        nodes=nodes,
        oversubscription=oversubscription,
        nic_gbps=nic_gbps,
        su_nodes=su_nodes,
        switch=switch or None,  # a blank form field means "default"
        tiers=tiers,
        feed=feed or None,
        rack_units=rack_units,
    )
    server_spec, nic, fabric = _buildable(request, catalog)
    tree_and_links = _wire(server_spec, nodes, fabric, tiers, request.rail)
    params = {
        "server": server_spec.slug,
        "nodes": int(nodes),
        "oversubscription": float(oversubscription),
        "nic_gbps": float(nic),
        "su_nodes": int(fabric.nodes_per_leaf_group),
        "switch": fabric.switch.slug,
        "tiers": int(tree_and_links[0].n_tiers),
        "feed": request.feed,
        "rack_units": rack_units,
    }
    notes = []
    if request.switch is None and fabric.switch.slug != catalog.switch_for_gbps(nic).slug:
        notes.append(
            f"switch: {catalog.switch_for_gbps(nic).slug} cannot connect {nodes} nodes in 3 tiers; "
            f"chose {fabric.switch.slug}"
        )
    return _assemble(request, catalog, server_spec, params, fabric, tree_and_links, notes)


@dataclass(frozen=True)
class _Request:
    """The parameters of one generator call (``generate``'s keyword arguments, cleaned)."""

    name: str
    server: str
    nodes: int
    oversubscription: float = 1.0
    nic_gbps: float | None = None
    su_nodes: int | None = None
    switch: str | None = None
    tiers: int | None = None
    feed: str | None = None
    rack_units: int | None = None

    @property
    def rail(self) -> bool:
        """Rail-optimized wiring (a leaf per NIC rail) rather than a fat tree."""
        return self.name != "fat-tree"


def check_buildable(  # noqa: PLR0913 (generate's parameters, without the layout ones)
    name: str,
    *,
    catalog: Catalog,
    server: str,
    nodes: int,
    oversubscription: float = 1.0,
    nic_gbps: float | None = None,
    su_nodes: int | None = None,
    switch: str | None = None,
    tiers: int | None = None,
) -> None:
    """Raise the FabricError ``generate`` would raise for these parameters, without building the
    plan (microseconds: the parameter rules and the switch sizing only). This is the real node
    limit of a server and switch: what a scenario is checked against when it is saved."""
    request = _Request(
        name=str(name).replace("_", "-"),
        server=server,
        nodes=nodes,
        oversubscription=oversubscription,
        nic_gbps=nic_gbps,
        su_nodes=su_nodes,
        switch=switch or None,
        tiers=tiers,
    )
    _buildable(request, catalog)


def _buildable(request: _Request, catalog: Catalog):
    """The server, its NIC speed and the scale-out fabric of a request (``FabricError`` naming
    the parameter when it cannot be built)."""
    name = request.name
    if name not in GENERATORS:
        raise FabricError(f"generator: unknown {name!r} (known: {', '.join(GENERATORS)})")
    server_spec = catalog.server(request.server)
    nic = _check_params(server_spec, request)
    if name == "nvl72":
        _check_nvl72(server_spec, request.nodes)
    elif server_spec.scaleup_domain_gpus > server_spec.gpus_per_server:
        raise FabricError(
            f"server: {server_spec.slug} trays form {server_spec.scaleup_domain_gpus}-GPU racks; "
            "use the nvl72 generator"
        )
    return server_spec, nic, _choose_fabric(catalog, server_spec, request, nic)


# ---- parameter checks ------------------------------------------------------------------------
def _check_params(server: ServerSpec, request: _Request) -> float:
    """The request's numbers are in range; the NIC speed (the server's unless overridden)."""
    _check_nodes(request.nodes)
    oversubscription, nic_gbps = request.oversubscription, request.nic_gbps
    if not isinstance(oversubscription, int | float) or not math.isfinite(oversubscription):
        raise FabricError(f"oversubscription: must be a number ≥ 1 (got {oversubscription!r})")
    if oversubscription < 1:
        raise FabricError(f"oversubscription: must be ≥ 1 (got {oversubscription})")
    if nic_gbps is not None and (not isinstance(nic_gbps, int | float) or not math.isfinite(nic_gbps)):
        raise FabricError(f"nic_gbps: must be a number > 0 (got {nic_gbps!r})")
    if nic_gbps is not None and nic_gbps <= 0:
        raise FabricError(f"nic_gbps: must be > 0 (got {nic_gbps})")
    _check_shape(request)
    if server.nics_per_server < 1:
        raise FabricError(f"server: {server.slug} has no scale-out NIC")
    return float(nic_gbps if nic_gbps is not None else server.nic_gbps)


def _check_nodes(nodes) -> None:
    if isinstance(nodes, bool) or not isinstance(nodes, int | np.integer):
        raise FabricError(f"nodes: must be an integer (got {nodes!r})")
    if nodes < 1:
        raise FabricError(f"nodes: must be ≥ 1 (got {nodes})")
    if nodes > MAX_NODES:
        raise FabricError(f"nodes: must be ≤ {MAX_NODES:,} (got {nodes:,})")


def _check_shape(request: _Request) -> None:
    """Scalable-unit size, tiers and rack height, when given."""
    su_nodes, tiers, rack_units = request.su_nodes, request.tiers, request.rack_units
    if su_nodes is not None and (not isinstance(su_nodes, int | np.integer) or su_nodes < 1):
        raise FabricError(f"su_nodes: must be an integer ≥ 1 (got {su_nodes!r})")
    if tiers not in (None, 1, 2, 3):
        raise FabricError(f"tiers: must be 2 or 3 (got {tiers!r})")
    if rack_units is not None and (not isinstance(rack_units, int | np.integer) or not 1 <= rack_units <= 60):
        raise FabricError(f"rack_units: must be an integer in 1..60 (got {rack_units!r})")


def _check_nvl72(server: ServerSpec, nodes: int) -> None:
    if server.gpus_per_server * NVL72_TRAYS_PER_RACK != server.scaleup_domain_gpus:
        raise FabricError(
            f"server: nvl72 needs a compute tray whose {NVL72_TRAYS_PER_RACK} trays form one scale-up "
            f"domain ({server.slug} has {server.gpus_per_server} GPUs, domain {server.scaleup_domain_gpus})"
        )
    if nodes % NVL72_TRAYS_PER_RACK:
        raise FabricError(
            f"nodes: nvl72 counts compute trays and must be a multiple of {NVL72_TRAYS_PER_RACK} "
            f"(got {nodes})"
        )


# ---- switch choice and leaf sizing -----------------------------------------------------------
def _choose_fabric(catalog: Catalog, server: ServerSpec, request: _Request, nic: float) -> _Fabric:
    """The scale-out switch and leaf port split; raise when the fabric cannot be built."""
    nodes, ratio, su_nodes = request.nodes, request.oversubscription, request.su_nodes
    switch, tiers, rail = request.switch, request.tiers, request.rail
    if switch is not None:
        spec = catalog.switch(switch)
        fabric = _size_leaf(spec, server, nic, ratio, su_nodes, rail)
        _check_fits(fabric, server, nodes, tiers, rail)
        return fabric
    default = catalog.switch_for_gbps(nic)
    fabric = _size_leaf(default, server, nic, ratio, su_nodes, rail)
    if _max_nodes(fabric, server, 3, rail) >= nodes or tiers in (1, 2):
        _check_fits(fabric, server, nodes, tiers, rail)
        return fabric
    others = [
        s
        for s in catalog.switches.values()
        if set(SCALE_OUT_ROLES) <= set(s.roles) and s.port_gbps >= nic and s.slug != default.slug
    ]
    for spec in sorted(others, key=lambda s: (s.port_gbps, -s.radix, s.slug)):
        try:
            candidate = _size_leaf(spec, server, nic, ratio, su_nodes, rail)
        except FabricError:
            continue
        if _max_nodes(candidate, server, 3, rail) >= nodes:
            return candidate
    _check_fits(fabric, server, nodes, tiers, rail)
    return fabric


def _size_leaf(
    spec: SwitchSpec, server: ServerSpec, nic: float, ratio: float, su_nodes: int | None, rail: bool
) -> _Fabric:
    if "leaf" not in spec.roles:
        raise FabricError(f"switch: {spec.slug} cannot be a leaf (roles: {', '.join(spec.roles)})")
    if spec.port_gbps < nic:
        raise FabricError(
            f"nic_gbps: {nic:g} Gb/s NICs are faster than the {spec.port_gbps:g} Gb/s ports of {spec.slug}"
        )
    breakout = int(min(MAX_BREAKOUT, spec.port_gbps // nic))
    ports = spec.radix * breakout
    nics = server.nics_per_server
    per_node_down = 1 if rail else nics  # a rail leaf takes one NIC per node, a fat-tree leaf all

    def fits(n: int) -> bool:
        down = n * per_node_down
        return down + math.ceil(down / ratio) <= ports

    largest = max((n for n in range(1, ports + 1) if fits(n)), default=0)
    if largest == 0:
        raise FabricError(f"switch: {spec.slug} ({ports} ports) cannot serve one {server.slug} node per leaf")
    if su_nodes is None:
        group = min(DEFAULT_SU_NODES, largest) if rail else largest
        trays = server.scaleup_domain_gpus // server.gpus_per_server
        if rail and trays > 1 and group >= trays:
            group -= group % trays  # an SU made of whole scale-up racks
    elif su_nodes > largest:
        raise FabricError(
            f"su_nodes: at most {largest} nodes per leaf fit {spec.slug} ({ports} ports) "
            f"at {ratio:g}:1 (got {su_nodes})"
        )
    else:
        group = int(su_nodes)
    up = math.ceil(group * per_node_down / ratio)
    return _Fabric(spec, breakout, ports, spec.port_gbps / breakout, group, up)


def _max_leaves(fabric: _Fabric, n_tiers: int) -> int:
    # 2 tiers: every leaf reaches every spine port group; 3 tiers: at most `ports` pods of
    # ports//2 leaves (each core needs a link to every pod).
    if n_tiers == 1:
        return 1
    return fabric.ports if n_tiers == 2 else fabric.ports * (fabric.ports // 2)


def _max_nodes(fabric: _Fabric, server: ServerSpec, n_tiers: int, rail: bool) -> int:
    leaves = _max_leaves(fabric, n_tiers)
    groups = leaves // server.nics_per_server if rail else leaves
    return groups * fabric.nodes_per_leaf_group


def _check_fits(fabric: _Fabric, server: ServerSpec, nodes: int, tiers: int | None, rail: bool) -> None:
    n_tiers = tiers or 3
    limit = _max_nodes(fabric, server, n_tiers, rail)
    if nodes > limit:
        field = "tiers" if tiers in (1, 2) else "nodes"
        raise FabricError(
            f"{field}: at most {limit:,} {server.slug} nodes fit a {n_tiers}-tier fabric of "
            f"{fabric.switch.slug} ({fabric.ports} ports of {fabric.port_gbps:g} Gb/s, "
            f"{fabric.nodes_per_leaf_group} nodes per leaf group) (got {nodes:,}); "
            "choose a switch with more ports or fewer nodes"
        )


# ---- wiring ----------------------------------------------------------------------------------
def _smallest_divisor_at_least(total: int, minimum: float) -> int:
    """Smallest divisor of ``total`` that is ≥ ``minimum`` (keeps link multiplicities equal)."""
    divisors = np.arange(1, total + 1)
    divisors = divisors[(total % divisors == 0) & (divisors >= minimum)]
    return int(divisors[0])


def _upper_tiers(n_leaves: int, up: int, ports: int, tiers: int | None, leaf_position: np.ndarray) -> _Tree:
    """Spines and cores above ``n_leaves`` leaves with ``up`` uplinks each.

    2 tiers: S spines (the smallest divisor of ``up`` with S*ports ≥ n_leaves*up), each leaf
    wired to every spine with up/S links. 3 tiers: balanced pods of at most ports//2
    leaves (consecutive in ``leaf_position`` order) with ``up`` spines each (one link per
    leaf and spine); spine k of every pod goes to core group k of C cores (the smallest
    divisor of the spine's ports//2 uplinks that gives each core no more than ``ports``
    links), the k-ary fat-tree wiring.
    """
    leaves = np.arange(n_leaves)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    n_tiers = tiers or (1 if n_leaves == 1 else 2 if n_leaves <= ports else 3)
    if n_tiers == 1:
        return _Tree(1, n_leaves, np.zeros(0, np.int64), np.zeros(0, np.int64), empty, empty)
    if n_tiers == 2:
        n_spines = _smallest_divisor_at_least(up, n_leaves * up / ports)
        leaf = np.repeat(leaves, up)
        spine = np.tile(np.arange(up) % n_spines, n_leaves)
        return _Tree(2, n_leaves, np.zeros(n_spines, np.int64), np.zeros(0, np.int64), (leaf, spine), empty)
    leaves_per_pod = ports // 2
    spine_up = ports - leaves_per_pod
    n_pods = math.ceil(n_leaves / leaves_per_pod)
    pod_of_leaf = leaf_position * n_pods // n_leaves  # balanced pods, each <= leaves_per_pod
    n_spines = n_pods * up
    leaf = np.repeat(leaves, up)
    spine = pod_of_leaf[leaf] * up + np.tile(np.arange(up), n_leaves)
    cores_per_group = _smallest_divisor_at_least(spine_up, n_pods * spine_up / ports)
    spine_ids = np.arange(n_spines)
    lower = np.repeat(spine_ids, spine_up)
    core = (lower % up) * cores_per_group + np.tile(np.arange(spine_up) % cores_per_group, n_spines)
    return _Tree(
        3,
        n_leaves,
        spine_ids // up,
        np.repeat(np.arange(up), cores_per_group),
        (leaf, spine),
        (lower, core),
    )


def _wire(
    server: ServerSpec, nodes: int, fabric: _Fabric, tiers: int | None, rail: bool
) -> tuple[_Tree, np.ndarray]:
    """The tree and, per NIC port, its leaf id (NIC port p = node*nics + k)."""
    nics = server.nics_per_server
    group = fabric.nodes_per_leaf_group
    n_groups = math.ceil(nodes / group)
    port = np.arange(nodes * nics)
    node, rail_index = port // nics, port % nics
    if rail:
        leaf_of_port = (node // group) * nics + rail_index
        leaf_id = np.arange(n_groups * nics)
        position = (leaf_id % nics) * n_groups + leaf_id // nics  # rail-major pods
    else:
        leaf_of_port = node // group
        position = np.arange(n_groups)
    n_leaves = int(position.size)
    if tiers == 1 and n_leaves > 1:
        raise FabricError(
            f"tiers: 1 tier is a single leaf of {fabric.nodes_per_leaf_group} nodes (need {n_leaves} leaves)"
        )
    if tiers == 2 and n_leaves > fabric.ports:
        raise FabricError(
            f"tiers: 2 tiers of {fabric.switch.slug} connect at most {fabric.ports} leaves (need {n_leaves})"
        )
    tree = _upper_tiers(n_leaves, fabric.leaf_up, fabric.ports, tiers, position)
    return tree, leaf_of_port


# ---- assembly --------------------------------------------------------------------------------
def _switch_columns(
    name: str, tree: _Tree, fabric: _Fabric, server: ServerSpec, nodes: int, scaleup: SwitchSpec | None
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Switch columns in the order leaves, spines, cores, scale-up trays; and each leaf's
    first node (its home for the floor layout)."""
    nics = server.nics_per_server
    n_spines, n_cores = tree.spine_pod.size, tree.core_group.size
    n_scaleup = (nodes // NVL72_TRAYS_PER_RACK) * NVL72_SWITCH_TRAYS if scaleup else 0
    n_fabric = tree.n_leaves + n_spines + n_cores
    leaf_ids = np.arange(tree.n_leaves)
    if name == "fat-tree":
        leaf_group, leaf_rail = leaf_ids.copy(), np.full(tree.n_leaves, -1)
    else:
        leaf_group, leaf_rail = leaf_ids // nics, leaf_ids % nics
    tier = [TIER_LEAF, TIER_SPINE, TIER_CORE, TIER_SCALEUP]
    counts = [tree.n_leaves, n_spines, n_cores, n_scaleup]
    domain_of_tray = np.arange(n_scaleup) // NVL72_SWITCH_TRAYS
    columns = {
        "switch_type": np.repeat(np.array([0, 1], np.int64), [n_fabric, n_scaleup]),
        "switch_tier": np.repeat(np.array(tier, np.int64), counts),
        "switch_group": np.concatenate([leaf_group, tree.spine_pod, tree.core_group, domain_of_tray]),
        "switch_rail": np.concatenate([leaf_rail, np.full(n_spines + n_cores + n_scaleup, -1)]),
        "switch_ports": np.repeat(
            np.array([fabric.ports, scaleup.radix if scaleup else 0], np.int64), [n_fabric, n_scaleup]
        ),
    }
    columns = {key: value.astype(np.int64) for key, value in columns.items()}
    return columns, leaf_group * fabric.nodes_per_leaf_group


def _link_columns(
    tree: _Tree, leaf_of_port: np.ndarray, nic_gbps: float, port_gbps: float, fabric_type: int
) -> dict[str, np.ndarray]:
    """Link columns: NIC-leaf links (one per NIC port, in port order), leaf-spine, spine-core.

    Link type 0 is the NIC optic, ``fabric_type`` the switch-to-switch one.
    """
    n_ports = leaf_of_port.size
    spine0 = tree.n_leaves
    core0 = spine0 + tree.spine_pod.size
    leaf_spine_a, leaf_spine_b = tree.leaf_spine
    spine_core_a, spine_core_b = tree.spine_core
    link_a = np.concatenate([np.arange(n_ports), n_ports + leaf_spine_a, n_ports + spine0 + spine_core_a])
    link_b = np.concatenate(
        [n_ports + leaf_of_port, n_ports + spine0 + leaf_spine_b, n_ports + core0 + spine_core_b]
    )
    tiers = np.array([LINK_SERVER_LEAF, LINK_LEAF_SPINE, LINK_SPINE_CORE], np.int64)
    link_tier = np.repeat(tiers, [n_ports, leaf_spine_a.size, spine_core_a.size])
    nic = link_tier == LINK_SERVER_LEAF
    return {
        "link_a": link_a.astype(np.int64),
        "link_b": link_b.astype(np.int64),
        "link_type": np.where(nic, 0, fabric_type).astype(np.int64),
        "link_gbps": np.where(nic, nic_gbps, port_gbps).astype(float),
        "link_tier": link_tier,
    }


def _assemble(
    request: _Request,
    catalog: Catalog,
    server: ServerSpec,
    params: dict[str, Any],
    fabric: _Fabric,
    tree_and_links: tuple[_Tree, np.ndarray],
    notes: list[str],
) -> FabricPlan:
    """The validated plan: switch and link columns, then the hall the racks are laid out in."""
    tree, leaf_of_port = tree_and_links
    nodes = int(params["nodes"])
    scaleup = catalog.switch(NVL72_SWITCH_SLUG) if request.name == "nvl72" else None
    switches, leaf_home = _switch_columns(request.name, tree, fabric, server, nodes, scaleup)
    link_types, links = _links(catalog, tree, leaf_of_port, float(params["nic_gbps"]), fabric)
    optics_w = switch_optics_w(
        int(switches["switch_type"].size),
        link_a=links["link_a"],
        link_b=links["link_b"],
        link_w=np.array([t.power_w for t in link_types], dtype=float)[links["link_type"]],
        n_nic_ports=nodes * server.nics_per_server,
    )
    hall_switches = HallSwitches(
        fabric_switch=fabric.switch,
        leaf_home_node=leaf_home,
        n_upper_switches=tree.spine_pod.size + tree.core_group.size,
        scaleup_switch=scaleup,
        scaleup_per_rack=NVL72_SWITCH_TRAYS if scaleup else 0,
        optics_w=optics_w,
    )
    hall = layout_hall(
        catalog=catalog,
        server=server,
        nodes=nodes,
        rack_units=request.rack_units,
        switches=hall_switches,
        feed=request.feed,
    )
    params["rack_units"] = int(hall.units)
    plan = FabricPlan(
        generator=request.name,
        params=params,
        hall_rows=hall.hall_rows,
        hall_cols=hall.hall_cols,
        server=server,
        gpu=catalog.gpu(server.gpu),
        switch_types=(fabric.switch,) + ((scaleup,) if scaleup else ()),
        link_types=link_types,
        notes=tuple(notes),
        **_hall_columns(hall),
        **switches,
        **links,
    )
    return plan.validate()


def _links(catalog: Catalog, tree: _Tree, leaf_of_port: np.ndarray, nic_gbps: float, fabric: _Fabric):
    """The link types (NIC cables, then switch-to-switch ones when they differ) and columns."""
    nic_link = catalog.link_for_gbps(nic_gbps)
    fabric_link = catalog.link_for_gbps(fabric.port_gbps)
    link_types = (nic_link,) if fabric_link.slug == nic_link.slug else (nic_link, fabric_link)
    return link_types, _link_columns(tree, leaf_of_port, nic_gbps, fabric.port_gbps, len(link_types) - 1)


def _hall_columns(hall) -> dict[str, Any]:
    """The plan's rack, position and feed columns of a laid-out hall."""
    names = (
        "feed_types",
        "rack_name",
        "rack_row",
        "rack_col",
        "rack_kind",
        "rack_units",
        "rack_budget_kw",
        "node_rack",
        "node_u",
        "switch_rack",
        "switch_u",
        "feed_type",
        "feed_side",
        "feed_panel",
        "feed_rack_feed",
        "feed_rack_rack",
    )
    return {name: getattr(hall, name) for name in names}
