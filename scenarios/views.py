"""Pages of scenarios and runs: the scenario editor, run page (live), comparison, and the JSON the
design page's floor plan and panels fetch. Thin doors: forms in, services/selectors out, every
object through the permission module (another team's object is a 404)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import condition, require_POST

from scenarios.choices import RunStatus
from scenarios.forms import ScenarioForm, ScenarioImportForm, default_job
from scenarios.kinds import registry, run_kind
from scenarios.models import Run, Scenario
from scenarios.selectors import (
    compare_charts,
    compare_rows,
    design_floor_plan_json,
    run_floor_plan_json,
    run_state,
)
from scenarios.selectors import (
    run_charts as run_charts_of,
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
from scenarios.storage import run_array
from teams.current import of_current_team
from teams.permissions import CHANGE, RUN, VIEW, actions_on, require, restrict
from topology.models import Design, GpuType, ServerType
from utilities.jsonsafe import json_safe

MAX_COMPARED = 6
#: Largest primary key a URL may name (a bigger number is not an id: 404, not a database error).
MAX_PK = 2**63 - 1


def _catalog_choices() -> dict[str, list[str]]:
    return {
        "servers": list(ServerType.objects.order_by("slug").values_list("slug", flat=True)),
        "gpus": list(GpuType.objects.order_by("slug").values_list("slug", flat=True)),
    }


# Another team's object is a 404; one the user sees but whose action their role lacks is a 403.
def _design(user, pk, action: str = VIEW) -> Design:
    return require(get_object_or_404(restrict(Design.objects, user, VIEW), pk=_pk(pk)), user, action)


def _scenario(user, pk, action: str = VIEW) -> Scenario:
    scenario = get_object_or_404(restrict(Scenario.objects, user, VIEW).select_related("design"), pk=pk)
    return require(scenario, user, action)


def _run(user, pk, action: str = VIEW) -> Run:
    run = get_object_or_404(
        restrict(Run.objects, user, VIEW).select_related("scenario", "scenario__design"), pk=pk
    )
    return require(run, user, action)


def _pk(value) -> int:
    """A primary key from a query string (404 for anything that cannot be one)."""
    text = str(value or "").strip()
    if not text.isdigit() or int(text) > MAX_PK:
        raise Http404("not found")
    return int(text)


# --- scenarios ---------------------------------------------------------------------------------


#: Rows of a paged list (scenarios, a design's runs): lists that grow with use stay one screen.
SCENARIOS_PER_PAGE = 50
PANEL_SCENARIOS_PER_PAGE = 10
PANEL_RUNS_PER_PAGE = 15


def _page(request, queryset, per_page: int, param: str = "page"):
    """One page of ``queryset`` from ``?<param>=N`` (out-of-range numbers give the last page)."""
    return Paginator(queryset, per_page).get_page(request.GET.get(param))


@login_required
def scenario_list(request):
    """The current team's scenarios, newest first, paged (``?design=<id>`` keeps one design's)."""
    scenarios = of_current_team(request, restrict(Scenario.objects, request.user), "design__team")
    design = None
    if request.GET.get("design"):
        design = _design(request.user, _pk(request.GET["design"]))
        scenarios = scenarios.filter(design=design)
    scenarios = scenarios.select_related("design", "created_by").annotate(run_count=Count("runs"))
    page = _page(request, scenarios.order_by("-updated", "-pk"), SCENARIOS_PER_PAGE)
    query = f"design={design.pk}&" if design else ""
    return render(request, "scenarios/scenario_list.html", {"page": page, "design": design, "query": query})


@login_required
def scenario_new(request):
    """A new scenario on ``?design=<pk>``, prefilled with a job that fits the design."""
    design_pk = request.GET.get("design") or request.POST.get("design")
    if not design_pk:
        # Reached from the navigation or a bookmark: let the user pick the design first.
        designs = of_current_team(request, restrict(Design.objects, request.user, CHANGE))
        designs = designs.select_related("team")
        return render(request, "scenarios/scenario_choose_design.html", {"designs": designs})
    design = _design(request.user, design_pk, CHANGE)
    form = ScenarioForm(
        request.POST or None, catalog_choices=_catalog_choices(), initial=_new_initial(design)
    )
    if request.method == "POST" and form.is_valid():
        try:
            scenario = scenario_create(
                design=design,
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
                **form.sections(),
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


def _initial(scenario: Scenario) -> dict[str, Any]:
    return ScenarioForm.initial_from(
        name=scenario.name,
        description=scenario.description,
        job=scenario.job,
        what_if=scenario.what_if,
        failures=scenario.failures,
        power=scenario.power,
    )


def _run_forms(bound_kind: str | None = None, bound_form=None) -> list[tuple[Any, Any]]:
    """(kind, options form) of every registered kind; the one just posted stays bound."""
    return [
        (kind, bound_form if kind.name == bound_kind else kind.options_form(prefix=kind.name))
        for kind in registry().values()
    ]


def _scenario_page(request, scenario, *, form, run_forms, status: int = 200):
    context = {
        "scenario": scenario,
        "design": scenario.design,
        "form": form,
        "run_forms": run_forms,
        "runs": scenario.runs.all()[:50],
    }
    return render(request, "scenarios/scenario_detail.html", context, status=status)


@login_required
def scenario_detail(request, pk: int):
    """The scenario: its runs, run buttons, and the editor (POST saves it)."""
    scenario = _scenario(request.user, pk, CHANGE if request.method == "POST" else VIEW)
    initial = _initial(scenario)
    form = ScenarioForm(request.POST or None, catalog_choices=_catalog_choices(), initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            scenario_update(
                scenario=scenario,
                user=request.user,
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
                **form.sections(),
            )
        except ValidationError as error:
            form.add_service_errors(error)
            scenario.refresh_from_db()
        else:
            messages.success(request, "Scenario saved.")
            return redirect(scenario)
    return _scenario_page(
        request, scenario, form=form, run_forms=_run_forms(), status=400 if form.errors else 200
    )


@login_required
@require_POST
def scenario_duplicate_view(request, pk: int):
    scenario = _scenario(request.user, pk, CHANGE)
    copy = scenario_duplicate(scenario=scenario, user=request.user)
    messages.success(request, f"Duplicated as “{copy.name}”: change the what-if and run it.")
    return redirect(f"{copy.get_absolute_url()}#edit")


@login_required
def scenario_yaml(request, pk: int):
    scenario = _scenario(request.user, pk)
    response = HttpResponse(
        scenario_to_yaml(scenario=scenario), content_type="application/yaml; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{slugify(scenario.name) or "scenario"}.yaml"'
    return response


@login_required
def scenario_import(request):
    designs = of_current_team(request, restrict(Design.objects, request.user, CHANGE))
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
    """Start a run of the posted kind; bad options are form errors on the scenario page."""
    scenario = _scenario(request.user, pk, RUN)
    try:
        kind = run_kind(request.POST.get("kind", ""))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect(scenario)
    options_form = kind.options_form(request.POST, prefix=kind.name)
    if options_form.is_valid():
        try:
            run = run_start(
                scenario=scenario,
                kind=kind.name,
                user=request.user,
                options=kind.form_options(options_form.cleaned_data),
            )
        except ValidationError as error:
            _add_option_errors(options_form, error)
        else:
            return redirect(run)
    form = ScenarioForm(
        catalog_choices=_catalog_choices(),
        initial=_initial(scenario),
    )
    return _scenario_page(
        request, scenario, form=form, run_forms=_run_forms(kind.name, options_form), status=400
    )


def _add_option_errors(form, error: ValidationError) -> None:
    """Service errors keyed ``options.<field>`` next to that field, others on the form."""
    items = error.error_dict.items() if hasattr(error, "error_dict") else [(None, error.error_list)]
    for key, errors in items:
        field = key.removeprefix("options.") if isinstance(key, str) else None
        for message in (m for e in errors for m in e.messages):
            form.add_error(field if field in form.fields else None, message)


@login_required
def run_detail(request, pk: int):
    run = _run(request.user, pk)
    design = run.scenario.design
    kind = registry().get(run.kind)
    context = {
        "run": run,
        "kind": kind,
        "scenario": run.scenario,
        "design": design,
        "state": run_state(run=run),
        "floor_plan": run_floor_plan_json(run=run),
        "status_labels": dict(RunStatus.choices),
        "results": kind.results_context(run) if kind and run.status == RunStatus.SUCCEEDED else {},
        "can_apply": "change" in actions_on(design, request.user),
        "metric": request.GET.get("metric") or (kind.floor_metric(run) if kind else "rack_power"),
    }
    return render(request, "scenarios/run_detail.html", context)


@login_required
def run_state_json(request, pk: int):
    """The run's state as the consumer sends it first (for scripts and a no-WebSocket fallback)."""
    return JsonResponse(run_state(run=_run(request.user, pk)))


