"""Edits of a saved design as a designer makes them: rename and describe it, change rack budgets,
feeds and panels, add or remove racks of servers, fork it, delete it, and the generic part
save/delete the admin uses. Every edit checks the permission module, refuses a form opened at
an older version (``design_lock``), and goes through ``design_changed`` in its transaction."""

from __future__ import annotations

import math
import re
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Case, Count, F, Sum, When

from teams.models import Team
from teams.permissions import CHANGE, MANAGE, VIEW, require
from topology.choices import ChangeAction, FeedSide, Generator, SwitchTier
from topology.fabric.plan import FabricError
from topology.models import Design, Gpu, Link, Node, PowerFeed, PowerFeedType, Rack, Switch
from topology.services.building import OnProgress, design_create_from_plan, design_name_check
from topology.services.history import (
    Change,
    design_changed,
    design_lock,
    design_of,
    diff_of,
    diff_summary,
    snapshot,
)
from topology.signals import design_deleting, design_forked
from utilities.jsonsafe import json_safe

_PART_FIELDS = {
    Design: ("name", "description"),
    Rack: ("name", "power_budget_kw"),
    PowerFeed: ("name", "panel", "feed_type"),
}


def _kind(part) -> str:
    return str(type(part)._meta.verbose_name)


def _concrete_fields(part) -> list[str]:
    return [f.name for f in part._meta.concrete_fields if not f.primary_key and f.name not in ("updated",)]


@transaction.atomic
def design_part_save(*, part, user) -> Any:
    """Validate and save one row of a design (or the design itself), bump the version and record
    the fields that changed.

    Raises
    ------
    NotFound, Forbidden (``teams.permissions``), ValidationError
    """
    design = design_of(part)
    require(design, user, CHANGE)
    stored = type(part).objects.filter(pk=part.pk).first() if part.pk else None
    before = snapshot(stored, _concrete_fields(part)) if stored is not None else {}
    part.full_clean()
    part.save()
    diff = diff_of(part, before) if stored is not None else ()
    action = ChangeAction.CHANGED if stored is not None else ChangeAction.ADDED
    summary = diff_summary(_kind(part), str(part), diff) if diff else f"{_kind(part)} {part} {action}"
    design_changed(design, user=user, change=Change(action, _kind(part), str(part), summary, diff))
    return part


@transaction.atomic
def design_part_delete(*, part, user) -> None:
    """Delete one row of a design (its dependants cascade), bump the version and record it."""
    design = design_of(part)
    require(design, user, CHANGE)
    kind, name = _kind(part), str(part)
    part.delete()
    design_changed(
        design, user=user, change=Change(ChangeAction.REMOVED, kind, name, f"{kind} {name} removed")
    )


