"""Pages of designs: the list, one design (live floor plan shell and totals), and one rack as JSON.

The design page's floor-plan data and its scenarios/runs panel come from the ``scenarios`` app
through URLs (``topology`` never imports ``scenarios``; see ARCHITECTURE.md).
"""

from __future__ import annotations

from collections import defaultdict

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.db.models import Count, Q
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from topology.caches import design_key
from topology.choices import LinkTier, RackKind
from topology.models import Design, Link, Rack
from topology.selectors import design_floor_plan, design_rack_power
from twin.permissions import restrict

TILE_PX = 14
PEERS_SHOWN = 4


@login_required
def design_list(request):
    designs = restrict(Design.objects, request.user).select_related("team", "owner")
    cards = [{"design": d, "floor_plan_svg": _floor_plan_svg(d)} for d in designs]
    return render(request, "topology/design_list.html", {"cards": cards})


def _floor_plan_svg(design: Design) -> str:
    """A design's static SVG floor plan, rendered once per design version (a 131,072-GPU hall
    is ~4,500 racks: about 1.5 s of template rendering, then a cache hit)."""
    key = design_key(design, "floor-svg")
    svg = cache.get(key)
    if svg is None:
        svg = render_to_string(
            "topology/_floor_plan.html", {"plan": design_floor_plan(design=design), "tile": TILE_PX}
        )
        cache.set(key, svg, timeout=None)
    return mark_safe(svg)


@login_required
def design_detail(request, pk: int):
    design = get_object_or_404(restrict(Design.objects, request.user).select_related("team"), pk=pk)
    hall = design.halls.order_by("pk").first()
    return render(request, "topology/design_detail.html", {"design": design, "hall": hall})


@login_required
def rack_detail(request, pk: int, rack_pk: int):
    """One rack as JSON for the floor plan's rack panel: devices by U, links, feeds."""
    design = get_object_or_404(restrict(Design.objects, request.user), pk=pk)
    rack = get_object_or_404(Rack.objects.filter(hall__design=design), pk=rack_pk)
    power = design_rack_power(design)
    position = int(power.index([rack.pk])[0])
    return JsonResponse(
        {
            "id": rack.pk,
            "name": rack.name,
            "row": rack.row,
            "col": rack.column,
            "kind": rack.kind,
            "kind_label": RackKind(rack.kind).label,
            "u_height": rack.u_height,
            "power_budget_kw": rack.power_budget_kw,
            "nameplate_kw": float(power.nameplate_kw[position]),
            "devices": _rack_devices(rack),
            "links": _rack_links(rack),
            "feeds": _rack_feeds(rack),
        }
    )


def _rack_devices(rack: Rack) -> list[dict]:
    nodes = rack.nodes.select_related("server_type__gpu_type").order_by("u_position")
    switches = rack.switches.select_related("switch_type").order_by("u_position")
    devices = [
        {
            "kind": "server",
            "name": n.name,
            "type": n.server_type.name,
            "u": n.u_position,
            "units": n.server_type.rack_units,
        }
        for n in nodes
    ]
    devices += [
        {
            "kind": "switch",
            "name": s.name,
            "type": f"{s.switch_type.name} ({s.get_tier_display().lower()})",
            "u": s.u_position,
            "units": s.switch_type.rack_units,
        }
        for s in switches
    ]
    return sorted(devices, key=lambda d: -d["u"])


def _rack_links(rack: Rack) -> list[dict]:
    """Links with an end in the rack, grouped by (device, tier, direction)."""
    up = Link.objects.filter(Q(node__rack=rack) | Q(lower_switch__rack=rack)).values_list(
        "node__name", "lower_switch__name", "tier", "gbps", "upper_switch__name"
    )
    down = Link.objects.filter(upper_switch__rack=rack).values_list(
        "upper_switch__name", "tier", "gbps", "node__name", "lower_switch__name"
    )
    groups: dict[tuple, list[str]] = defaultdict(list)
    for node, lower, tier, gbps, upper in up:
        groups[(node or lower, tier, gbps, "up")].append(upper)
    for upper, tier, gbps, node, lower in down:
        groups[(upper, tier, gbps, "down")].append(node or lower)
    out = []
    for (device, tier, gbps, direction), peers in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        unique = sorted(set(peers))
        out.append(
            {
                "device": device,
                "tier": f"{LinkTier(tier).label} {'↑' if direction == 'up' else '↓'}",
                "gbps": round(gbps),
                "count": len(peers),
                "peers": unique[:PEERS_SHOWN],
                "more": max(0, len(unique) - PEERS_SHOWN),
            }
        )
    return out


def _rack_feeds(rack: Rack) -> list[dict]:
    feeds = rack.feeds.select_related("feed_type").annotate(n_racks=Count("racks")).order_by("side", "name")
    return [
        {
            "name": f.name,
            "side": f.get_side_display(),
            "panel": f.panel,
            "capacity_kw": f.feed_type.capacity_kw,
            "racks": f.n_racks,
        }
        for f in feeds
    ]
