"""What a designer edits most: rack budgets and names, racks of servers added or removed, and
the power feeds (their panel and circuit type). Every form carries the design version it was
opened at; a save after someone else's is refused with who and when, and nothing is saved."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from teams.permissions import CHANGE, actions_on
from topology import services
from topology.choices import FeedSide, RackKind
from topology.forms import FeedEditForm, RackEditForm, VersionedForm
from topology.models import PowerFeed, Rack
from topology.selectors import design_rack_power, rack_budget_warning
from topology.views.doors import design_or_404, feed_of, rack_of, versioned_save

PER_PAGE = 100


def _side_capacity(rack: Rack) -> dict[str, float]:
    totals = {side.label: 0.0 for side in FeedSide}
    for feed in rack.feeds.all():
        totals[FeedSide(feed.side).label] += feed.feed_type.capacity_kw
    return totals


@login_required
def design_racks(request, pk: int):
    """Every rack with its contents, nameplate power, budget and feed capacity per side."""
    design = design_or_404(request.user, pk)
    racks = (
        Rack.objects.filter(hall__design=design)
        .annotate(servers=Count("nodes", distinct=True))
        .prefetch_related("feeds__feed_type")
        .order_by("row", "column", "pk")
    )
    page = Paginator(racks, PER_PAGE).get_page(request.GET.get("page"))
    power = design_rack_power(design)
    rows = []
    for rack in page:
        position = int(power.index([rack.pk])[0])
        rows.append(
            {
                "rack": rack,
                "kind": RackKind(rack.kind).label,
                "nameplate_kw": float(power.nameplate_kw[position]),
                "switches": int(power.switches[position]),
                "capacity": _side_capacity(rack),
            }
        )
    context = {"design": design, "page": page, "rows": rows, "can": actions_on(design, request.user)}
    return render(request, "topology/design_racks.html", context)


@login_required
def rack_edit(request, pk: int, rack_pk: int):
    """Change a rack's name and power budget."""
    design = design_or_404(request.user, pk, CHANGE)
    rack = rack_of(design, rack_pk)
    initial = {"name": rack.name, "power_budget_kw": rack.power_budget_kw, "version": design.version}
    form = RackEditForm(request.POST or None, initial=initial)
    extra = {}
    if request.method == "POST" and form.is_valid():
        form, extra, saved = versioned_save(
            form,
            design,
            lambda data: services.rack_update(
                rack=rack,
                user=request.user,
                expected_version=data["version"],
                power_budget_kw=data["power_budget_kw"],
                name=data["name"],
            ),
            rack,
        )
        if saved:
            messages.success(request, f"Rack {form.cleaned_data['name']} saved.")
            rack.refresh_from_db()
            design.refresh_from_db()
            warning = rack_budget_warning(rack)
            if warning:
                messages.warning(request, f"Rack {rack.name}: {warning}.")
            return redirect("topology:design-racks", pk=design.pk)
    context = {
        "design": design,
        "rack": rack,
        "form": form,
        "capacity": _side_capacity(rack),
        "feeds": rack.feeds.select_related("feed_type").order_by("side", "name"),
        "servers": rack.nodes.count(),
        "budget_warning": rack_budget_warning(rack),
        "can": actions_on(design, request.user),
        **extra,
    }
    status = 409 if extra else 400 if form.errors else 200
    return render(request, "topology/rack_edit.html", context, status=status)


@login_required
@require_POST
def rack_add(request, pk: int, rack_pk: int):
    """Add a rack of servers like this one (same servers, budget and feeds)."""
    design = design_or_404(request.user, pk, CHANGE)
    like = rack_of(design, rack_pk)
    form = VersionedForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The form was incomplete; nothing was saved. Try again.")
        return redirect("topology:design-racks", pk=design.pk)
    try:
        rack = services.rack_add(
            design=design, user=request.user, expected_version=form.cleaned_data["version"], like=like
        )
    except ValidationError as error:
        messages.error(request, " ".join(m.split(": ", 1)[-1] for m in error.messages))
        return redirect("topology:design-racks", pk=design.pk)
    messages.success(request, f"Rack {rack.name} added like {like.name}; the design is now hand-edited.")
    return redirect("topology:rack-edit", pk=design.pk, rack_pk=rack.pk)


@login_required
def rack_remove(request, pk: int, rack_pk: int):
    """Confirm, then remove a rack of servers with its servers, cables and own feeds."""
    design = design_or_404(request.user, pk, CHANGE)
    rack = rack_of(design, rack_pk)
    form = VersionedForm(request.POST or None, initial={"version": design.version})
    error = None
    if request.method == "POST" and form.is_valid():
        try:
            services.rack_remove(rack=rack, user=request.user, expected_version=form.cleaned_data["version"])
        except ValidationError as exc:
            error = " ".join(
                m.split(": ", 1)[-1] if not isinstance(exc, services.DesignConflict) else m
                for m in exc.messages
            )
            design.refresh_from_db()
            form = VersionedForm(initial={"version": design.version})
        else:
            messages.success(request, f"Rack {rack.name} was removed.")
            return redirect("topology:design-racks", pk=design.pk)
    context = {"design": design, "rack": rack, "form": form, "error": error, "servers": rack.nodes.count()}
    return render(request, "topology/rack_confirm_remove.html", context, status=409 if error else 200)


@login_required
def design_feeds(request, pk: int):
    """The power feeds, by panel: circuit type, derated capacity and the racks each serves."""
    design = design_or_404(request.user, pk)
    feeds = (
        PowerFeed.objects.filter(design=design)
        .select_related("feed_type")
        .prefetch_related("racks")
        .order_by("panel", "side", "name")
    )
    panels = PowerFeed.objects.filter(design=design).values("panel").annotate(n=Count("pk")).order_by("panel")
    panel = request.GET.get("panel") or ""
    if panel:
        feeds = feeds.filter(panel=panel)
    page = Paginator(feeds, PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "design": design,
        "page": page,
        "panels": panels,
        "panel": panel,
        "total": PowerFeed.objects.filter(design=design).count(),
        "can": actions_on(design, request.user),
        "racks_url": reverse("topology:design-racks", args=[design.pk]),
    }
    return render(request, "topology/design_feeds.html", context)


@login_required
def feed_edit(request, pk: int, feed_pk: int):
    """Move a feed to another panel, change its circuit type, or rename it."""
    design = design_or_404(request.user, pk, CHANGE)
    feed = feed_of(design, feed_pk)
    initial = {"name": feed.name, "panel": feed.panel, "feed_type": feed.feed_type, "version": design.version}
    panels = list(
        PowerFeed.objects.filter(design=design).order_by("panel").values_list("panel", flat=True).distinct()
    )
    form = FeedEditForm(request.POST or None, initial=initial, panels=panels)
    extra = {}
    if request.method == "POST" and form.is_valid():
        form, extra, saved = versioned_save(
            form,
            design,
            lambda data: services.feed_update(
                feed=feed,
                user=request.user,
                expected_version=data["version"],
                panel=data["panel"],
                new_panel=data["create_panel"],
                feed_type=data["feed_type"],
                name=data["name"],
            ),
            feed,
        )
        if saved:
            messages.success(request, f"Feed {form.cleaned_data['name']} saved.")
            return redirect("topology:design-feeds", pk=design.pk)
    context = {
        "design": design,
        "feed": feed,
        "form": form,
        "racks": feed.racks.order_by("row", "column"),
        "can": actions_on(design, request.user),
        **extra,
    }
    status = 409 if extra else 400 if form.errors else 200
    return render(request, "topology/feed_edit.html", context, status=status)
