"""Saving a generated ``FabricPlan`` as rows, the one validation of generator parameters (the
command line, the design form, its preview and the API) and the one rule of design names."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from django.core.exceptions import ValidationError
from django.db import transaction

from teams.models import Team
from teams.permissions import CHANGE, require
from topology.choices import ChangeAction, FeedSide, SwitchTier
from topology.fabric.generators import GENERATORS, generate
from topology.fabric.plan import FabricPlan
from topology.fabric.specs import Catalog, CatalogError
from topology.models import CATALOG_MODELS, Design, Gpu, Hall, Link, Node, PowerFeed, Rack, Switch
from topology.services.history import Change, history_record
from utilities.jsonsafe import json_safe

logger = logging.getLogger(__name__)

BULK_BATCH = 2000
#: Rows per progress step while saving (a 16,384-GPU design reports about 40 steps).
PROGRESS_ROWS = 4000
#: The parameters of ``manage.py design generate`` (and of the design form and the API).
GENERATOR_PARAMS = ("server", "nodes", "oversubscription", "nic_gbps", "su_nodes", "switch", "tiers")

OnProgress = Callable[[float, str], None]


# --- Generator parameters: one validation ----------------------------------------------------


def _field_of(message: str) -> str:
    head, sep, _ = message.partition(":")
    return head if sep and head in (*GENERATOR_PARAMS, "generator") else "__all__"


def generator_plan(
    *, generator: str, params: Mapping[str, Any], catalog: Catalog | None = None
) -> FabricPlan:
    """The plan a generator builds from parameters: the one validation that ``manage.py design
    generate``, the design form, its preview and the API share.

    Raises
    ------
    ValidationError
        ``{parameter: "parameter: problem (limit)"}``, e.g. ``{"nodes": "nodes: must be ≥ 1 (got 0)"}``.
    """
    from topology.selectors import catalog_load

    if generator not in GENERATORS:
        raise ValidationError(
            {"generator": f"generator: must be one of {', '.join(GENERATORS)} (got {str(generator)[:40]!r})"}
        )
    if not isinstance(params, Mapping):
        raise ValidationError({"__all__": "params: must be a mapping of generator parameters"})
    unknown = sorted(str(k)[:40] for k in params if k not in GENERATOR_PARAMS)
    if unknown:
        raise ValidationError(
            {"__all__": f"params: unknown {', '.join(unknown)} (known: {', '.join(GENERATOR_PARAMS)})"}
        )
    for required in ("server", "nodes"):
        if params.get(required) in (None, ""):
            raise ValidationError({required: f"{required}: required"})
    given = {k: v for k, v in params.items() if v not in (None, "")}
    try:
        return generate(generator, catalog=catalog or catalog_load(), **given)
    except (CatalogError, ValueError, TypeError) as exc:
        message = str(exc)
        raise ValidationError({_field_of(message): message}) from None


def generator_description(generator: str, params: Mapping[str, Any]) -> str:
    """ "rail-optimized with server=dgx-h100, nodes=2048, ..." (the history's creation line)."""
    shown = ", ".join(
        f"{k}={params[k]:g}" if isinstance(params[k], float) else f"{k}={params[k]}"
        for k in GENERATOR_PARAMS
        if params.get(k) is not None
    )
    return f"{generator} with parameters {shown}"


# --- Design names: one rule ------------------------------------------------------------------


def design_name_check(*, team: Team, name: Any, design: Design | None = None) -> str:
    """The one rule of a design's name, for every door that names a design (create from a plan,
    generate, fork, rename, import of a design or scenario file, the command line): not blank,
    at most the column's length, and no other design of the team (``design`` itself excepted)
    called so. Returns the name without surrounding blanks.

    Raises
    ------
    ValidationError
        ``{"name": "name: ..."}``.
    """
    name = str(name or "").strip()
    if not name:
        raise ValidationError({"name": "name: required"})
    max_length = Design._meta.get_field("name").max_length
    if len(name) > max_length:
        raise ValidationError({"name": f"name: at most {max_length} characters (got {len(name):,})"})
    taken = Design.objects.filter(team=team, name=name)
    if design is not None:
        taken = taken.exclude(pk=design.pk)
    if taken.exists():
        raise ValidationError({"name": f"name: team {team} already has a design named {name!r}"})
    return name


# --- Saving a plan ---------------------------------------------------------------------------


class _Rows:
    """Counts saved rows and reports the fraction done (``on_progress(0..1, stage)``)."""

    def __init__(self, plan: FabricPlan, on_progress: OnProgress | None):
        self.total = max(
            1,
            plan.n_racks
            + 2 * plan.n_nodes
            + plan.n_gpus
            + len(plan.switch_tier)
            + len(plan.link_a)
            + len(plan.feed_type)
            + len(plan.feed_rack_feed),
        )
        self.done = 0
        self.on_progress = on_progress

    def add(self, model, objs: list, stage: str) -> list:
        """``bulk_create`` in steps, reporting progress after each."""
        created = []
        for start in range(0, len(objs), PROGRESS_ROWS):
            created += model.objects.bulk_create(objs[start : start + PROGRESS_ROWS], batch_size=BULK_BATCH)
            self.step(len(objs[start : start + PROGRESS_ROWS]), stage)
        return created

    def step(self, rows: int, stage: str) -> None:
        self.done += rows
        if self.on_progress is not None:
            self.on_progress(min(self.done / self.total, 0.99), stage)


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
def design_create_from_plan(
    *,
    plan: FabricPlan,
    name: str,
    team: Team,
    user=None,
    description: str = "",
    on_progress: OnProgress | None = None,
    change: Change | None = None,
) -> Design:
    """Save a ``FabricPlan`` as a Design with every rack, node, GPU, switch, link and feed, and
    its first history entry (one "created from generator X with parameters Y" line: the rows are
    bulk-created, so no per-row history is written).

    One ``bulk_create`` per table keeps a 16,384-GPU design well under the 30 s budget.
    """
    name = design_name_check(team=team, name=name)
    rows = _catalog_rows(plan)
    design = Design(
        name=name,
        description=description,
        owner=user if user is not None and user.is_authenticated else None,
        team=team,
        generator=plan.generator,
        parameters=json_safe(plan.params),
        summary=json_safe(plan.summary()),
    )
    design.full_clean()
    design.save()
    progress = _Rows(plan, on_progress)
    hall = Hall.objects.create(design=design, name="Hall 1", rows=plan.hall_rows, columns=plan.hall_cols)
    racks = progress.add(
        Rack,
        [
            Rack(
                hall=hall,
                name=n,
                row=int(r),
                column=int(c),
                kind=int(k),
                u_height=int(u),
                power_budget_kw=float(b),
            )
            for n, r, c, k, u, b in zip(
                plan.rack_name,
                plan.rack_row,
                plan.rack_col,
                plan.rack_kind,
                plan.rack_units,
                plan.rack_budget_kw,
                strict=True,
            )
        ],
        "racks",
    )
    rack_ids = np.array([r.pk for r in racks])
    server_row = rows["servers"][plan.server.slug]
    nodes = progress.add(
        Node,
        [
            Node(rack_id=int(rack_ids[r]), server_type=server_row, name=f"node{i:05d}", u_position=int(u))
            for i, (r, u) in enumerate(zip(plan.node_rack, plan.node_u, strict=True))
        ],
        "servers",
    )
    node_ids = np.array([n.pk for n in nodes])
    per_node = plan.server.gpus_per_server
    progress.add(Gpu, [Gpu(node_id=int(nid), index=i) for nid in node_ids for i in range(per_node)], "GPUs")
    switch_ids = _create_switches(plan, design, rows, rack_ids, progress)
    _create_links(plan, design, rows, node_ids, switch_ids, progress)
    _create_feeds(plan, design, rows, rack_ids, progress)
    history_record(
        design=design,
        user=user,
        change=change
        or Change(
            ChangeAction.CREATED,
            "design",
            name,
            f"created from generator {generator_description(plan.generator, plan.params)}",
        ),
    )
    return design


def _create_switches(plan, design: Design, rows, rack_ids, progress: _Rows) -> np.ndarray:
    switch_type_rows = [rows["switches"][s.slug] for s in plan.switch_types]
    tier_names = {t.value: t.label.lower().replace("-", "") for t in SwitchTier}
    columns = zip(
        plan.switch_type,
        plan.switch_tier,
        plan.switch_rack,
        plan.switch_u,
        plan.switch_group,
        plan.switch_rail,
        plan.switch_ports,
        strict=True,
    )
    switches = progress.add(
        Switch,
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
            for i, (t, tier, r, u, g, rl, ports) in enumerate(columns)
        ],
        "switches",
    )
    return np.array([s.pk for s in switches], dtype=np.int64)


