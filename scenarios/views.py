"""Pages of scenarios and runs: the scenario editor, run page (live), comparison, and the JSON the
design page's floor plan and panels fetch. Thin doors: forms in, services/selectors out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import condition, require_POST

from scenarios import charts
from scenarios.choices import RunKind
from scenarios.forms import RunStartForm, ScenarioForm, ScenarioImportForm, default_job
from scenarios.models import Run, Scenario
from scenarios.selectors import (
    design_floor_plan_json,
    run_state,
    runs_visible_to,
    scenarios_visible_to,
)
from scenarios.services import (
    run_cancel,
    run_start,
    scenario_create,
    scenario_duplicate,
    scenario_from_yaml,
    scenario_to_yaml,
    scenario_update,
)
from topology.models import Design, GpuType, ServerType

MAX_COMPARED = 6


def _catalog_choices() -> dict[str, list[str]]:
    return {
        "servers": list(ServerType.objects.order_by("slug").values_list("slug", flat=True)),
        "gpus": list(GpuType.objects.order_by("slug").values_list("slug", flat=True)),
    }


def _visible_design(user, pk) -> Design:
    return get_object_or_404(Design.objects.visible_to(user), pk=pk)


# --- scenarios ---------------------------------------------------------------------------------


@login_required
def scenario_list(request):
    scenarios = scenarios_visible_to(request.user).prefetch_related("runs")
    return render(request, "scenarios/scenario_list.html", {"scenarios": scenarios})


@login_required
def scenario_new(request):
    """A new scenario on ``?design=<pk>``, prefilled with a job that fits the design."""
    design_pk = request.GET.get("design") or request.POST.get("design")
    if not design_pk:
        # Reached from the navigation or a bookmark: let the user pick the design first.
        designs = Design.objects.visible_to(request.user).select_related("team")
        return render(request, "scenarios/scenario_choose_design.html", {"designs": designs})
    design = _visible_design(request.user, design_pk)
    form = ScenarioForm(
        request.POST or None, catalog_choices=_catalog_choices(), initial=_new_initial(design)
    )
    if request.method == "POST" and form.is_valid():
        try:
            scenario = scenario_create(
                design=design,
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
                job=form.job(),
                what_if=form.what_if(),
                user=request.user,
            )
        except ValidationError as error:
            form.add_service_errors(error)
        else:
            messages.success(request, f"Scenario “{scenario.name}” saved.")
            return redirect(scenario)
    return render(
        request,
        "scenarios/scenario_form.html",
        {"form": form, "design": design, "scenario": None},
        status=400 if form.errors else 200,
    )


def _new_initial(design: Design) -> dict[str, Any]:
    gpus = int((design.summary or {}).get("gpus") or 8)
    taken = set(Scenario.objects.filter(design=design).values_list("name", flat=True))
    name, n = "Baseline", 2
    while name in taken:
        name, n = f"Scenario {n}", n + 1
    return ScenarioForm.initial_from(name=name, job=default_job(gpus=gpus), what_if={})


@login_required
def scenario_detail(request, pk: int):
    """The scenario: its runs, run buttons, and the editor (POST saves it)."""
    scenario = get_object_or_404(scenarios_visible_to(request.user), pk=pk)
    initial = ScenarioForm.initial_from(
        name=scenario.name, job=scenario.job, what_if=scenario.what_if, description=scenario.description
    )
    form = ScenarioForm(request.POST or None, catalog_choices=_catalog_choices(), initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            scenario_update(
                scenario=scenario,
                user=request.user,
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
                job=form.job(),
                what_if=form.what_if(),
            )
        except ValidationError as error:
            form.add_service_errors(error)
            scenario.refresh_from_db()
        else:
            messages.success(request, "Scenario saved.")
            return redirect(scenario)
    runs = scenario.runs.all()[:50]
    context = {
        "scenario": scenario,
        "design": scenario.design,
        "form": form,
        "run_form": RunStartForm(),
        "runs": runs,
        "kinds": RunKind.choices,
    }
    return render(request, "scenarios/scenario_detail.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def scenario_duplicate_view(request, pk: int):
    scenario = get_object_or_404(scenarios_visible_to(request.user), pk=pk)
    copy = scenario_duplicate(scenario=scenario, user=request.user)
    messages.success(request, f"Duplicated as “{copy.name}”: change the what-if and run it.")
    return redirect(f"{copy.get_absolute_url()}#edit")


@login_required
def scenario_yaml(request, pk: int):
    scenario = get_object_or_404(scenarios_visible_to(request.user), pk=pk)
    response = HttpResponse(
        scenario_to_yaml(scenario=scenario), content_type="application/yaml; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{slugify(scenario.name) or "scenario"}.yaml"'
    return response


@login_required
def scenario_import(request):
    designs = Design.objects.visible_to(request.user)
    form = ScenarioImportForm(
        request.POST or None,
        request.FILES or None,
        designs=designs,
        initial={"design": request.GET.get("design")},
    )
    if request.method == "POST" and form.is_valid():
        try:
            scenario = scenario_from_yaml(
                text=form.cleaned_data["text"], design=form.cleaned_data["design"], user=request.user
            )
        except ValidationError as error:
            for message in error.messages:
                form.add_error("text", message)
        else:
            messages.success(request, f"Imported “{scenario.name}”.")
            return redirect(scenario)
    return render(
        request, "scenarios/scenario_import.html", {"form": form}, status=400 if form.errors else 200
    )


# --- runs ----------------------------------------------------------------------------------------


@login_required
@require_POST
def run_start_view(request, pk: int):
    scenario = get_object_or_404(scenarios_visible_to(request.user), pk=pk)
    form = RunStartForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(errors)}")
        return redirect(scenario)
    try:
        run = run_start(
            scenario=scenario, kind=form.cleaned_data["kind"], user=request.user, options=form.options()
        )
    except ValidationError as error:
        for message in error.messages:
            messages.error(request, message)
        return redirect(scenario)
    return redirect(run)


@login_required
def run_detail(request, pk: int):
    run = get_object_or_404(runs_visible_to(request.user), pk=pk)
    design = run.scenario.design
    context = {
        "run": run,
        "scenario": run.scenario,
        "design": design,
        "state": run_state(run=run),
        "floor_plan": design_floor_plan_json(design=design),
        "metric": request.GET.get("metric") or charts.default_run_metric(run),
    }
    return render(request, "scenarios/run_detail.html", context)


@login_required
def run_state_json(request, pk: int):
    """The run's state as the consumer sends it first (for scripts and a no-WebSocket fallback)."""
    run = get_object_or_404(runs_visible_to(request.user), pk=pk)
    return JsonResponse(run_state(run=run))


