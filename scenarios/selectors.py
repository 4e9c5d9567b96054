"""Reads of the scenarios app: a run's live state, its charts, per-rack values and floor plans.

``run_state`` is the exact JSON the run consumer sends first and the run page embeds;
``design_floor_plan_json`` is what the design page's floor plan draws.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.core.exceptions import ValidationError

from scenarios.choices import RunStatus
from scenarios.kinds import floor_metrics, metric_by_name, registry
from scenarios.kinds.base import change_text
from scenarios.metrics import DESIGN_METRICS, rack_list
from scenarios.models import Run
from scenarios.provenance import (
    RunInputs,
    Setting,
    SettingChange,
    catalog_snapshot,
    digest_of,
    document_changes,
    document_settings,
)
from scenarios.sim.format.schema import CLUSTER
from scenarios.storage import run_array
from topology.selectors import design_rack_power


def run_kind_label(run: Run) -> str:
    """What pages call this run's kind (its registry label; the raw name if unregistered)."""
    kind = registry().get(run.kind)
    return kind.label if kind is not None else run.kind


def run_headline(run: Run) -> str:
    """The one result a list of runs shows (its kind's first figure), or "—"."""
    kind = registry().get(run.kind)
    return kind.headline(run.summary or {}) if kind is not None and run.summary else "—"


def brief_summary(kind: str, summary: dict[str, Any]) -> dict[str, Any]:
    """The few numbers of a run summary that live messages carry (the kind's live figures)."""
    spec = registry().get(kind)
    return spec.brief(summary or {}) if spec is not None else {}


def summary_figures(kind: str, summary: dict[str, Any]) -> list[dict[str, str]]:
    """``[{"key", "label", "text"}]``: the kind's live figures as the pages show them."""
    spec = registry().get(kind)
    return spec.summary_figures(summary or {}, live_only=True) if spec is not None else []


def run_charts(*, run: Run) -> list[dict[str, Any]]:
    """The charts of one run: its kind's, once it succeeded (or found the job infeasible: the
    kind then draws what explains why, e.g. the memory that does not fit)."""
    spec = registry().get(run.kind)
    if run.status not in (RunStatus.SUCCEEDED, RunStatus.INFEASIBLE) or spec is None:
        return []
    return spec.charts(run)


def metric_values(name: str, *, design, run: Run | None = None, decimals: int = 3) -> list[float] | None:
    """Per-rack values of the floor-plan metric ``name`` on ``design`` (rounded, racks by pk).

    Design metrics ignore the run; run metrics are None without a run, until the run stored
    their array, or when a what-if changed the hall so the run's racks do not map onto the
    design's. KeyError ``metric: unknown ... (known: ...)`` for a name not in the registry.
    """
    metric = metric_by_name(name)
    if metric.compute is not None:
        return rack_list(metric.compute(design=design), decimals)
    values = None if run is None else run_array(run=run, name=metric.array)
    if values is None or values.size != design_rack_power(design).rack_pk.size:
        return None
    return rack_list(values, decimals)


def run_metric_values(name: str, *, run: Run, decimals: int = 3) -> list[float] | None:
    """A run metric's per-rack values as the run stored them, on whatever hall it simulated (a
    what-if that changes the cluster stores arrays over the racks it builds, not the design's)."""
    metric = metric_by_name(name)
    values = run_array(run=run, name=metric.array) if metric.array else None
    return None if values is None else rack_list(values, decimals)


def run_state(*, run: Run) -> dict[str, Any]:
    """The state of a run as the consumer sends it first and the run page embeds it.

    Returns
    -------
    dict
        ``{"id", "scenario": {"id", "name"}, "design": id, "kind", "kind_label", "status",
        "status_label", "progress", "stage", "error", "summary" (brief raw values), "figures"
        ([{"key", "label", "text"}] as shown), "design_version", "created", "started",
        "finished" (ISO 8601 or None), "duration_s", "active", "rack_values": {metric: [R
        floats] for each run metric the run has stored}, "partial": the kind's partial result so
        far while the run is active (its sweep points, best layout, trials; ``{}`` otherwise),
        "partial_figures": that partial result worded ([{"key", "label", "text"}])}``.
    """
    rack_values = {}
    own_hall = not racks_aligned(run)
    if not run.is_active or run.progress > 0:
        for name in (n for n, m in floor_metrics().items() if m.kind == "run"):
            if own_hall:
                values = run_metric_values(name, run=run)
            else:
                values = metric_values(name, design=run.scenario.design, run=run)
            if values is not None:
                rack_values[name] = values
    partial = ((run.summary or {}).get("partial") if run.is_active else None) or {}
    spec = registry().get(run.kind)
    figures = spec.partial_figures(partial) if spec is not None and partial else []
    return {
        **run_state_brief(run=run),
        "rack_values": rack_values,
        "partial": partial,
        "partial_figures": figures,
    }


