"""Hall floor layout of a generated fabric: racks on a grid, U positions, rack budgets, 2N feeds.

Compute racks fill rows of ``COMPUTE_RACKS_PER_ROW``; each row ends with network racks holding
the leaves of the scalable units whose first node sits in that row; spines and cores fill
network rows after the compute rows. Logical row i sits on hall grid row 2*i, the odd grid rows
being the aisles between rack rows. Every rack gets an A and a B side (2N): each side alone
carries the rack budget, with several feeds per side when one feed cannot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from topology.fabric.plan import RACK_COMPUTE, RACK_NETWORK, FabricError, rack_nameplate_w
from topology.fabric.specs import Catalog, FeedSpec, ServerSpec, SwitchSpec

# Assumed: ~16 racks of 600 mm make a ~10 m row, a common hall row length between cooling units.
COMPUTE_RACKS_PER_ROW = 16
# Assumed: rack budget = nameplate IT load + 10% headroom for optics, fans at full speed and
# PDU losses (nameplate already is the servers' maximum draw).
RACK_BUDGET_MARGIN = 0.10
# Assumed: 42U is the common data-centre rack; NVL72 ships in a 48U MGX rack (NVIDIA GB200 NVL72
# datasheet shows a 48U rack with power shelves).
DEFAULT_RACK_UNITS = 42
NVL72_RACK_UNITS = 48


@dataclass(frozen=True, eq=False)
class HallLayout:
    """Rack, position and feed columns of a plan (see ``FabricPlan`` for the shapes)."""

    units: int
    hall_rows: int
    hall_cols: int
    rack_name: list[str]
    rack_row: np.ndarray
    rack_col: np.ndarray
    rack_kind: np.ndarray
    rack_units: np.ndarray
    rack_budget_kw: np.ndarray
    node_rack: np.ndarray
    node_u: np.ndarray
    switch_rack: np.ndarray  # leaves, then spines and cores, then scale-up trays
    switch_u: np.ndarray
    feed_types: tuple[FeedSpec, ...]
    feed_type: np.ndarray
    feed_side: np.ndarray
    feed_panel: list[str]
    feed_rack_feed: np.ndarray
    feed_rack_rack: np.ndarray


@dataclass(frozen=True, eq=False)
class HallSwitches:
    """The switches a hall places (in the plan's switch order: leaves, spines and cores,
    scale-up trays).

    Attributes
    ----------
    fabric_switch : SwitchSpec
        The scale-out switch (leaves, spines, cores).
    leaf_home_node : ndarray (n_leaves,)
        The first node a leaf serves; the leaf sits in that node's row.
    n_upper_switches : int
        Spines + cores, placed in network rows after the compute rows.
    scaleup_switch : SwitchSpec, optional
        The NVLink switch tray of an NVL72 rack.
    scaleup_per_rack : int
        NVLink switch trays per compute rack (9 for NVL72, else 0).
    optics_w : ndarray (S,), optional
        Transceiver power at each switch (``plan.switch_optics_w``); counted in the budgets.
    """

    fabric_switch: SwitchSpec
    leaf_home_node: np.ndarray
    n_upper_switches: int
    scaleup_switch: SwitchSpec | None = None
    scaleup_per_rack: int = 0
    optics_w: np.ndarray | None = None


def layout_hall(
    *,
    catalog: Catalog,
    server: ServerSpec,
    nodes: int,
    rack_units: int | None,
    switches: HallSwitches,
    feed: str | None,
) -> HallLayout:
    """Place nodes, switches and racks on the hall grid and give every rack its 2N feeds."""
    units = rack_units or (NVL72_RACK_UNITS if switches.scaleup_per_rack else DEFAULT_RACK_UNITS)
    fabric_switch = switches.fabric_switch
    per_rack = _servers_per_rack(server, units, switches.scaleup_switch, switches.scaleup_per_rack)
    per_network_rack = units // fabric_switch.rack_units
    if per_network_rack < 1:
        raise FabricError(
            f"rack_units: a {fabric_switch.slug} needs {fabric_switch.rack_units}U (got {units})"
        )
    compute = _compute_racks(server, nodes, per_rack)
    racks = _rack_grid(compute, switches, per_rack, per_network_rack)
    scaleup_rack, scaleup_u = _scaleup_trays(server, compute["n"], switches, per_rack)
    n_racks = racks["row"].size
    switch_rack = np.concatenate([racks["switch_rack"], scaleup_rack]).astype(np.int64)
    budget_kw = _rack_budget_kw(catalog, server, switches, n_racks, compute["node_rack"], switch_rack)
    rack_row, rack_col = racks["row"], racks["col"]
    names = [f"R{r + 1:02d}-{c + 1:02d}" for r, c in zip(rack_row.tolist(), rack_col.tolist(), strict=True)]
    kind = np.repeat(np.array([RACK_COMPUTE, RACK_NETWORK], np.int64), [compute["n"], n_racks - compute["n"]])
    return HallLayout(
        units=units,
        hall_rows=2 * (int(rack_row.max()) + 1) - 1,
        hall_cols=int(rack_col.max()) + 1,
        rack_name=names,
        rack_row=2 * rack_row,
        rack_col=rack_col,
        rack_kind=kind,
        rack_units=np.full(n_racks, units, np.int64),
        rack_budget_kw=budget_kw,
        node_rack=compute["node_rack"].astype(np.int64),
        node_u=compute["node_u"].astype(np.int64),
        switch_rack=switch_rack,
        switch_u=np.concatenate([racks["switch_u"], scaleup_u]).astype(np.int64),
        **_feeds(catalog, feed, budget_kw, rack_row),
    )


def _compute_racks(server: ServerSpec, nodes: int, per_rack: int) -> dict:
    """Compute racks in rows of ``COMPUTE_RACKS_PER_ROW``: their rows and columns, each node's
    rack and U position."""
    n_compute = math.ceil(nodes / per_rack)
    width = min(n_compute, COMPUTE_RACKS_PER_ROW)
    node = np.arange(nodes)
    return {
        "n": n_compute,
        "width": width,
        "row": np.arange(n_compute) // width,
        "col": np.arange(n_compute) % width,
        "node_rack": node // per_rack,
        "node_u": 1 + (node % per_rack) * server.rack_units,
    }


def _rack_grid(compute: dict, switches: HallSwitches, per_rack: int, per_network_rack: int) -> dict:
    """Every rack's logical row and column (compute racks, then the network racks ending each
    row, then the spine and core rows), and the rack and U of each scale-out switch."""
    compute_row, width = compute["row"], compute["width"]
    switch_units = switches.fabric_switch.rack_units
    leaf_row = (switches.leaf_home_node // per_rack) // width
    leaves = _row_end_racks(leaf_row, compute_row, per_network_rack, switch_units)
    hall_width = max(width, int(leaves["row_width"].max()))
    first_upper_row = int(compute_row[-1]) + 1
    upper = _network_rows(
        switches.n_upper_switches, per_network_rack, switch_units, hall_width, first_upper_row
    )
    n_compute, n_row_network = compute["n"], leaves["row"].size
    return {
        "row": np.concatenate([compute_row, leaves["row"], upper["row"]]).astype(np.int64),
        "col": np.concatenate([compute["col"], leaves["col"], upper["col"]]).astype(np.int64),
        "switch_rack": np.concatenate(
            [n_compute + leaves["switch_rack"], n_compute + n_row_network + upper["switch_rack"]]
        ),
        "switch_u": np.concatenate([leaves["switch_u"], upper["switch_u"]]),
    }


def _scaleup_trays(server: ServerSpec, n_compute: int, switches: HallSwitches, per_rack: int):
    """Rack and U of every NVLink switch tray, above the compute trays of its rack."""
    per_compute_rack = switches.scaleup_per_rack
    tray = np.arange(n_compute * per_compute_rack)
    tray_units = switches.scaleup_switch.rack_units if switches.scaleup_switch else 0
    rack = tray // max(per_compute_rack, 1)
    u = 1 + per_rack * server.rack_units + (tray % max(per_compute_rack, 1)) * tray_units
    return rack, u


def _rack_budget_kw(
    catalog, server, switches: HallSwitches, n_racks: int, node_rack, switch_rack
) -> np.ndarray:
    """Nameplate IT load of every rack (servers, switches, their optics) with the margin (kW)."""
    n_scaleup = switch_rack.size - switches.leaf_home_node.size - switches.n_upper_switches
    scaleup_w = switches.scaleup_switch.power_w if switches.scaleup_switch else 0.0
    switch_power_w = np.concatenate(
        [
            np.full(switches.leaf_home_node.size + switches.n_upper_switches, switches.fabric_switch.power_w),
            np.full(n_scaleup, scaleup_w),
        ]
    )
    if switches.optics_w is not None:
        switch_power_w = switch_power_w + switches.optics_w
    it_w = rack_nameplate_w(
        n_racks,
        node_rack=node_rack,
        node_w=np.full(node_rack.size, catalog.server_power_w(server.slug)),
        switch_rack=switch_rack,
        switch_w=switch_power_w,
    )
    return it_w * (1.0 + RACK_BUDGET_MARGIN) / 1000.0


def _row_end_racks(
    switch_row: np.ndarray, compute_row: np.ndarray, per_rack: int, switch_units: int
) -> dict[str, np.ndarray]:
    """Network racks appended to each compute row for the switches homed in that row.

    Returns per new rack its ``row`` and ``col`` (after the row's compute racks), per switch
    its ``switch_rack`` (numbered from 0 over the new racks) and ``switch_u``, and per row
    ``row_width`` (compute + network racks).
    """
    n_rows = int(compute_row.max()) + 1
    per_row = np.bincount(switch_row, minlength=n_rows)
    order = np.argsort(switch_row, kind="stable")
    rank = np.empty(switch_row.size, np.int64)
    rank[order] = np.arange(switch_row.size) - (np.cumsum(per_row) - per_row)[switch_row[order]]
    racks_in_row = -(-per_row // per_rack)
    first_rack = np.cumsum(racks_in_row) - racks_in_row
    rack_row = np.repeat(np.arange(n_rows), racks_in_row)
    compute_in_row = np.bincount(compute_row, minlength=n_rows)
    return {
        "row": rack_row,
        "col": compute_in_row[rack_row] + np.arange(rack_row.size) - first_rack[rack_row],
        "switch_rack": first_rack[switch_row] + rank // per_rack,
        "switch_u": 1 + (rank % per_rack) * switch_units,
        "row_width": compute_in_row + racks_in_row,
    }


def _network_rows(
    n_switches: int, per_rack: int, switch_units: int, width: int, first_row: int
) -> dict[str, np.ndarray]:
    """Racks of spines and cores filling rows of ``width`` from ``first_row`` on."""
    n_racks = math.ceil(n_switches / per_rack)
    switch = np.arange(n_switches)
    rack = np.arange(n_racks)
    return {
        "row": first_row + rack // width,
        "col": rack % width,
        "switch_rack": switch // per_rack,
        "switch_u": 1 + (switch % per_rack) * switch_units,
    }


def _servers_per_rack(
    server: ServerSpec, units: int, scaleup: SwitchSpec | None, scaleup_per_rack: int
) -> int:
    if scaleup is not None:
        needed = server.servers_per_rack * server.rack_units + scaleup_per_rack * scaleup.rack_units
        if needed > units:
            raise FabricError(
                f"rack_units: an NVL72 rack needs {needed}U for {server.servers_per_rack} trays and "
                f"{scaleup_per_rack} switch trays (got {units})"
            )
        return server.servers_per_rack
    per_rack = min(server.servers_per_rack, units // server.rack_units)
    if per_rack < 1:
        raise FabricError(f"rack_units: a {server.slug} needs {server.rack_units}U (got {units})")
    return per_rack


def _feeds(catalog: Catalog, feed: str | None, budget_kw: np.ndarray, logical_row: np.ndarray) -> dict:
    """2N feeds per rack: per side the fewest feeds of one type (then the smallest type) that
    carry the rack budget alone; one panel per logical row and side."""
    if feed is not None:
        types = [catalog.feed(feed)]
    else:
        types = sorted(catalog.feeds.values(), key=lambda spec: (spec.capacity_kw, spec.slug))
    if not types:
        raise FabricError("feed: the catalog has no feed types")
    capacity_kw = np.array([spec.capacity_kw for spec in types])
    per_side = np.maximum(np.ceil(budget_kw[:, None] / capacity_kw[None, :]), 1).astype(np.int64)
    choice = np.argmin(per_side, axis=1)  # first = smallest capacity among equals
    used, type_index = np.unique(choice, return_inverse=True)
    n_side = per_side[np.arange(budget_kw.size), choice]
    per_rack = 2 * n_side
    feed_rack = np.repeat(np.arange(budget_kw.size), per_rack)
    first = np.cumsum(per_rack) - per_rack
    within = np.arange(feed_rack.size) - first[feed_rack]
    side = (within >= n_side[feed_rack]).astype(np.int64)
    n_rows = int(logical_row.max()) + 1
    panels = np.array([f"P{r + 1:02d}-{s}" for r in range(n_rows) for s in "AB"])
    return {
        "feed_types": tuple(types[i] for i in used),
        "feed_type": type_index[feed_rack].astype(np.int64),
        "feed_side": side,
        "feed_panel": panels[logical_row[feed_rack] * 2 + side].tolist(),
        "feed_rack_feed": np.arange(feed_rack.size, dtype=np.int64),
        "feed_rack_rack": feed_rack.astype(np.int64),
    }