@login_required
def run_charts(request, pk: int):
    run = get_object_or_404(runs_visible_to(request.user), pk=pk)
    return JsonResponse({"run": run.pk, "status": run.status, "charts": charts.run_charts(run)})


@login_required
@require_POST
def run_cancel_view(request, pk: int):
    run = get_object_or_404(runs_visible_to(request.user), pk=pk)
    try:
        run = run_cancel(run=run, user=request.user)
    except PermissionDenied:
        raise Http404 from None
    if request.headers.get("X-Requested-With") == "fetch":
        return JsonResponse({"status": run.status})
    return redirect(run)


# --- comparison ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareCell:
    """One run's value in a comparison row, with its change against the first run."""

    text: str
    delta_text: str = ""
    verdict: str = ""  # "better", "worse" or "" (same, or no direction)


@dataclass(frozen=True)
class CompareRow:
    label: str
    cells: list[CompareCell]
    differs: bool
    numeric: bool = True


#: Summary figures compared: key, label, format, whether lower is better (None: no direction).
COMPARED_FIGURES = (
    ("step_time_s", "Step time (s)", "{:.3f}", True),
    ("mfu", "MFU", "{:.1%}", False),
    ("model_tflops_per_gpu", "Model TFLOP/s per GPU", "{:.0f}", False),
    ("tokens_per_s", "Tokens/s", "{:,.0f}", False),
    ("time_to_train_days", "Time to train (days)", "{:.1f}", True),
    ("memory_gib_per_gpu", "Memory per GPU (GiB)", "{:.1f}", True),
    ("max_link_utilization", "Hottest link utilization", "{:.0%}", True),
    ("gpus", "GPUs", "{:,}", None),
)
#: Relative change under which two values count as equal.
SAME_WITHIN = 0.005


