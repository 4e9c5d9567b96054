"""Pages of designs: the list, one design (live floor plan shell and totals), one rack as JSON,
and the design as a shared document: edit its name and description, its history, fork, delete.

The design page's floor-plan data and its scenarios/runs panel come from the ``scenarios`` app
through URLs (``topology`` never imports ``scenarios``; see ARCHITECTURE.md).
"""

from __future__ import annotations

from collections import defaultdict

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from teams.current import current_team, of_current_team
from teams.forms import add_service_errors
from teams.models import Team
from teams.permissions import CHANGE, MANAGE, actions_on, restrict
from topology import services
from topology.caches import design_key
from topology.choices import BuildKind, LinkTier, RackKind
from topology.forms import DesignEditForm, ForkForm
from topology.models import Design, DesignChange, Link, Rack
from topology.selectors import design_floor_plan, design_fork_name, design_rack_power
from topology.views.doors import design_or_404, rack_of, versioned_save

TILE_PX = 14
PEERS_SHOWN = 4


@login_required
def design_list(request):
    """The current team's designs, each with its floor plan and totals."""
    designs = of_current_team(request, restrict(Design.objects, request.user)).select_related("team", "owner")
    cards = [{"design": d, "floor_plan_svg": _floor_plan_svg(d)} for d in designs]
    team = current_team(request)
    can = actions_on(team, request.user) if team is not None else frozenset()
    return render(request, "topology/design_list.html", {"cards": cards, "team": team, "can": can})


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
    design = design_or_404(request.user, pk)
    hall = design.halls.order_by("pk").first()
    context = {"design": design, "hall": hall, "can": actions_on(design, request.user)}
    return render(request, "topology/design_detail.html", context)


@login_required
def rack_detail(request, pk: int, rack_pk: int):
    """One rack as JSON for the floor plan's rack panel: devices by U, links, feeds."""
    design = design_or_404(request.user, pk)
    rack = rack_of(design, rack_pk)
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


# --- the design as a shared document -----------------------------------------------------------


@login_required
def design_edit(request, pk: int):
    """Rename a design or change its description (editors)."""
    design = design_or_404(request.user, pk, CHANGE)
    initial = {"name": design.name, "description": design.description, "version": design.version}
    form = DesignEditForm(request.POST or None, initial=initial)
    extra = {}
    if request.method == "POST" and form.is_valid():
        form, extra, saved = versioned_save(
            form,
            design,
            lambda data: services.design_update(
                design=design,
                user=request.user,
                expected_version=data["version"],
                name=data["name"],
                description=data["description"],
            ),
        )
        if saved:
            messages.success(request, "Design saved.")
            return redirect(design)
    status = 409 if extra else 400 if form.errors else 200
    context = {"design": design, "form": form, "can": actions_on(design, request.user), **extra}
    return render(request, "topology/design_edit.html", context, status=status)


@login_required
def design_history(request, pk: int):
    """Who changed what and when, newest first, each entry with its readable diff."""
    design = design_or_404(request.user, pk)
    changes = DesignChange.objects.filter(design=design).order_by("-version", "-pk")
    page = Paginator(changes, 50).get_page(request.GET.get("page"))
    context = {"design": design, "page": page, "can": actions_on(design, request.user)}
    return render(request, "topology/design_history.html", context)


@login_required
def design_fork(request, pk: int):
    """Copy the design (with its scenarios) into one of the user's teams; saved in the
    background like a generated design."""
    design = design_or_404(request.user, pk)
    teams = restrict(Team.objects.all(), request.user, CHANGE).order_by("name")
    team = current_team(request)
    default_team = team if team is not None and teams.filter(pk=team.pk).exists() else teams.first()
    initial = {
        "team": default_team,
        "name": design_fork_name(design=design, team=default_team or design.team),
    }
    form = ForkForm(request.POST or None, teams=teams, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            build = services.design_build_start(
                kind=BuildKind.FORK,
                source=design,
                team=form.cleaned_data["team"],
                user=request.user,
                name=form.cleaned_data["name"],
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            return redirect(build)
    status = 400 if form.errors else 200
    context = {"design": design, "form": form, "teams": teams, "can": actions_on(design, request.user)}
    return render(request, "topology/design_fork.html", context, status=status)


@login_required
def design_delete(request, pk: int):
    """Confirm, then delete the design with its scenarios and runs (team admins)."""
    design = design_or_404(request.user, pk, MANAGE)
    if request.method == "POST":
        name, team = design.name, design.team
        services.design_delete(design=design, user=request.user)
        messages.success(request, f"Design “{name}” of {team} was deleted.")
        return redirect("topology:design-list")
    context = {"design": design, "dependants": _dependants(design)}
    return render(request, "topology/design_confirm_delete.html", context)


def _dependants(design: Design) -> list[str]:
    """What else a design's deletion removes, from the apps built on topology ("3 scenarios",
    "12 runs"), found through the models' cascading relations (topology names no other app)."""
    found = []
    level = [(rel, Q(**{rel.field.name: design})) for rel in design._meta.related_objects]
    for _ in range(2):
        deeper = []
        for rel, where in level:
            model = rel.related_model
            if model._meta.app_label == "topology" or rel.on_delete.__name__ != "CASCADE":
                continue
            count = model._default_manager.filter(where).count()
            if count:
                name = model._meta.verbose_name if count == 1 else model._meta.verbose_name_plural
                found.append(f"{count:,} {name}")
            deeper += [
                (inner, Q(**{f"{inner.field.name}__in": model._default_manager.filter(where)}))
                for inner in model._meta.related_objects
            ]
        level = deeper
    return found