def design_run_states(*, design, limit: int = 20) -> list[dict[str, Any]]:
    """Brief states (no rack values) of the design's latest runs, newest first."""
    runs = Run.objects.filter(scenario__design=design).select_related("scenario")[:limit]
    return [run_state_brief(run=run) for run in runs]


def run_state_brief(*, run: Run) -> dict[str, Any]:
    """``run_state`` without rack values (what the design page lists)."""
    return {
        "id": run.pk,
        "scenario": {"id": run.scenario_id, "name": run.scenario_name},
        "design": run.scenario.design_id,
        "kind": run.kind,
        "kind_label": run_kind_label(run),
        "status": run.status,
        "status_label": run.get_status_display(),
        "progress": round(float(run.progress), 4),
        "stage": run.stage,
        "error": run.error,
        "summary": brief_summary(run.kind, run.summary or {}),
        "figures": summary_figures(run.kind, run.summary or {}),
        "design_version": run.design_version,
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
    power = design_rack_power(design)
    return {
        "design": design.pk,
        "name": design.name,
        "rows": hall.rows,
        "columns": hall.columns,
        "racks": racks,
        "metrics": {name: metric.describe(design=design) for name, metric in floor_metrics().items()},
        "values": {m.name: metric_values(m.name, design=design) for m in DESIGN_METRICS},
        "power": {
            "budget_kw": np.round(power.budget_kw, 2).tolist(),
            "nameplate_kw": np.round(power.nameplate_kw, 2).tolist(),
        },
    }


def racks_aligned(run: Run) -> bool:
    """Whether the run's per-rack results map onto its design's racks (False when its what-if
    built another cluster)."""
    return (run.summary or {}).get("racks_aligned", True) is not False


def run_floor_plan_json(*, run: Run) -> dict[str, Any]:
    """The hall the run simulates, in ``design_floor_plan_json``'s shape: the design's, or the
    hall its what-if builds (known before the run finishes, so a live page draws it too; its racks
    have no ids since they exist only in the run; run metrics only, their values come with the
    run state; ``what_if`` True)."""
    from django.core.exceptions import ValidationError

    from scenarios.kinds.context import RunContext
    from scenarios.sim.format.errors import ScenarioError

    design = run.scenario.design
    try:
        context = RunContext.load(run)
        plan = context.plan() if context.changes_cluster else None
    except (ValidationError, ScenarioError):  # the scenario no longer checks: the design's hall
        plan = None
    if plan is None:
        return design_floor_plan_json(design=design)
    racks = [
        {"id": None, "name": name, "row": int(row), "col": int(col), "kind": int(kind)}
        for name, row, col, kind in zip(
            plan.rack_name, plan.rack_row, plan.rack_col, plan.rack_kind, strict=True
        )
    ]
    return {
        "design": design.pk,
        "name": f"{design.name} (what-if hall)",
        "what_if": True,
        "rows": int(plan.hall_rows),
        "columns": int(plan.hall_cols),
        "racks": racks,
        "metrics": {n: m.describe(design=design) for n, m in floor_metrics().items() if m.kind == "run"},
        "values": {},
        "power": {"budget_kw": np.round(plan.rack_budget_kw, 2).tolist(), "nameplate_kw": []},
    }


# --- provenance ---------------------------------------------------------------------------------

#: Fields of the design itself whose change leaves what a run simulates as it was.
DESCRIPTIVE_DESIGN_FIELDS = frozenset({"name", "description"})


@dataclass(frozen=True)
class DesignChanges:
    """What a design's history says happened after a version: catalog edits (which a run's
    snapshot undoes) and structural changes (racks, nodes, links, feeds, budgets)."""

    version_then: int
    version_now: int
    catalog: list[str]
    structural: list[str]
    descriptive: list[str]

    @property
    def changed(self) -> bool:
        return self.version_now != self.version_then


def design_changes_since(design, version: int) -> DesignChanges:
    """The history entries of ``design`` after ``version``, sorted by what they change."""
    from topology.choices import ChangeAction
    from topology.models import DesignChange

    catalog, structural, descriptive = [], [], []
    entries = DesignChange.objects.filter(design=design, version__gt=version).order_by("version", "pk")
    for entry in entries:
        fields = {line.get("field") for line in entry.changes or []}
        if entry.action == ChangeAction.CATALOG:
            catalog.append(entry.summary)
        elif entry.object_kind == "design" and fields and fields <= DESCRIPTIVE_DESIGN_FIELDS:
            descriptive.append(entry.summary)
        else:
            structural.append(entry.summary)
    return DesignChanges(version, design.version, catalog, structural, descriptive)


@dataclass(frozen=True)
class Provenance:
    """What a run ran with and what changed since (the run page's "ran with" panel)."""

    inputs: RunInputs | None
    design: DesignChanges | None = None
    catalog_digest_now: str = ""
    scenario_changes: list[SettingChange] | None = None

    @property
    def recorded(self) -> bool:
        return self.inputs is not None

    @property
    def catalog_changed(self) -> bool:
        return self.inputs is not None and self.catalog_digest_now != self.inputs.catalog_digest

    @property
    def anything_changed(self) -> bool:
        return bool(
            self.inputs is not None and (self.design.changed or self.catalog_changed or self.scenario_changes)
        )

    @property
    def rerun_refusal(self) -> str:
        """Why the run cannot run again as it ran ("" when it can)."""
        if self.inputs is None:
            return "its inputs were not recorded"
        if self.design.structural:
            return f"its design changed since ({self.design.structural[0]}) and the twin keeps no older racks"
        return ""


def run_provenance(*, run: Run) -> Provenance:
    """The run's stored inputs against today's scenario, design and catalog."""
    from scenarios.provenance import document_of
    from scenarios.scenario_file import scenario_to_dict
    from topology.selectors import catalog_load

    inputs = RunInputs.of(run)
    if inputs is None:
        return Provenance(None)
    design = run.scenario.design
    catalog_now = digest_of(catalog_snapshot(catalog_load(), inputs.scenario))
    try:
        today = document_of(scenario_to_dict(scenario=run.scenario))
    except ValidationError:  # today's scenario no longer builds a document: not comparable
        today = None
    changes = document_changes(inputs.scenario, today) if today is not None else None
    return Provenance(inputs, design_changes_since(design, inputs.design_version), catalog_now, changes)


# --- comparison ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareCell:
    """One run's value in a comparison row, with its change against the baseline run."""

    text: str
    delta_text: str = ""
    verdict: str = ""  # "better", "worse" or "" (same, or no direction)


@dataclass(frozen=True)
class CompareRow:
    """One row of the compare page: a result figure (``result``) or a scenario setting."""

    label: str
    cells: list[CompareCell]
    differs: bool
    numeric: bool = True
    result: bool = False


#: Relative change under which two results count as equal (float noise, not a real change).
SAME_WITHIN = 1e-9


def compare_rows(runs: list[Run], baseline: Run | None = None) -> list[CompareRow]:
    """The figures of the runs' kinds with their change against ``baseline`` (default the first
    run), then the settings (job and what-if) of the runs' scenarios. Figures of kinds that share
    a key (a search's best step time and a step run's) share a row."""
    kinds = registry()
    base_index = runs.index(baseline) if baseline in runs else 0
    figures: dict[str, dict[str, Any]] = {}
    for run in runs:
        spec = kinds.get(run.kind)
        for figure in spec.figures if spec is not None else ():
            figures.setdefault(figure.key, {})[run.kind] = figure
    rows = []
    for by_kind in figures.values():
        first = next(iter(by_kind.values()))
        values = [by_kind[r.kind].value(r.summary or {}) if r.kind in by_kind else None for r in runs]
        if all(v is None for v in values):
            continue
        base = values[base_index]
        cells = [
            _compare_cell(v, base, by_kind.get(r.kind, first), baseline=i == base_index)
            for i, (r, v) in enumerate(zip(runs, values, strict=True))
        ]
        differs = len({c.text for c in cells}) > 1
        rows.append(CompareRow(label=first.label, cells=cells, differs=differs, result=True))
    return rows + _setting_rows(runs)


def _compare_cell(value, base, figure, *, baseline: bool) -> CompareCell:
    if value is None:
        return CompareCell(text="—")
    text = figure.text(value)
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if baseline or not numeric or not isinstance(base, int | float) or isinstance(base, bool) or base == 0:
        return CompareCell(text=text)
    change = (value - base) / abs(base)
    if abs(change) < SAME_WITHIN:
        return CompareCell(text=text, delta_text="±0 %")
    lower = figure.lower_is_better
    verdict = "" if lower is None else ("better" if (change < 0) == lower else "worse")
    return CompareCell(text=text, delta_text=change_text(change), verdict=verdict)


@functools.cache
def setting_labels() -> dict[str, str]:
    """Scenario path -> what the scenario form calls it ("job.model.ffn_hidden" -> "FFN hidden
    size"); a label two sections share is prefixed by its section ("What if: Server type")."""
    from scenarios.forms import FORM_SECTIONS

    fields = [(section, field) for section in FORM_SECTIONS for field in section.fields]
    uses: dict[str, int] = {}
    for _, field in fields:
        uses[field.label] = uses.get(field.label, 0) + 1
    labels = {
        f"{s.path}.{f.key}": f.label if uses[f.label] == 1 else f"{s.label}: {f.label}" for s, f in fields
    }
    cluster = {f"cluster.{f.key}": f"Design: {_lower_first(f.label)}" for f in CLUSTER.fields}
    return (
        {"kind": "Run kind", "design": "Design"}
        | cluster
        | labels
        | {"design_version": "Design version", "catalog_digest": "Catalog rows (sha256)"}
    )


def _lower_first(label: str) -> str:
    """ "Server type" -> "server type"; an acronym stays ("NIC speed")."""
    return label if label[:2].isupper() else label[:1].lower() + label[1:]


def setting_label(path: str) -> str:
    """The human label of a scenario path; unknown paths read as words ("Ffn hidden")."""
    known = setting_labels().get(path)
    return known or path.rsplit(".", 1)[-1].replace("_", " ").capitalize()


def setting_text(value: Any) -> str:
    """A setting as the compare page shows it: numbers with separators (1e12 tokens as 1.0 T),
    lists joined."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and abs(value) >= 1e9:
        return f"{value / 1e12:.1f} T" if abs(value) >= 1e12 else f"{value / 1e9:.1f} B"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() else f"{value:g}"
    if isinstance(value, list | tuple):
        return ", ".join(setting_text(v) for v in value) or "—"
    return str(value)


def run_settings(run: Run) -> dict[str, Setting]:
    """What a run ran with, setting by setting, from its stored inputs (today's scenario and
    catalog for a run from before provenance was kept, marked so)."""
    from scenarios.provenance import document_of
    from scenarios.scenario_file import scenario_to_dict

    inputs = RunInputs.of(run)
    if inputs is not None:
        document = inputs.scenario
        servers = {row["slug"]: row for row in inputs.catalog.get("servers", [])}
    else:
        try:
            document = document_of(scenario_to_dict(scenario=run.scenario))
        except ValidationError:
            document = {"job": run.scenario.job, "what_if": run.scenario.what_if}
        servers = _today_servers()
    server = servers.get((document.get("cluster") or {}).get("server"))
    settings = {
        "kind": Setting(run_kind_label(run)),
        "design": Setting(run.scenario.design.name),
        "design_version": Setting(inputs.design_version if inputs else run.design_version),
        "catalog_digest": Setting(inputs.catalog_digest[:12] + "…" if inputs else "not recorded"),
    }
    return settings | document_settings(document, server=server)


def _today_servers() -> dict[str, dict[str, Any]]:
    from topology.selectors import catalog_load

    return {row["slug"]: row for row in catalog_load().to_dict()["servers"]}


def _setting_cell_text(setting: Setting | None) -> str:
    """A setting in a compare cell; one the scenario leaves to the design says so."""
    if setting is None:
        return "—"
    text = setting_text(setting.value)
    return f"{text} (design)" if setting.source == "design" and setting.value is not None else text


def _setting_rows(runs: list[Run]) -> list[CompareRow]:
    settings = [run_settings(r) for r in runs]
    order = {path: i for i, path in enumerate(setting_labels())}
    rows = []
    for key in sorted(set().union(*settings), key=lambda k: (order.get(k, len(order)), k)):
        values = [s.get(key) for s in settings]
        rows.append(
            CompareRow(
                label=setting_label(key),
                cells=[CompareCell(text=_setting_cell_text(v)) for v in values],
                differs=len({repr(v.value if v is not None else None) for v in values}) > 1,
                numeric=False,
            )
        )
    return rows


def compare_charts(runs: list[Run]) -> list[dict[str, Any]]:
    """Each kind's comparison charts over the succeeded runs of that kind (two or more)."""
    kinds = registry()
    out = []
    for name, spec in kinds.items():
        same = [r for r in runs if r.kind == name and r.status == RunStatus.SUCCEEDED]
        if same and len(runs) >= 2:
            out += spec.compare_charts(same)
    return out


def _iso(value) -> str | None:
    return value.isoformat() if value else None