def compare_rows(runs: list[Run]) -> list[CompareRow]:
    """Figures of each run with their change against the first (the baseline), then the
    settings (job and what-if) that differ between the runs' scenarios."""
    rows = []
    for key, label, fmt, lower_better in COMPARED_FIGURES:
        values = [(r.summary or {}).get(key) for r in runs]
        if all(v is None for v in values):
            continue
        base = values[0]
        cells = [_compare_cell(v, base, fmt, lower_better, first=i == 0) for i, v in enumerate(values)]
        differs = any(c.verdict or (c.delta_text and c.delta_text != "±0 %") for c in cells[1:])
        rows.append(CompareRow(label=label, cells=cells, differs=differs))
    rows += _setting_rows(runs)
    return rows


def _compare_cell(value, base, fmt: str, lower_better: bool | None, *, first: bool) -> CompareCell:
    if value is None:
        return CompareCell(text="—")
    text = fmt.format(value)
    if first or base in (None, 0) or not isinstance(value, int | float) or isinstance(value, bool):
        return CompareCell(text=text)
    change = (value - base) / abs(base)
    if abs(change) < SAME_WITHIN:
        return CompareCell(text=text, delta_text="±0 %")
    verdict = "" if lower_better is None else ("better" if (change < 0) == lower_better else "worse")
    return CompareCell(text=text, delta_text=f"{change:+.1%}", verdict=verdict)


def _flat(prefix: str, data: Any) -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flat(f"{prefix}.{key}" if prefix else str(key), value))
        return out
    return {prefix: data}


def _setting_rows(runs: list[Run]) -> list[CompareRow]:
    flats = [
        {
            **_flat("job", r.scenario.job),
            **_flat("what_if", r.scenario.what_if),
            "kind": r.get_kind_display(),
            "design": r.scenario.design.name,
        }
        for r in runs
    ]
    keys = sorted(set().union(*flats))
    rows = []
    for key in keys:
        values = [f.get(key) for f in flats]
        differs = len({repr(v) for v in values}) > 1
        rows.append(
            CompareRow(
                label=key,
                cells=[CompareCell(text="—" if v is None else str(v)) for v in values],
                differs=differs,
                numeric=False,
            )
        )
    return rows


@login_required
def compare(request):
    """Side-by-side comparison of ``?runs=1,2,3`` (the first is the baseline)."""
    ids = []
    for part in request.GET.getlist("runs"):
        ids += [int(p) for p in part.split(",") if p.strip().isdigit()]
    ids = list(dict.fromkeys(ids))[:MAX_COMPARED]
    found = {r.pk: r for r in runs_visible_to(request.user).filter(pk__in=ids)}
    runs = [found[i] for i in ids if i in found]
    if len(ids) != len(runs):
        raise Http404("run not found")
    context = {
        "runs": runs,
        "rows": compare_rows(runs) if runs else [],
        "charts": charts.compare_charts(runs) if len(runs) > 1 else [],
        "recent": runs_visible_to(request.user).filter(status="succeeded")[:30] if len(runs) < 2 else [],
    }
    return render(request, "scenarios/compare.html", context)


# --- pieces of the design page -------------------------------------------------------------------


def _design_etag(request, pk: int) -> str | None:
    design = Design.objects.visible_to(request.user).filter(pk=pk).values_list("version", "updated").first()
    if design is None:
        return None
    return f"fp-{pk}-{design[0]}-{design[1].timestamp()}"


@login_required
@condition(etag_func=_design_etag)
def design_floor_plan(request, pk: int):
    """The design's floor plan JSON (``design_floor_plan_json``); cached by the browser per version."""
    design = _visible_design(request.user, pk)
    response = JsonResponse(design_floor_plan_json(design=design))
    response["Cache-Control"] = "private, no-cache"
    return response


@login_required
def design_panel(request, pk: int):
    """The design page's scenarios and latest runs (HTML fragment, refreshed on live status)."""
    design = _visible_design(request.user, pk)
    context = {
        "design": design,
        "scenarios": Scenario.objects.filter(design=design).order_by("-updated")[:30],
        "runs": Run.objects.filter(scenario__design=design).select_related("scenario")[:15],
        "new_url": f"{reverse('scenarios:scenario-new')}?design={design.pk}",
    }
    return render(request, "scenarios/_design_panel.html", context)
