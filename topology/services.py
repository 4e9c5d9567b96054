"""Writes and actions of the topology app: catalog import/export, saving a generated design,
validating a whole design, cloning, and the demo data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Case, Count, F, Sum, When
from django.utils import timezone
from django.utils.text import slugify

from topology.choices import FeedSide, SwitchTier
from topology.fabric.jsonsafe import json_safe
from topology.fabric.specs import SPEC_TYPES, Catalog, CatalogError, catalog_from_dict
from topology.models import (
    Design,
    Gpu,
    GpuType,
    Hall,
    Link,
    LinkType,
    Node,
    PowerFeed,
    PowerFeedType,
    Rack,
    ServerType,
    Switch,
    SwitchType,
    Team,
    TeamMembership,
)
from twin.permissions import CHANGE, require

BULK_BATCH = 2000

# Catalog kind (YAML key) -> Django model; the YAML key of a server's GPU is `gpu`.
CATALOG_MODELS = {
    "gpus": GpuType,
    "servers": ServerType,
    "switches": SwitchType,
    "links": LinkType,
    "feeds": PowerFeedType,
}


# --- Catalog ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CatalogImportReport:
    """What a catalog import did, per kind: slugs created and updated (existing rows are only
    updated with ``update``)."""

    created: dict[str, list[str]]
    updated: dict[str, list[str]]

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.created.values()) + sum(len(v) for v in self.updated.values())


def _row_values(kind: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    values = {k: v for k, v in entry.items() if k != "slug"}
    if kind == "servers":
        values["gpu_type"] = GpuType.objects.get(slug=values.pop("gpu"))
    if kind == "switches":
        values["roles"] = list(values["roles"])
    return values


def _catalog_check(data: Mapping[str, Any]) -> None:
    """Validate a document with the pure loader's rules, merged over the catalog already saved
    (so a file may add a server whose GPU is only in the database)."""
    from topology.selectors import catalog_load

    merged = catalog_load().to_dict()
    try:
        for kind in SPEC_TYPES:
            entries = data.get(kind) or []
            if not isinstance(entries, list):
                raise ValidationError(f"{kind}: must be a list of entries")
            incoming = {e["slug"]: e for e in entries}
            merged[kind] = [e for e in merged[kind] if e["slug"] not in incoming] + entries
        catalog_from_dict(merged)
    except CatalogError as exc:
        raise ValidationError(str(exc)) from exc
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValidationError(f"catalog: malformed entry ({exc})") from exc


@transaction.atomic
def catalog_import(*, data: Mapping[str, Any], update: bool = False) -> CatalogImportReport:
    """Create the catalog rows of a parsed catalog YAML document that are missing, all or nothing.

    Rows that exist already are left as they are (a curator's edits in the admin survive every
    re-seed); with ``update`` they are overwritten by the document and every design using them
    gets a new version. The document is validated first with the same rules as the pure
    loader, then each row with ``full_clean``; any error names the entry and field and nothing
    is saved.
    """
    if not isinstance(data, Mapping):
        raise ValidationError("catalog: the document must be a mapping with gpus, servers, ...")
    unknown = set(data) - set(SPEC_TYPES)
    if unknown:
        raise ValidationError(f"catalog: unknown section(s) {', '.join(sorted(unknown))}")
    _catalog_check(data)
    created: dict[str, list[str]] = {kind: [] for kind in SPEC_TYPES}
    updated: dict[str, list[str]] = {kind: [] for kind in SPEC_TYPES}
    for kind, model in CATALOG_MODELS.items():
        for entry in data.get(kind) or []:
            slug = entry["slug"]
            try:
                values = _row_values(kind, entry)
            except GpuType.DoesNotExist as exc:
                raise ValidationError(f"servers[{slug}].gpu: unknown GPU slug {entry.get('gpu')!r}") from exc
            existing = model.objects.filter(slug=slug).first()
            row = existing if existing is not None and update else model(slug=slug)
            for field_name, value in values.items():
                setattr(row, field_name, value)
            try:
                # Every entry is checked, also one that will not be saved: a bad file is an error.
                row.full_clean(validate_unique=existing is None or update)
            except ValidationError as exc:
                messages = "; ".join(f"{field}: {' '.join(errs)}" for field, errs in exc.message_dict.items())
                raise ValidationError(f"{kind}[{slug}]: {messages}") from exc
            is_new = existing is None
            if not (is_new or update):
                continue
            row.save()
            if not is_new:
                catalog_changed(row)
            (created if is_new else updated)[kind].append(slug)
    return CatalogImportReport(created=created, updated=updated)


def catalog_export() -> dict[str, list[dict[str, Any]]]:
    """The whole catalog as the YAML document ``catalog_import`` reads."""
    from topology.selectors import catalog_load

    return catalog_load().to_dict()


# --- Design versions -------------------------------------------------------------------------

#: Which catalog row a design part points at (for ``catalog_changed``).
_CATALOG_USERS = {
    GpuType: "halls__racks__nodes__server_type__gpu_type",
    ServerType: "halls__racks__nodes__server_type",
    SwitchType: "switches__switch_type",
    LinkType: "links__link_type",
    PowerFeedType: "feeds__feed_type",
}


def design_of(part) -> Design:
    """The design a row belongs to (a Design, Hall, Rack, Node, Gpu, Switch, Link or PowerFeed)."""
    if isinstance(part, Design):
        return part
    if isinstance(part, Rack):
        return part.hall.design
    if isinstance(part, Node):
        return part.rack.hall.design
    if isinstance(part, Gpu):
        return part.node.rack.hall.design
    return part.design  # Hall, Switch, Link, PowerFeed


#: ORM path from each design part to its design.
_DESIGN_PATHS = {
    Design: "pk",
    Hall: "design",
    Rack: "hall__design",
    Node: "rack__hall__design",
    Gpu: "node__rack__hall__design",
    Switch: "design",
    Link: "design",
    PowerFeed: "design",
}


def designs_of(parts) -> Any:
    """The designs the rows of a queryset of design parts belong to."""
    return Design.objects.filter(pk__in=parts.values(_DESIGN_PATHS[parts.model]))


def design_changed(design: Design) -> Design:
    """Record that a design (or any part of it) changed: bump its version in this transaction.

    Every cache of derived data is keyed by ``(design id, version)`` (``topology.caches``), so
    this is the one invalidation. It must run inside the transaction that made the change, so
    that no reader ever sees the new rows under the old version.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("design_changed: call it inside the transaction that changed the design")
    Design.objects.filter(pk=design.pk).update(version=F("version") + 1, updated=timezone.now())
    design.refresh_from_db(fields=["version", "updated"])
    return design


