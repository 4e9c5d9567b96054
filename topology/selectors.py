"""Reads of the topology app: the catalog as pure specs, and designs for pages and the core."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Sum

from topology.choices import RackKind, SwitchTier
from topology.fabric.specs import Catalog, catalog_from_dict
from topology.models import (
    Design,
    GpuType,
    LinkType,
    Node,
    PowerFeedType,
    Rack,
    ServerType,
    Switch,
    SwitchType,
)

_SPEC_FIELDS = {
    "gpus": (
        GpuType,
        (
            "vendor",
            "name",
            "peak_tflops_fp8",
            "peak_tflops_bf16",
            "peak_tflops_tf32",
            "hbm_gib",
            "hbm_tbps",
            "tdp_w",
            "idle_w",
            "scaleup_gbytes_per_s",
            "annual_failure_rate",
            "efficiency",
            "sources",
        ),
    ),
    "servers": (
        ServerType,
        (
            "name",
            "gpus_per_server",
            "scaleup_domain_gpus",
            "nics_per_server",
            "nic_gbps",
            "base_power_w",
            "rack_units",
            "servers_per_rack",
            "annual_failure_rate",
            "sources",
        ),
    ),
    "switches": (
        SwitchType,
        (
            "name",
            "roles",
            "radix",
            "port_gbps",
            "latency_ns",
            "power_w",
            "rack_units",
            "annual_failure_rate",
            "sources",
        ),
    ),
    "links": (LinkType, ("name", "gbps", "latency_ns", "power_w", "annual_failure_rate", "sources")),
    "feeds": (PowerFeedType, ("name", "volts", "amps", "phases", "power_factor", "derating", "sources")),
}


def catalog_load() -> Catalog:
    """The catalog curated in the database, as the pure ``Catalog`` the core and generators use."""
    data: dict[str, list[dict[str, Any]]] = {}
    for kind, (model, names) in _SPEC_FIELDS.items():
        rows = model.objects.order_by("slug")
        if kind == "servers":
            rows = rows.select_related("gpu_type")
        data[kind] = [
            {
                "slug": row.slug,
                **{n: getattr(row, n) for n in names},
                **({"gpu": row.gpu_type.slug} if kind == "servers" else {}),
            }
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


def design_floor_plan(*, design: Design) -> FloorPlan:
    """The first hall of a design with each rack's kind, contents and nameplate power."""
    hall = design.halls.order_by("pk").first()
    if hall is None:
        return FloorPlan(rows=0, columns=0, racks=[])
    node_power = dict(
        Node.objects.filter(rack__hall=hall).values("rack").annotate(n=Count("pk")).values_list("rack", "n")
    )
    server = ServerType.objects.filter(nodes__rack__hall=hall).select_related("gpu_type").first()
    server_kw = server.power_w / 1000 if server else 0.0
    switch_kw = dict(
        Switch.objects.filter(rack__hall=hall)
        .values("rack")
        .annotate(kw=Sum("switch_type__power_w"))
        .values_list("rack", "kw")
    )
    switch_count = dict(
        Switch.objects.filter(rack__hall=hall).values("rack").annotate(n=Count("pk")).values_list("rack", "n")
    )
    racks = [
        FloorRack(
            name=rack.name,
            row=rack.row,
            column=rack.column,
            kind=rack.kind,
            kind_label=RackKind(rack.kind).label,
            color=RACK_COLORS[RackKind(rack.kind)],
            nodes=node_power.get(rack.pk, 0),
            switches=switch_count.get(rack.pk, 0),
            power_budget_kw=rack.power_budget_kw,
            nameplate_kw=node_power.get(rack.pk, 0) * server_kw + (switch_kw.get(rack.pk) or 0) / 1000,
        )
        for rack in Rack.objects.filter(hall=hall).order_by("row", "column")
    ]
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
