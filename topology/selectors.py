"""Reads of the topology app: the catalog as pure specs, and designs for pages and the core."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from django.db.models import Count, Sum
from django.db.models.functions import Coalesce

from topology.caches import VersionedCache
from topology.choices import RackKind, SwitchTier
from topology.fabric.plan import FabricError, FabricPlan, rack_nameplate_w, switch_optics_w
from topology.fabric.specs import SPEC_TYPES, Catalog, catalog_from_dict
from topology.models import CATALOG_MODELS, Design, Link, Node, PowerFeed, Rack, ServerType, Switch

#: Spec fields that name another catalog entry by slug, and the row's foreign key holding it.
_SPEC_REFERENCES = {"gpu": "gpu_type"}


def catalog_load() -> Catalog:
    """The catalog curated in the database, as the pure ``Catalog`` the core and generators use
    (every field of each kind's spec dataclass, read from the row of the same name)."""
    data: dict[str, list[dict[str, Any]]] = {}
    for kind, model in CATALOG_MODELS.items():
        names = [f.name for f in fields(SPEC_TYPES[kind])]
        references = {n: _SPEC_REFERENCES[n] for n in names if n in _SPEC_REFERENCES}
        rows = model.objects.order_by("slug")
        if references:
            rows = rows.select_related(*references.values())
        data[kind] = [
            {n: getattr(row, references[n]).slug if n in references else getattr(row, n) for n in names}
            for row in rows
        ]
    return catalog_from_dict(data)


# --- Floor plan -----------------------------------------------------------------------------

RACK_COLORS = {RackKind.COMPUTE: "#4c78a8", RackKind.NETWORK: "#f58518"}


@dataclass(frozen=True)
class FloorRack:
    """One rack as the static floor plan draws it."""

    name: str
    row: int
    column: int
    kind: int
    kind_label: str
    color: str
    nodes: int
    switches: int
    power_budget_kw: float
    nameplate_kw: float


@dataclass(frozen=True)
class FloorPlan:
    """A hall's grid and its racks, in grid units."""

    rows: int
    columns: int
    racks: list[FloorRack]


@dataclass(frozen=True)
class RackPower:
    """Nameplate power of the racks of a design's first hall (R racks ordered by pk): the one
    place rack power is summed (floor plan, floor-plan metrics, rack panel and power model).

    Attributes
    ----------
    rack_pk : ndarray of int, (R,)
    budget_kw, nameplate_kw : ndarray, (R,)
        Power budget, and servers at nameplate (base + every GPU at TDP) plus switches (kW).
    nodes, switches : ndarray of int, (R,)
    gpu_type : ndarray of int, (R,)
        Index into ``gpu_slugs`` of the rack's (first) GPU type; -1 without servers.
    gpu_slugs : list[str]
    """

    rack_pk: np.ndarray
    budget_kw: np.ndarray
    nameplate_kw: np.ndarray
    nodes: np.ndarray
    switches: np.ndarray
    gpu_type: np.ndarray
    gpu_slugs: list[str]

    def index(self, pks) -> np.ndarray:
        """Positions of rack primary keys in ``rack_pk``."""
        return np.searchsorted(self.rack_pk, np.asarray(pks, dtype=np.int64)).astype(np.int64)


_RACK_POWER = VersionedCache("rack-power", maxsize=8)


def design_rack_power(design: Design) -> RackPower:
    """:class:`RackPower` of a design (cached per design version)."""
    return _RACK_POWER.get(design, lambda: _rack_power(design))


def rack_budget_warning(rack: Rack) -> str | None:
    """The warning of a rack whose power budget is below the nameplate of what it holds (the
    save is allowed: a budget below nameplate is a deliberate power cap), or None."""
    power = design_rack_power(rack.hall.design)
    position = int(power.index([rack.pk])[0])
    if position >= power.rack_pk.size or power.rack_pk[position] != rack.pk:
        return None
    nameplate_kw = float(power.nameplate_kw[position])
    if rack.power_budget_kw + 1e-9 >= nameplate_kw:
        return None
    what = (
        "servers and switches"
        if power.switches[position] and power.nodes[position]
        else ("switches" if power.switches[position] else "servers")
    )
    return (
        f"budget {rack.power_budget_kw:g} kW is below the nameplate {nameplate_kw:.1f} kW of the "
        f"{what} in it: at full load they would be power-capped"
    )


def _rack_power(design: Design) -> RackPower:
    hall_pk = design.halls.order_by("pk").values_list("pk", flat=True).first()
    rack_pk, budget_kw = _column(Rack.objects.filter(hall_id=hall_pk).order_by("pk"), "pk", "power_budget_kw")
    rack_pk = rack_pk.astype(np.int64)
    servers = {s.pk: s for s in ServerType.objects.select_related("gpu_type")}
    counts = list(
        Node.objects.filter(rack__hall_id=hall_pk).values_list("rack", "server_type").annotate(n=Count("pk"))
    )
    gpu_slugs = sorted({servers[st].gpu_type.slug for _, st, _ in counts})
    c_rack, c_type, c_n = (np.asarray(col) for col in zip(*counts, strict=True)) if counts else ([], [], [])
    switch_pk, switch_rack, switch_w = _column(
        Switch.objects.filter(rack__hall_id=hall_pk).order_by("pk"), "pk", "rack", "switch_type__power_w"
    )
    switch_w = switch_w.astype(float) + _switch_optics_w(design, switch_pk)
    index = _index_of(rack_pk)
    n_racks = rack_pk.size
    server_w = np.array([servers[int(t)].power_w for t in c_type], dtype=float)
    nameplate_w = rack_nameplate_w(
        n_racks,
        node_rack=index(c_rack),
        node_w=server_w * np.asarray(c_n, dtype=float),
        switch_rack=index(switch_rack),
        switch_w=switch_w,
    )
    gpu_type = np.full(n_racks, -1, dtype=np.int64)
    if counts:
        gpu_type[index(c_rack)] = [gpu_slugs.index(servers[int(t)].gpu_type.slug) for t in c_type]
    return RackPower(
        rack_pk=rack_pk,
        budget_kw=budget_kw.astype(float),
        nameplate_kw=nameplate_w / 1000.0,
        nodes=np.bincount(index(c_rack), weights=np.asarray(c_n, dtype=float), minlength=n_racks).astype(
            np.int64
        ),
        switches=np.bincount(index(switch_rack), minlength=n_racks).astype(np.int64),
        gpu_type=gpu_type,
        gpu_slugs=gpu_slugs,
    )


def _switch_optics_w(design: Design, switch_pk: np.ndarray) -> np.ndarray:
    """Transceiver power at each switch of ``switch_pk`` (sorted), by the plan's rule
    (``topology.fabric.plan.switch_optics_w``) on the design's links as saved."""
    upper, lower, link_w = _column(
        Link.objects.filter(design=design).annotate(lower=Coalesce("lower_switch_id", -1)),
        "upper_switch_id",
        "lower",
        "link_type__power_w",
    )
    index = _index_of(switch_pk)
    return switch_optics_w(
        int(switch_pk.size),
        link_a=np.where(lower >= 0, index(lower), -1),
        link_b=index(upper),
        link_w=link_w.astype(float),
        n_nic_ports=0,
    )


def design_floor_plan(*, design: Design) -> FloorPlan:
    """The first hall of a design with each rack's kind, contents and nameplate power."""
    hall = design.halls.order_by("pk").first()
    if hall is None:
        return FloorPlan(rows=0, columns=0, racks=[])
    power = design_rack_power(design)
    racks = [
        FloorRack(
            name=name,
            row=row,
            column=column,
            kind=kind,
            kind_label=RackKind(kind).label,
            color=RACK_COLORS[RackKind(kind)],
            nodes=int(power.nodes[i]),
            switches=int(power.switches[i]),
            power_budget_kw=float(power.budget_kw[i]),
            nameplate_kw=float(power.nameplate_kw[i]),
        )
        for i, (name, row, column, kind) in enumerate(
            Rack.objects.filter(hall=hall).order_by("pk").values_list("name", "row", "column", "kind")
        )
    ]
    racks.sort(key=lambda r: (r.row, r.column))
    return FloorPlan(rows=hall.rows, columns=hall.columns, racks=racks)


def design_counts(*, design: Design) -> dict[str, Any]:
    """Row counts straight from the database (the summary JSON says what the generator meant)."""
    switches = dict(
        Switch.objects.filter(design=design).values("tier").annotate(n=Count("pk")).values_list("tier", "n")
    )
    return {
        "racks": Rack.objects.filter(hall__design=design).count(),
        "servers": Node.objects.filter(rack__hall__design=design).count(),
        "gpus": Node.objects.filter(rack__hall__design=design).aggregate(
            n=Sum("server_type__gpus_per_server")
        )["n"]
        or 0,
        "switches": {t.label.lower(): switches.get(t.value, 0) for t in SwitchTier},
    }


# --- Design -> FabricPlan (what the simulation compiles) --------------------------------------


def _column(queryset, *names) -> list[np.ndarray]:
    rows = list(queryset.values_list(*names))
    if not rows:
        return [np.zeros(0, dtype=np.int64) for _ in names]
    return [np.asarray(col) for col in zip(*rows, strict=True)]


_PLANS = VersionedCache("plan", maxsize=2)
_FABRICS = VersionedCache("fabric", maxsize=2)


def design_plan(*, design: Design, catalog: Catalog | None = None) -> FabricPlan:
    """Rebuild the column-array ``FabricPlan`` of a saved design (the inverse of
    ``services.design_create_from_plan``), so a design edited in the admin simulates as saved.

    Its specs come from today's catalog, or from ``catalog`` (a run's snapshot of the rows it
    used: a run again "as it ran" after a catalog edit). Cached per design version (a catalog
    edit bumps the versions of the designs it reaches) and per given catalog's content.
    One query per table and numpy index remapping; no Python work per GPU or link.
    """
    if catalog is None:
        return _PLANS.get(design, lambda: _design_plan(design, catalog_load()))
    return _PLANS.get(design, lambda: _design_plan(design, catalog), _catalog_key(catalog))


def design_fabric(*, design: Design, catalog: Catalog | None = None):
    """``compile_plan(design_plan(design, catalog))``, cached per design version and given
    catalog (a 131,072-GPU design takes seconds to load and compile)."""
    from topology.fabric.compiled import compile_plan

    extra = () if catalog is None else (_catalog_key(catalog),)
    return _FABRICS.get(design, lambda: compile_plan(design_plan(design=design, catalog=catalog)), *extra)


def _catalog_key(catalog: Catalog) -> str:
    import hashlib

    return hashlib.sha256(repr(catalog).encode()).hexdigest()


def _design_plan(design: Design, catalog: Catalog) -> FabricPlan:
    hall = design.halls.order_by("pk").first()
    if hall is None:
        raise FabricError(f"design {design.name!r}: has no hall")
    rack_pk, racks = _plan_racks(hall)
    rack_index = _index_of(rack_pk)
    server, node_pk, nodes = _plan_nodes(design, hall, catalog, rack_index)
    sw_pk, switch_specs, switches = _plan_switches(design, catalog, rack_index)
    link_specs, links = _plan_links(design, catalog, server.nics_per_server, node_pk, sw_pk)
    feed_specs, feeds = _plan_feeds(design, catalog, rack_index)
    plan = FabricPlan(
        generator=design.generator,
        params=dict(design.parameters),
        hall_rows=hall.rows,
        hall_cols=hall.columns,
        server=server,
        gpu=catalog.gpu(server.gpu),
        switch_types=switch_specs,
        link_types=link_specs,
        feed_types=feed_specs,
        **racks,
        **nodes,
        **switches,
        **links,
        **feeds,
    )
    return plan.validate()


def _plan_racks(hall) -> tuple[np.ndarray, dict[str, Any]]:
    """The hall's rack primary keys and the plan's rack columns."""
    racks = Rack.objects.filter(hall=hall).order_by("pk")
    rack_pk, rack_row, rack_col, rack_kind, rack_units, rack_budget = _column(
        racks, "pk", "row", "column", "kind", "u_height", "power_budget_kw"
    )
    return rack_pk, {
        "rack_name": list(racks.values_list("name", flat=True)),
        "rack_row": rack_row.astype(np.int64),
        "rack_col": rack_col.astype(np.int64),
        "rack_kind": rack_kind.astype(np.int64),
        "rack_units": rack_units.astype(np.int64),
        "rack_budget_kw": rack_budget.astype(float),
    }


def _plan_nodes(design: Design, hall, catalog: Catalog, rack_index):
    """The one server type of the hall's nodes, their primary keys and the plan's node columns."""
    nodes = Node.objects.filter(rack__hall=hall).order_by("pk")
    server_slugs = set(nodes.values_list("server_type__slug", flat=True).distinct())
    if len(server_slugs) != 1:
        raise FabricError(f"design {design.name!r}: needs exactly one server type (has {len(server_slugs)})")
    server = catalog.server(server_slugs.pop())
    node_pk, node_rack, node_u = _column(nodes, "pk", "rack_id", "u_position")
    return server, node_pk, {"node_rack": rack_index(node_rack), "node_u": node_u.astype(np.int64)}


def _plan_switches(design: Design, catalog: Catalog, rack_index):
    """The switches' primary keys, their catalog types and the plan's switch columns."""
    sw_pk, sw_type, sw_tier, sw_rack, sw_u, sw_group, sw_rail, sw_ports = _column(
        Switch.objects.filter(design=design).order_by("pk"),
        "pk",
        "switch_type__slug",
        "tier",
        "rack_id",
        "u_position",
        "group",
        "rail",
        "ports",
    )
    switch_slugs = sorted(set(sw_type.tolist()))
    switch_specs = tuple(catalog.switch(s) for s in switch_slugs)
    radix = np.array([s.radix for s in switch_specs], dtype=np.int64)
    sw_type_idx = np.searchsorted(switch_slugs, sw_type) if sw_type.size else sw_type.astype(np.int64)
    ports = np.where(sw_ports > 0, sw_ports, radix[sw_type_idx] if sw_pk.size else 0)
    return (
        sw_pk,
        switch_specs,
        {
            "switch_type": sw_type_idx.astype(np.int64),
            "switch_tier": sw_tier.astype(np.int64),
            "switch_rack": rack_index(sw_rack),
            "switch_u": sw_u.astype(np.int64),
            "switch_group": sw_group.astype(np.int64),
            "switch_rail": sw_rail.astype(np.int64),
            "switch_ports": ports.astype(np.int64),
        },
    )


def _plan_links(design: Design, catalog: Catalog, nics: int, node_pk: np.ndarray, sw_pk: np.ndarray):
    """The links' catalog types and the plan's link columns (a NIC end is port ``node * nics +
    nic``; switch ends follow the ``n_nodes * nics`` NIC ports)."""
    lk_type, lk_tier, lk_gbps, lk_node, lk_nic, lk_lower, lk_upper = _column(
        Link.objects.filter(design=design)
        .order_by("pk")
        .annotate(
            node_pk=Coalesce("node_id", -1),
            nic=Coalesce("nic_index", -1),
            lower=Coalesce("lower_switch_id", -1),
        ),
        "link_type__slug",
        "tier",
        "gbps",
        "node_pk",
        "nic",
        "lower",
        "upper_switch_id",
    )
    link_slugs = sorted(set(lk_type.tolist()))
    n_nic_ports = node_pk.size * nics
    node_index, switch_index = _index_of(node_pk), _index_of(sw_pk)
    from_nic = lk_node >= 0
    link_a = np.where(
        from_nic,
        node_index(np.where(from_nic, lk_node, node_pk[0] if node_pk.size else 0)) * nics + lk_nic,
        n_nic_ports + switch_index(np.where(from_nic, sw_pk[0] if sw_pk.size else 0, lk_lower)),
    )
    return tuple(catalog.link(s) for s in link_slugs), {
        "link_a": link_a.astype(np.int64),
        "link_b": (n_nic_ports + switch_index(lk_upper)).astype(np.int64),
        "link_type": (np.searchsorted(link_slugs, lk_type) if lk_type.size else lk_type).astype(np.int64),
        "link_gbps": lk_gbps.astype(float),
        "link_tier": lk_tier.astype(np.int64),
    }


def _plan_feeds(design: Design, catalog: Catalog, rack_index):
    """The feeds' catalog types and the plan's feed and feed-rack columns."""
    feeds = PowerFeed.objects.filter(design=design).order_by("pk")
    fd_pk, fd_type, fd_side = _column(feeds, "pk", "feed_type__slug", "side")
    feed_slugs = sorted(set(fd_type.tolist()))
    pair_feed, pair_rack = _column(
        PowerFeed.racks.through.objects.filter(powerfeed__design=design).order_by("pk"),
        "powerfeed_id",
        "rack_id",
    )
    return tuple(catalog.feed(s) for s in feed_slugs), {
        "feed_type": (np.searchsorted(feed_slugs, fd_type) if fd_type.size else fd_type).astype(np.int64),
        "feed_side": fd_side.astype(np.int64),
        "feed_panel": list(feeds.values_list("panel", flat=True)),
        "feed_rack_feed": _index_of(fd_pk)(pair_feed),
        "feed_rack_rack": rack_index(pair_rack),
    }


def _index_of(sorted_pks: np.ndarray):
    """A function mapping primary keys to their positions in ``sorted_pks`` (ascending)."""

    def index(pks: np.ndarray) -> np.ndarray:
        return np.searchsorted(sorted_pks, np.asarray(pks)).astype(np.int64)

    return index


def design_summary_now(*, design: Design) -> dict[str, Any]:
    """The totals of a design's rows as they are in this transaction (not cached: for the
    service that just changed them, before its version is visible to anyone)."""
    return _design_plan(design, catalog_load()).summary()


def plan_floor_plan(plan: FabricPlan) -> FloorPlan:
    """The floor plan of a plan not saved yet (the new-design preview), as ``design_floor_plan``
    draws a saved one."""
    n_racks = plan.n_racks
    nameplate_w = plan.rack_nameplate_w()
    nodes = np.bincount(plan.node_rack, minlength=n_racks)
    switches = np.bincount(plan.switch_rack, minlength=n_racks)
    racks = [
        FloorRack(
            name=plan.rack_name[i],
            row=int(plan.rack_row[i]),
            column=int(plan.rack_col[i]),
            kind=int(plan.rack_kind[i]),
            kind_label=RackKind(int(plan.rack_kind[i])).label,
            color=RACK_COLORS[RackKind(int(plan.rack_kind[i]))],
            nodes=int(nodes[i]),
            switches=int(switches[i]),
            power_budget_kw=float(plan.rack_budget_kw[i]),
            nameplate_kw=float(nameplate_w[i]) / 1000.0,
        )
        for i in range(n_racks)
    ]
    return FloorPlan(rows=plan.hall_rows, columns=plan.hall_cols, racks=racks)


def design_free_name(*, team, base: str) -> str:
    """``base``, or "base 2", "base 3"... whichever the team has no design called, cut to fit the
    name column (the default of every door that names a design for the user: a fork, the design
    a scenario file's cluster generates)."""
    max_length = Design._meta.get_field("name").max_length
    name, n = base[:max_length].strip(), 2
    while Design.objects.filter(team=team, name=name).exists():
        suffix = f" {n}"
        name, n = base[: max_length - len(suffix)].strip() + suffix, n + 1
    return name


def design_fork_name(*, design: Design, team) -> str:
    """The default name of a fork of ``design`` into ``team``: "<name> (fork)", or a free variant."""
    return design_free_name(team=team, base=f"{design.name} (fork)")