@login_required
def run_charts(request, pk: int):
    run = _run(request.user, pk)
    return JsonResponse({"run": run.pk, "status": run.status, "charts": run_charts_of(run=run)})


@login_required
@require_POST
def run_cancel_view(request, pk: int):
    run = run_cancel(run=_run(request.user, pk, RUN), user=request.user)
    if request.headers.get("X-Requested-With") == "fetch":
        return JsonResponse({"status": run.status})
    return redirect(run)


# --- comparison ----------------------------------------------------------------------------------


def _compare_ids(request) -> list[int]:
    ids = []
    for part in request.GET.getlist("runs"):
        ids += [_pk(p) for p in part.split(",") if p.strip()]
    return list(dict.fromkeys(ids))[:MAX_COMPARED]


@login_required
def compare(request):
    """Side-by-side comparison of ``?runs=1,2,3`` against ``?baseline=<id>`` (default the first).

    With fewer than two runs the page offers finished runs to pick, the given ones ticked (the run
    page's "compare…" link passes its run)."""
    ids = _compare_ids(request)
    visible = restrict(Run.objects, request.user).select_related("scenario", "scenario__design")
    found = {r.pk: r for r in visible.filter(pk__in=ids)}
    runs = [found[i] for i in ids if i in found]
    if len(ids) != len(runs):
        raise Http404("run not found")
    baseline_id = _pk(request.GET["baseline"]) if request.GET.get("baseline") else None
    baseline = found.get(baseline_id, runs[0] if runs else None)
    recent = []
    if len(runs) < 2:
        finished = of_current_team(request, visible, "scenario__design__team").filter(status="succeeded")
        recent = runs + [r for r in finished[:30] if r.pk not in found]
    ids_text = ",".join(str(r.pk) for r in runs)
    context = {
        "runs": runs,
        "baseline": baseline,
        "heads": [(r, f"?runs={ids_text}&baseline={r.pk}") for r in runs],
        "rows": compare_rows(runs, baseline) if len(runs) > 1 else [],
        "charts": compare_charts(runs) if len(runs) > 1 else [],
        "recent": recent,
        "ticked": set(found),
    }
    return render(request, "scenarios/compare.html", context)


