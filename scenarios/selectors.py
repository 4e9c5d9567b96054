"""Reads of the scenarios app: visibility, a run's live state, per-rack values and floor plans.

``run_state`` is the exact JSON the run consumer sends first and the run page embeds;
``design_floor_plan_json`` is what the design page's floor plan draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db.models import QuerySet

from scenarios.choices import RunKind
from scenarios.metrics import DESIGN_METRICS, METRICS, RUN_METRICS, design_rack_arrays, metric_values
from scenarios.models import Run, RunArray, Scenario
from scenarios.storage import array_from_row

#: Summary keys a state/status message carries per run kind (the rest stays on the run page).
BRIEF_SUMMARY_KEYS = {
    RunKind.STEP: (
        "step_time_s",
        "mfu",
        "model_tflops_per_gpu",
        "tokens_per_s",
        "memory_gib_per_gpu",
        "fits",
        "max_link_utilization",
        "time_to_train_days",
        "gpus",
        "racks_aligned",
    ),
    RunKind.SWEEP: ("points", "best_time_to_train_gpus", "knee_gpus", "failed_points"),
    RunKind.SEARCH: ("candidates", "valid", "best"),
}


def scenarios_visible_to(user) -> QuerySet[Scenario]:
    """Scenarios on designs of the user's teams (every one for a superuser), newest first."""
    return Scenario.objects.visible_to(user).select_related("design", "created_by")


def runs_visible_to(user) -> QuerySet[Run]:
    """Runs of the scenarios the user may see, newest first."""
    return Run.objects.visible_to(user).select_related("scenario", "scenario__design")


def user_may_see_design(user, design_id: int) -> bool:
    """Whether the user's teams include the design's team (or the user is a superuser)."""
    from topology.models import Design

    return Design.objects.visible_to(user).filter(pk=design_id).exists()


def run_array(*, run: Run, name: str) -> np.ndarray | None:
    """A stored result array of the run (e.g. ``link_utilization`` (L,), ``rack_link_utilization``
    (R,), ``gpu_slowdown`` (G,), ``rack_slowdown`` (R,)), or None if the run has none of that name."""
    row = RunArray.objects.filter(run=run, name=name).first()
    return None if row is None else array_from_row(row)


def run_array_names(*, run: Run) -> list[str]:
    """Names of the arrays a run stored."""
    return list(RunArray.objects.filter(run=run).order_by("name").values_list("name", flat=True))


def brief_summary(kind: str, summary: dict[str, Any]) -> dict[str, Any]:
    """The few numbers of a run summary that live messages carry."""
    keys = BRIEF_SUMMARY_KEYS.get(kind, ())
    return {k: summary[k] for k in keys if k in summary}


def run_rack_values(*, run: Run, metric: str) -> list[float] | None:
    """Per-rack values of a floor-plan metric for this run's design (rounded, racks by pk).

    Design metrics ignore the run; run metrics are None until the run stored their array (or
    when a what-if changed the hall so the run's racks do not map onto the design).
    """
    return metric_values(metric, design=run.scenario.design, run=run)


def run_state(*, run: Run) -> dict[str, Any]:
    """The state of a run as the consumer sends it first and the run page embeds it.

    Returns
    -------
    dict
        ``{"id", "scenario": {"id", "name"}, "design": id, "kind", "kind_label", "status",
        "status_label", "progress", "stage", "error", "summary" (brief), "created", "started",
        "finished" (ISO 8601 or None), "duration_s", "active", "rack_values": {metric: [R
        floats] for each run metric the run has stored}}``.
    """
    rack_values = {}
    if not run.is_active or run.progress > 0:
        for name in RUN_METRICS:
            values = run_rack_values(run=run, metric=name)
            if values is not None:
                rack_values[name] = values
    return {**run_state_brief(run=run), "rack_values": rack_values}


def design_run_states(*, design, limit: int = 20) -> list[dict[str, Any]]:
    """Brief states (no rack values) of the design's latest runs, newest first."""
    runs = Run.objects.filter(scenario__design=design).select_related("scenario")[:limit]
    return [run_state_brief(run=run) for run in runs]


def run_state_brief(*, run: Run) -> dict[str, Any]:
    """``run_state`` without rack values (what the design page lists)."""
    return {
        "id": run.pk,
        "scenario": {"id": run.scenario_id, "name": run.scenario.name},
        "design": run.scenario.design_id,
        "kind": run.kind,
        "kind_label": run.get_kind_display(),
        "status": run.status,
        "status_label": run.get_status_display(),
        "progress": round(float(run.progress), 4),
        "stage": run.stage,
        "error": run.error,
        "summary": brief_summary(run.kind, run.summary or {}),
        "created": _iso(run.created),
        "started": _iso(run.started),
        "finished": _iso(run.finished),
        "duration_s": run.duration_s,
        "active": run.is_active,
    }