def _finite(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError({field: f"{field}: must be a finite number (got {str(value)[:40]!r})"})
    return float(value)


def _save_edit(obj, *, design: Design, user, before: dict[str, Any]):
    """Validate and save an edited row and record its diff; an edit that changes nothing is not
    a new version."""
    diff = diff_of(obj, before)
    if not diff:
        return obj
    obj.full_clean()
    obj.save()
    name = str(before.get("name") or obj)
    design_changed(
        design,
        user=user,
        change=Change(ChangeAction.CHANGED, _kind(obj), str(obj), diff_summary(_kind(obj), name, diff), diff),
    )
    return obj


@transaction.atomic
def design_update(
    *, design: Design, user, expected_version: int, name: str | None = None, description: str | None = None
) -> Design:
    """Rename or describe a design; refused (``DesignConflict``) if it changed since ``expected_version``."""
    require(design, user, CHANGE)
    locked = design_lock(design, expected_version)
    before = snapshot(locked, _PART_FIELDS[Design])
    if name is not None:
        locked.name = design_name_check(team=locked.team, name=name, design=locked)
    if description is not None:
        locked.description = str(description)
    return _save_edit(locked, design=locked, user=user, before=before)


@transaction.atomic
def rack_update(
    *, rack: Rack, user, expected_version: int, power_budget_kw: float | None = None, name: str | None = None
) -> Rack:
    """Change a rack's power budget (kW) or name; the budget must fit its feeds on each side."""
    design = design_of(rack)
    require(design, user, CHANGE)
    locked = design_lock(design, expected_version)
    rack = Rack.objects.select_related("hall").get(pk=rack.pk)
    before = snapshot(rack, _PART_FIELDS[Rack])
    if power_budget_kw is not None:
        rack.power_budget_kw = _finite(power_budget_kw, "power_budget_kw")
    if name is not None:
        rack.name = str(name).strip()
    return _save_edit(rack, design=locked, user=user, before=before)


@transaction.atomic
def feed_update(
    *,
    feed: PowerFeed,
    user,
    expected_version: int,
    panel: str | None = None,
    feed_type: PowerFeedType | str | None = None,
    name: str | None = None,
    new_panel: bool = False,
) -> PowerFeed:
    """Move a power feed to another of the design's panels (to a panel it does not have yet only
    with ``new_panel``: a typo never makes a panel), change its circuit type or rename it; every
    rack it serves must still get its budget on each side, and the feed must carry its racks."""
    design = design_of(feed)
    require(design, user, CHANGE)
    locked = design_lock(design, expected_version)
    feed = PowerFeed.objects.select_related("feed_type").get(pk=feed.pk)
    before = snapshot(feed, _PART_FIELDS[PowerFeed])
    if panel is not None:
        feed.panel = _panel_check(locked, str(panel).strip(), new_panel=new_panel)
    if name is not None:
        feed.name = str(name).strip()
    if feed_type is not None:
        if isinstance(feed_type, str):
            found = PowerFeedType.objects.filter(slug=feed_type).first()
            if found is None:
                raise ValidationError(
                    {"feed_type": f"feed_type: no power-feed type {feed_type[:40]!r} in the catalog"}
                )
            feed_type = found
        feed.feed_type = feed_type
    saved = _save_edit(feed, design=locked, user=user, before=before)
    _check_feed_carries_its_racks(saved)
    return saved


def _panel_check(design: Design, panel: str, *, new_panel: bool) -> str:
    panels = set(PowerFeed.objects.filter(design=design).values_list("panel", flat=True))
    if panel in panels or (new_panel and panel):
        return panel
    known = ", ".join(sorted(panels)[:12]) + (", …" if len(panels) > 12 else "")
    raise ValidationError(
        {
            "panel": f"panel: this design has no panel {panel[:48]!r} (its panels: {known}); "
            "choose one of them, or start a new panel explicitly"
        }
    )


def _check_feed_carries_its_racks(feed: PowerFeed) -> None:
    racks = list(feed.racks.all())
    load_kw = sum(r.power_budget_kw for r in racks)
    capacity_kw = feed.feed_type.capacity_kw
    if load_kw > capacity_kw + 1e-9:
        raise ValidationError(
            {
                "feed_type": f"feed_type: {feed.feed_type} carries {capacity_kw:.1f} kW, below the "
                f"{load_kw:.1f} kW budget of the racks it serves"
            }
        )
    for rack in racks:
        shortfalls = rack.feed_shortfalls()
        if shortfalls:
            raise ValidationError(
                {
                    "feed_type": [
                        f"feed_type: with {feed.feed_type}, rack {rack.name}: {m}" for m in shortfalls
                    ]
                }
            )


# --- adding and removing racks of servers ---------------------------------------------------


def _design_edited(design: Design) -> None:
    """After racks were added or removed the generator no longer builds this design: it becomes
    hand-edited (its parameters stay as provenance) and its totals are counted again."""
    from topology.selectors import design_summary_now

    params = dict(design.parameters or {})
    if design.generator != Generator.MANUAL:
        params["derived_from"] = design.generator
    try:
        summary = design_summary_now(design=design)
    except FabricError as exc:  # the transaction rolls back: the edit is refused, nothing is lost
        raise ValidationError(
            {"__all__": f"design: this edit would leave an inconsistent fabric ({exc})"}
        ) from None
    Design.objects.filter(pk=design.pk).update(
        generator=Generator.MANUAL, parameters=json_safe(params), summary=json_safe(summary)
    )
    design.refresh_from_db(fields=["generator", "parameters", "summary"])


def _next_index(names, prefix: str) -> int:
    pattern = re.compile(rf"^{re.escape(prefix)}(\d+)$")
    numbers = [int(m.group(1)) for n in names if (m := pattern.match(n))]
    return max(numbers, default=-1) + 1


def _free_tile(rack: Rack) -> tuple[int, int]:
    """The first free tile of the rack's row; the hall grows by a column when the row is full."""
    hall = rack.hall
    taken = set(Rack.objects.filter(hall=hall, row=rack.row).values_list("column", flat=True))
    for column in range(hall.columns):
        if column not in taken:
            return rack.row, column
    if hall.columns >= 1000:
        raise ValidationError({"like": f"like: row {rack.row} of {hall.name} is full (1000 columns)"})
    hall.columns += 1
    hall.save(update_fields=["columns"])
    return rack.row, hall.columns - 1


def _free_leaf_ports(design: Design) -> dict[int, int]:
    leaves = (
        Switch.objects.filter(design=design, tier=SwitchTier.LEAF)
        .annotate(down=Count("downlinks", distinct=True), up=Count("uplinks", distinct=True))
        .values_list("pk", "ports", "switch_type__radix", "down", "up")
    )
    return {pk: (ports or radix) - down - up for pk, ports, radix, down, up in leaves}


def _leaf_for(template_leaf: Switch, free: dict[int, int], by_rail: dict[int, list[Switch]]) -> Switch:
    """The template's leaf if it has a free port, else a leaf of the same rail (same group first)."""
    candidates = sorted(
        by_rail.get(template_leaf.rail, []), key=lambda s: (s.group != template_leaf.group, s.pk)
    )
    for leaf in [template_leaf, *candidates]:
        if free.get(leaf.pk, 0) > 0:
            free[leaf.pk] -= 1
            return leaf
    rail = f"rail {template_leaf.rail}" if template_leaf.rail >= 0 else "its leaves"
    raise ValidationError(
        {
            "like": f"like: no leaf switch of {rail} has a free port for the new servers (every port "
            "is in use); generate a larger design instead"
        }
    )


@transaction.atomic
def rack_add(*, design: Design, user, expected_version: int, like: Rack) -> Rack:
    """Add a rack of servers like an existing one (same servers, scale-up trays, budget and
    feeds), next to it in its row; each server NIC is cabled to a free port of a leaf on the
    same rail as its model's."""
    require(design, user, CHANGE)
    locked = design_lock(design, expected_version)
    like = Rack.objects.select_related("hall").filter(pk=like.pk, hall__design=locked).first()
    if like is None:
        raise ValidationError({"like": "like: not a rack of this design"})
    nodes = list(like.nodes.select_related("server_type").order_by("u_position"))
    if not nodes:
        raise ValidationError({"like": f"like: rack {like.name} holds no servers; choose a rack of servers"})
    if like.switches.exclude(tier=SwitchTier.SCALEUP).exists():
        raise ValidationError(
            {"like": f"like: rack {like.name} holds scale-out switches; choose a rack of servers"}
        )
    row, column = _free_tile(like)
    name = f"R{row // 2 + 1:02d}-{column + 1:02d}"
    if Rack.objects.filter(hall=like.hall, name=name).exists():
        names = Rack.objects.filter(hall=like.hall).values_list("name", flat=True)
        name = f"{name}-{_next_index(names, name + '-')}"
    rack = Rack(
        hall=like.hall,
        name=name,
        row=row,
        column=column,
        kind=like.kind,
        u_height=like.u_height,
        power_budget_kw=like.power_budget_kw,
    )
    rack.full_clean()
    rack.save()
    first = _next_index(Node.objects.filter(rack__hall__design=locked).values_list("name", flat=True), "node")
    new_nodes = Node.objects.bulk_create(
        [
            Node(rack=rack, server_type=n.server_type, name=f"node{first + i:05d}", u_position=n.u_position)
            for i, n in enumerate(nodes)
        ]
    )
    Gpu.objects.bulk_create(
        [Gpu(node=node, index=i) for node in new_nodes for i in range(node.server_type.gpus_per_server)]
    )
    _copy_scaleup_switches(like, rack, locked)
    _cable_like(nodes, new_nodes, locked)
    for feed in like.feeds.all():
        copy = PowerFeed.objects.create(
            design=locked,
            feed_type=feed.feed_type,
            side=feed.side,
            panel=feed.panel,
            name=f"{feed.panel}-{FeedSide(feed.side).label}-{rack.name}"[:48],
        )
        copy.racks.add(rack)
    rack.full_clean()
    gpus = sum(n.server_type.gpus_per_server for n in new_nodes)
    design_changed(
        locked,
        user=user,
        change=Change(
            ChangeAction.ADDED,
            "rack",
            rack.name,
            f"rack {rack.name} added like {like.name}: {len(new_nodes)} servers, {gpus} GPUs, "
            f"{rack.power_budget_kw:g} kW budget",
        ),
    )
    _design_edited(locked)
    return rack


def _copy_scaleup_switches(like: Rack, rack: Rack, design: Design) -> None:
    trays = list(like.switches.filter(tier=SwitchTier.SCALEUP).order_by("u_position"))
    if not trays:
        return
    first = _next_index(Switch.objects.filter(design=design).values_list("name", flat=True), "scaleup")
    Switch.objects.bulk_create(
        [
            Switch(
                design=design,
                switch_type=s.switch_type,
                name=f"scaleup{first + i:05d}",
                tier=s.tier,
                rack=rack,
                u_position=s.u_position,
                ports=s.ports,
                group=s.group,
                rail=s.rail,
            )
            for i, s in enumerate(trays)
        ]
    )


def _cable_like(nodes: list[Node], new_nodes: list[Node], design: Design) -> None:
    links = (
        Link.objects.filter(node__in=nodes).select_related("upper_switch").order_by("node_id", "nic_index")
    )
    by_node: dict[int, list[Link]] = {}
    for link in links:
        by_node.setdefault(link.node_id, []).append(link)
    free = _free_leaf_ports(design)
    by_rail: dict[int, list[Switch]] = {}
    for leaf in Switch.objects.filter(design=design, tier=SwitchTier.LEAF):
        by_rail.setdefault(leaf.rail, []).append(leaf)
    new_links = []
    for old, new in zip(nodes, new_nodes, strict=True):
        for link in by_node.get(old.pk, []):
            leaf = _leaf_for(link.upper_switch, free, by_rail)
            new_links.append(
                Link(
                    design=design,
                    link_type_id=link.link_type_id,
                    tier=link.tier,
                    gbps=link.gbps,
                    node=new,
                    nic_index=link.nic_index,
                    upper_switch=leaf,
                )
            )
    Link.objects.bulk_create(new_links, batch_size=2000)


@transaction.atomic
def rack_remove(*, rack: Rack, user, expected_version: int) -> None:
    """Remove a rack of servers with its servers, GPUs, scale-up trays, cables and the feeds that
    served only it. Racks of scale-out switches stay (other racks' servers hang off them)."""
    design = design_of(rack)
    require(design, user, CHANGE)
    locked = design_lock(design, expected_version)
    rack = Rack.objects.select_related("hall").get(pk=rack.pk)
    scale_out = rack.switches.exclude(tier=SwitchTier.SCALEUP).count()
    if scale_out:
        raise ValidationError(
            {
                "rack": f"rack: {rack.name} holds {scale_out} scale-out switches that other racks' servers "
                "connect to; remove racks of servers only"
            }
        )
    servers = rack.nodes.count()
    if not Node.objects.filter(rack__hall__design=locked).exclude(rack=rack).exists():
        raise ValidationError(
            {"rack": f"rack: {rack.name} holds the design's last servers; delete the design instead"}
        )
    name = rack.name
    only_here = PowerFeed.objects.filter(racks=rack).annotate(n=Count("racks")).filter(n=1)
    PowerFeed.objects.filter(pk__in=list(only_here.values_list("pk", flat=True))).delete()
    rack.delete()
    design_changed(
        locked,
        user=user,
        change=Change(ChangeAction.REMOVED, "rack", name, f"rack {name} removed with its {servers} servers"),
    )
    _design_edited(locked)


# --- fork and delete -------------------------------------------------------------------------


def _copy_names(source: Design, copy: Design) -> None:
    """Give the copy's servers, switches and feeds the source's names (the plan numbers them)."""
    for model, path in ((Node, "rack__hall__design"), (Switch, "design"), (PowerFeed, "design")):
        names = list(model.objects.filter(**{path: source}).order_by("pk").values_list("name", flat=True))
        rows = list(model.objects.filter(**{path: copy}).order_by("pk").only("pk", "name"))
        renamed = [row for row, name in zip(rows, names, strict=True) if row.name != name]
        if not renamed:
            continue
        for row in renamed:  # two steps: a swap of two names must not trip the unique constraint
            row.name = f"~{row.pk}"
        model.objects.bulk_update(renamed, ["name"], batch_size=2000)
        wanted = dict(zip([r.pk for r in rows], names, strict=True))
        for row in renamed:
            row.name = wanted[row.pk]
        model.objects.bulk_update(renamed, ["name"], batch_size=2000)


@transaction.atomic
def design_fork(
    *, design: Design, team: Team, user, name: str | None = None, on_progress: OnProgress | None = None
) -> Design:
    """Copy a design as saved (every edit included) into a team the user may change, with its
    scenarios (copied by the scenarios app on ``design_forked``); runs are not copied."""
    require(design, user, VIEW)
    require(team, user, CHANGE)
    from topology.selectors import design_fork_name, design_plan

    design = Design.objects.select_related("team").get(pk=design.pk)  # the version as saved now

    name = design_name_check(team=team, name=name) if name else design_fork_name(design=design, team=team)
    try:
        plan = design_plan(design=design)
    except FabricError as exc:
        raise ValidationError({"__all__": f"design: “{design.name}” cannot be copied ({exc})"}) from None
    copy = design_create_from_plan(
        plan=plan,
        name=name,
        team=team,
        user=user,
        description=design.description,
        on_progress=on_progress,
        change=Change(
            ChangeAction.CREATED,
            "design",
            name,
            f"forked from “{design.name}” version {design.version} of team {design.team}",
        ),
    )
    _copy_names(design, copy)
    design_forked.send(sender=Design, source=design, copy=copy, user=user)
    return copy


@transaction.atomic
def design_delete(*, design: Design, user) -> None:
    """Delete a design with its scenarios and runs (a team admin's action); runs in progress are
    cancelled first (by the scenarios app on ``design_deleting``)."""
    require(design, user, MANAGE)
    design_deleting.send(sender=Design, design=design, user=user)
    design.delete()


# --- Whole-design rules ---------------------------------------------------------------------


def design_validate(*, design: Design) -> list[str]:
    """Rules across a design that no single row can check; returns one message per violation.

    - a switch uses no more ports than it has at the fabric speed (radix × breakout);
    - each side of every rack's feeds carries the rack's budget, and no feed carries more than
      its derated capacity across the racks it serves.
    """
    problems: list[str] = []
    over_radix = (
        Switch.objects.filter(design=design)
        .annotate(down=Count("downlinks", distinct=True), up=Count("uplinks", distinct=True))
        .annotate(in_use=F("down") + F("up"))
        .filter(in_use__gt=Case(When(ports=0, then=F("switch_type__radix")), default=F("ports")))
        .values_list("name", "in_use", "ports", "switch_type__radix")
    )
    problems += [
        f"switch {name}: {in_use} ports in use exceed its {ports or radix} ports"
        for name, in_use, ports, radix in over_radix
    ]
    racks = Rack.objects.filter(hall__design=design).prefetch_related("feeds__feed_type")
    problems += [f"rack {rack.name}: {message}" for rack in racks for message in rack.feed_shortfalls()]
    feed_loads = PowerFeed.objects.filter(design=design).annotate(load_kw=Sum("racks__power_budget_kw"))
    for feed in feed_loads.select_related("feed_type"):
        if feed.load_kw and feed.load_kw > feed.feed_type.capacity_kw + 1e-9:
            problems.append(
                f"feed {feed.name}: serves {feed.load_kw:.1f} kW of racks, above its "
                f"{feed.feed_type.capacity_kw:.1f} kW derated capacity"
            )
    return problems