def _create_links(plan, design: Design, rows, node_ids, switch_ids, progress: _Rows) -> None:
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
    progress.add(Link, objs, "links")


def _create_feeds(plan, design: Design, rows, rack_ids, progress: _Rows) -> None:
    feed_type_rows = [rows["feeds"][s.slug] for s in plan.feed_types]
    feeds = progress.add(
        PowerFeed,
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
        "power feeds",
    )
    feed_ids = np.array([f.pk for f in feeds])
    through = PowerFeed.racks.through
    progress.add(
        through,
        [
            through(powerfeed_id=int(feed_ids[f]), rack_id=int(rack_ids[r]))
            for f, r in zip(plan.feed_rack_feed, plan.feed_rack_rack, strict=True)
        ],
        "power feeds",
    )


def design_generate(
    *,
    generator: str,
    params: Mapping[str, Any],
    name: str,
    team: Team,
    user,
    description: str = "",
    on_progress: OnProgress | None = None,
) -> Design:
    """Build a design from a generator and its parameters and save it in a team the user may
    change (``manage.py design generate --save`` in the browser and the API).

    Raises
    ------
    NotFound, Forbidden (``teams.permissions``), ValidationError (``{parameter: message}``, ``name``)
    """
    require(team, user, CHANGE)
    plan = generator_plan(generator=generator, params=params)
    return design_create_from_plan(
        plan=plan, name=name, team=team, user=user, description=description, on_progress=on_progress
    )