# --- pieces of the design page -------------------------------------------------------------------


def _design_etag(request, pk: int) -> str | None:
    version = restrict(Design.objects, request.user).filter(pk=pk).values_list("version", flat=True).first()
    return None if version is None else f"fp-{pk}-v{version}"


@login_required
@condition(etag_func=_design_etag)
def design_floor_plan(request, pk: int):
    """The design's floor plan JSON (``design_floor_plan_json``); cached by the browser per version."""
    response = JsonResponse(design_floor_plan_json(design=_design(request.user, pk)))
    response["Cache-Control"] = "private, no-cache"
    return response


@login_required
def design_panel(request, pk: int):
    """The design page's scenarios and latest runs (HTML fragment, refreshed on live status)."""
    design = _design(request.user, pk)
    scenarios = Scenario.objects.filter(design=design).order_by("-updated", "-pk")
    runs = Run.objects.filter(scenario__design=design).select_related("scenario").order_by("-created", "-pk")
    context = {
        "design": design,
        "scenarios": _page(request, scenarios, PANEL_SCENARIOS_PER_PAGE, "scenarios_page"),
        "runs": _page(request, runs, PANEL_RUNS_PER_PAGE, "runs_page"),
        "new_url": f"{reverse('scenarios:scenario-new')}?design={design.pk}",
        "can": actions_on(design, request.user),
    }
    return render(request, "scenarios/_design_panel.html", context)


# --- a run kind's data for its page module ---------------------------------------------------

#: Largest array the binary endpoint serves (float32 values) and the frames a 2-D series is
#: averaged down to by default (a replay slider needs no more).
MAX_ARRAY_VALUES = 8_000_000
DEFAULT_FRAMES = 120


@login_required
def run_kind_data(request, pk: int):
    """What the run's kind module on the page draws beyond the common parts (``page_context``)."""
    run = _run(request.user, pk)
    kind = registry().get(run.kind)
    if kind is None or run.status != "succeeded":
        return JsonResponse({})
    return JsonResponse(json_safe(kind.page_context(run)))


@login_required
def run_array_bytes(request, pk: int, name: str):
    """One stored result array as little-endian float32 bytes (shape in ``X-Shape``): long
    series travel over HTTP, not through the socket. A 2-D array is averaged along its second
    axis to ``?frames=`` (default 120) columns."""
    run = _run(request.user, pk)
    values = run_array(run=run, name=name)
    if values is None or values.dtype.kind not in "fiub":
        raise Http404("array not found")
    values = values.astype(np.float32)
    if values.ndim == 2:
        frames = _pk(request.GET.get("frames") or DEFAULT_FRAMES)
        values = _frames(values, max(1, min(frames, values.shape[1])))
    if values.size > MAX_ARRAY_VALUES:
        return JsonResponse(
            {"errors": {"name": [f"name: {name} has {values.size:,} values, over the limit"]}}, status=413
        )
    response = HttpResponse(
        np.ascontiguousarray(values, dtype="<f4").tobytes(), content_type="application/octet-stream"
    )
    response["X-Shape"] = json.dumps(list(values.shape))
    return response


def _frames(values: np.ndarray, frames: int) -> np.ndarray:
    """Average the columns of a (rows, columns) array into ``frames`` contiguous groups."""
    edges = np.linspace(0, values.shape[1], frames + 1).round().astype(int)
    sums = np.add.reduceat(values, edges[:-1], axis=1)
    return sums / np.maximum(np.diff(edges), 1)