def design_floor_plan_json(*, design) -> dict[str, Any]:
    """The hall of a design for the floor-plan renderer, with every design metric's values.

    Returns
    -------
    dict
        ``{"design": id, "name", "rows", "columns", "racks": [{"id", "name", "row", "col",
        "kind"}] (racks of the first hall ordered by pk), "metrics": {name: Metric.describe()}
        (design and run metrics), "values": {design metric: [R floats]}, "power": {"budget_kw":
        [R], "nameplate_kw": [R]}}``. ``kind`` is the rack kind code (0 compute, 1 network).
    """
    from topology.models import Rack

    hall = design.halls.order_by("pk").first()
    if hall is None:
        return {
            "design": design.pk,
            "name": design.name,
            "rows": 0,
            "columns": 0,
            "racks": [],
            "metrics": {},
            "values": {},
            "power": {"budget_kw": [], "nameplate_kw": []},
        }
    racks = [
        {"id": pk, "name": name, "row": row, "col": col, "kind": kind}
        for pk, name, row, col, kind in Rack.objects.filter(hall=hall)
        .order_by("pk")
        .values_list("pk", "name", "row", "column", "kind")
    ]
    arrays = design_rack_arrays(design)
    return {
        "design": design.pk,
        "name": design.name,
        "rows": hall.rows,
        "columns": hall.columns,
        "racks": racks,
        "metrics": {name: metric.describe(design=design) for name, metric in METRICS.items()},
        "values": {name: metric_values(name, design=design) for name in DESIGN_METRICS},
        "power": {
            "budget_kw": np.round(arrays.budget_kw, 2).tolist(),
            "nameplate_kw": np.round(arrays.nameplate_kw, 2).tolist(),
        },
    }


def rack_elevation(*, design, rack_id: int) -> dict[str, Any] | None:
    """One rack of a design for the click-through panel: devices by U, links and feeds.

    Returns
    -------
    dict or None
        None if the rack is not in the design. Otherwise ``{"id", "name", "row", "col", "kind",
        "u_height", "power_budget_kw", "nameplate_kw", "devices": [{"type": "server"|"switch",
        "name", "model", "u", "height_u", "tier"?}] (top first), "links": [{"name", "tier",
        "gbps", "peer"}] (links with an end in the rack, at most 200, plus "links_total"),
        "feeds": [{"name", "side", "panel", "capacity_kw"}]}``.
    """
    from django.db.models import Q

    from topology.models import Link, Node, Rack, Switch

    rack = Rack.objects.filter(pk=rack_id, hall__design=design).first()
    if rack is None:
        return None
    devices = [
        {
            "type": "server",
            "name": n.name,
            "model": n.server_type.name,
            "u": n.u_position,
            "height_u": n.server_type.rack_units,
        }
        for n in Node.objects.filter(rack=rack).select_related("server_type")
    ] + [
        {
            "type": "switch",
            "name": s.name,
            "model": s.switch_type.name,
            "u": s.u_position,
            "height_u": s.switch_type.rack_units,
            "tier": s.get_tier_display(),
        }
        for s in Switch.objects.filter(rack=rack).select_related("switch_type")
    ]
    devices.sort(key=lambda d: -d["u"])
    links_q = Link.objects.filter(
        Q(node__rack=rack) | Q(lower_switch__rack=rack) | Q(upper_switch__rack=rack)
    ).select_related("node", "lower_switch", "upper_switch")
    links = [
        {
            "name": str(link),
            "tier": link.get_tier_display(),
            "gbps": link.gbps,
            "peer": link.upper_switch.name,
        }
        for link in links_q[:200]
    ]
    arrays = design_rack_arrays(design)
    position = int(np.searchsorted(arrays.rack_pk, rack.pk))
    return {
        "id": rack.pk,
        "name": rack.name,
        "row": rack.row,
        "col": rack.column,
        "kind": rack.kind,
        "u_height": rack.u_height,
        "power_budget_kw": rack.power_budget_kw,
        "nameplate_kw": round(float(arrays.nameplate_kw[position]), 2)
        if position < arrays.rack_pk.size
        else None,
        "devices": devices,
        "links": links,
        "links_total": links_q.count(),
        "feeds": [
            {
                "name": f.name,
                "side": f.get_side_display(),
                "panel": f.panel,
                "capacity_kw": round(f.feed_type.capacity_kw, 2),
            }
            for f in rack.feeds.select_related("feed_type").order_by("side", "name")
        ],
    }


def _iso(value) -> str | None:
    return value.isoformat() if value else None