def designs_changed(designs) -> int:
    """``design_changed`` for every design of a queryset (a catalog edit); returns how many."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("designs_changed: call it inside the transaction that made the change")
    pks = list(designs.values_list("pk", flat=True).distinct())
    return Design.objects.filter(pk__in=pks).update(version=F("version") + 1, updated=timezone.now())


def catalog_changed(entry) -> int:
    """A catalog row changed: every design that uses it gets a new version (its derived data,
    nameplate power or link latencies, changed with it)."""
    path = _CATALOG_USERS[type(entry)]
    return designs_changed(Design.objects.filter(**{path: entry}))


@transaction.atomic
def design_part_save(*, part, user) -> Any:
    """Validate and save one row of a design (or the design itself) and bump the version.

    Raises
    ------
    NotFound, Forbidden (``twin.permissions``), ValidationError
    """
    design = design_of(part)
    require(design, user, CHANGE)
    part.full_clean()
    part.save()
    design_changed(design)
    return part


@transaction.atomic
def design_part_delete(*, part, user) -> None:
    """Delete one row of a design (its dependants cascade) and bump the version."""
    design = design_of(part)
    require(design, user, CHANGE)
    part.delete()
    design_changed(design)


# --- Saving a generated design --------------------------------------------------------------


def _catalog_rows(plan) -> dict[str, dict[str, Any]]:
    """Database rows of every catalog entry a plan uses, failing clearly if one is missing."""
    wanted = {
        "servers": [plan.server.slug],
        "switches": [s.slug for s in plan.switch_types],
        "links": [s.slug for s in plan.link_types],
        "feeds": [s.slug for s in plan.feed_types],
    }
    rows: dict[str, dict[str, Any]] = {}
    for kind, slugs in wanted.items():
        found = CATALOG_MODELS[kind].objects.in_bulk(slugs, field_name="slug")
        missing = sorted(set(slugs) - set(found))
        if missing:
            raise ValidationError(
                f"{kind}: {', '.join(missing)} not in the catalog database "
                f"(run `python manage.py catalog import`)"
            )
        rows[kind] = found
    return rows


@transaction.atomic
def design_create_from_plan(*, plan, name: str, team: Team, user=None, description: str = "") -> Design:
    """Save a generated ``FabricPlan`` as a Design with every rack, node, GPU, switch, link and feed.

    One ``bulk_create`` per table keeps a 16,384-GPU design well under the 30 s budget.
    """
    if Design.objects.filter(team=team, name=name).exists():
        raise ValidationError({"name": f"team {team} already has a design named {name!r}"})
    rows = _catalog_rows(plan)
    summary = plan.summary()
    design = Design(
        name=name,
        description=description,
        owner=user,
        team=team,
        generator=plan.generator,
        parameters=json_safe(plan.params),
        summary=json_safe(summary),
    )
    design.full_clean()
    design.save()
    hall = Hall.objects.create(design=design, name="Hall 1", rows=plan.hall_rows, columns=plan.hall_cols)
    racks = Rack.objects.bulk_create(
        [
            Rack(
                hall=hall,
                name=name_,
                row=int(r),
                column=int(c),
                kind=int(k),
                u_height=int(u),
                power_budget_kw=float(b),
            )
            for name_, r, c, k, u, b in zip(
                plan.rack_name,
                plan.rack_row,
                plan.rack_col,
                plan.rack_kind,
                plan.rack_units,
                plan.rack_budget_kw,
                strict=True,
            )
        ],
        batch_size=BULK_BATCH,
    )
    rack_ids = np.array([r.pk for r in racks])
    server_row = rows["servers"][plan.server.slug]
    nodes = Node.objects.bulk_create(
        [
            Node(rack_id=int(rack_ids[r]), server_type=server_row, name=f"node{i:05d}", u_position=int(u))
            for i, (r, u) in enumerate(zip(plan.node_rack, plan.node_u, strict=True))
        ],
        batch_size=BULK_BATCH,
    )
    node_ids = np.array([n.pk for n in nodes])
    per_node = plan.server.gpus_per_server
    Gpu.objects.bulk_create(
        [Gpu(node_id=int(nid), index=i) for nid in node_ids for i in range(per_node)],
        batch_size=BULK_BATCH,
    )
    switch_type_rows = [rows["switches"][s.slug] for s in plan.switch_types]
    tier_names = {t.value: t.label.lower().replace("-", "") for t in SwitchTier}
    switches = Switch.objects.bulk_create(
        [
            Switch(
                design=design,
                switch_type=switch_type_rows[int(t)],
                name=f"{tier_names[int(tier)]}{i:05d}",
                tier=int(tier),
                rack_id=int(rack_ids[r]),
                u_position=int(u),
                group=int(g),
                rail=int(rl),
                ports=int(ports),
            )
            for i, (t, tier, r, u, g, rl, ports) in enumerate(
                zip(
                    plan.switch_type,
                    plan.switch_tier,
                    plan.switch_rack,
                    plan.switch_u,
                    plan.switch_group,
                    plan.switch_rail,
                    plan.switch_ports,
                    strict=True,
                )
            )
        ],
        batch_size=BULK_BATCH,
    )
    switch_ids = np.array([s.pk for s in switches], dtype=np.int64)
    _bulk_create_links(plan, design, rows, node_ids, switch_ids)
    _bulk_create_feeds(plan, design, rows, rack_ids)
    return design


def _bulk_create_links(plan, design: Design, rows, node_ids, switch_ids) -> None:
    nic_vertices = plan.n_nodes * plan.server.nics_per_server
    link_type_rows = [rows["links"][s.slug] for s in plan.link_types]
    a = np.asarray(plan.link_a)
    b = np.asarray(plan.link_b) - nic_vertices
    from_nic = a < nic_vertices
    node_of = np.where(from_nic, a // plan.server.nics_per_server, -1)
    nic_of = np.where(from_nic, a % plan.server.nics_per_server, -1)
    lower_switch = np.where(from_nic, -1, a - nic_vertices)
    objs = []
    for i in range(len(a)):
        is_nic = bool(from_nic[i])
        objs.append(
            Link(
                design=design,
                link_type=link_type_rows[int(plan.link_type[i])],
                tier=int(plan.link_tier[i]),
                gbps=float(plan.link_gbps[i]),
                node_id=int(node_ids[node_of[i]]) if is_nic else None,
                nic_index=int(nic_of[i]) if is_nic else None,
                lower_switch_id=None if is_nic else int(switch_ids[lower_switch[i]]),
                upper_switch_id=int(switch_ids[b[i]]),
            )
        )
    Link.objects.bulk_create(objs, batch_size=BULK_BATCH)


def _bulk_create_feeds(plan, design: Design, rows, rack_ids) -> None:
    feed_type_rows = [rows["feeds"][s.slug] for s in plan.feed_types]
    feeds = PowerFeed.objects.bulk_create(
        [
            PowerFeed(
                design=design,
                feed_type=feed_type_rows[int(t)],
                side=int(side),
                panel=panel,
                name=f"{panel}-{FeedSide(int(side)).label}-{i:05d}",
            )
            for i, (t, side, panel) in enumerate(
                zip(plan.feed_type, plan.feed_side, plan.feed_panel, strict=True)
            )
        ],
        batch_size=BULK_BATCH,
    )
    feed_ids = np.array([f.pk for f in feeds])
    through = PowerFeed.racks.through
    through.objects.bulk_create(
        [
            through(powerfeed_id=int(feed_ids[f]), rack_id=int(rack_ids[r]))
            for f, r in zip(plan.feed_rack_feed, plan.feed_rack_rack, strict=True)
        ],
        batch_size=BULK_BATCH,
    )


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
    for rack in racks:
        capacity = {FeedSide.A: 0.0, FeedSide.B: 0.0}
        for feed in rack.feeds.all():
            capacity[feed.side] += feed.feed_type.capacity_kw
        for side, kw in capacity.items():
            if kw + 1e-9 < rack.power_budget_kw:
                problems.append(
                    f"rack {rack.name}: side {FeedSide(side).label} feeds carry {kw:.1f} kW, "
                    f"below the {rack.power_budget_kw:.1f} kW budget"
                )
    feed_loads = PowerFeed.objects.filter(design=design).annotate(load_kw=Sum("racks__power_budget_kw"))
    for feed in feed_loads.select_related("feed_type"):
        if feed.load_kw and feed.load_kw > feed.feed_type.capacity_kw + 1e-9:
            problems.append(
                f"feed {feed.name}: serves {feed.load_kw:.1f} kW of racks, above its "
                f"{feed.feed_type.capacity_kw:.1f} kW derated capacity"
            )
    return problems


# --- Teams and demo data --------------------------------------------------------------------


def team_create(*, name: str, users=()) -> Team:
    """Create a team (or return the existing one of that name) and add the users to it."""
    team, _ = Team.objects.get_or_create(name=name, defaults={"slug": slugify(name)})
    for user in users:
        TeamMembership.objects.get_or_create(team=team, user=user)
    return team


DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo-twin-2026"
DEMO_TEAM = "Demo team"
DEMO_DESIGNS = (
    {
        "name": "Selene-like A100 SuperPOD (384 nodes)",
        "generator": "rail-optimized",
        "server": "dgx-a100",
        "nodes": 384,
    },
    {
        "name": "H100 rail-optimized 2:1 (256 nodes)",
        "generator": "rail-optimized",
        "server": "dgx-h100",
        "nodes": 256,
        "oversubscription": 2.0,
    },
    {"name": "GB200 NVL72 x8", "generator": "nvl72", "server": "gb200-nvl72", "nodes": 144},
)


def demo_seed(*, catalog: Catalog) -> Team:
    """The demo user, team and designs that `make run` shows a newcomer (idempotent)."""
    from topology.fabric.generators import generate

    user_model = get_user_model()
    user = user_model.objects.filter(username=DEMO_USERNAME).first()
    if user is None:
        user = user_model.objects.create_user(DEMO_USERNAME, password=DEMO_PASSWORD)
    team = team_create(name=DEMO_TEAM, users=[user])
    for spec in DEMO_DESIGNS:
        if Design.objects.filter(team=team, name=spec["name"]).exists():
            continue
        params = {k: v for k, v in spec.items() if k not in ("name", "generator")}
        plan = generate(spec["generator"], catalog=catalog, **params)
        design_create_from_plan(plan=plan, name=spec["name"], team=team, user=user)
    return team
