"""Pages of runs: start one from the scenario page, the run page (live), its state and charts as
JSON, cancel, delete after a confirmation, and "apply this layout" of a layout search."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from scenarios.charts.search import layout_label
from scenarios.choices import RunStatus
from scenarios.kinds import registry, run_kind
from scenarios.kinds.search import layout_job
from scenarios.selectors import run_charts as run_charts_of
from scenarios.selectors import run_floor_plan_json, run_state
from scenarios.services import run_cancel, run_delete, run_start, scenario_create
from scenarios.sim.format import schema
from scenarios.views.doors import run_or_404, scenario_or_404
from scenarios.views.scenarios import kind_forms, scenario_page
from teams.permissions import CHANGE, RUN, actions_on, require


@login_required
@require_POST
def run_start_view(request, pk: int):
    """Start a run of the posted kind; bad options are form errors on the scenario page."""
    scenario = scenario_or_404(request.user, pk, RUN)
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
    return scenario_page(request, scenario, run_forms=kind_forms(kind.name, options_form), status=400)


def _add_option_errors(form, error: ValidationError) -> None:
    """Service errors keyed ``options.<field>`` next to that field, others on the form."""
    items = error.error_dict.items() if hasattr(error, "error_dict") else [(None, error.error_list)]
    for key, errors in items:
        field = key.removeprefix("options.") if isinstance(key, str) else None
        for message in (m for e in errors for m in e.messages):
            form.add_error(field if field in form.fields else None, message)


@login_required
def run_detail(request, pk: int):
    run = run_or_404(request.user, pk)
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
    return JsonResponse(run_state(run=run_or_404(request.user, pk)))


@login_required
def run_charts(request, pk: int):
    run = run_or_404(request.user, pk)
    return JsonResponse({"run": run.pk, "status": run.status, "charts": run_charts_of(run=run)})


@login_required
@require_POST
def run_cancel_view(request, pk: int):
    run = run_cancel(run=run_or_404(request.user, pk, RUN), user=request.user)
    if request.headers.get("X-Requested-With") == "fetch":
        return JsonResponse({"status": run.status})
    return redirect(run)


@login_required
def run_delete_view(request, pk: int):
    """Confirm, then delete a run and its results (cancelled first if still in progress)."""
    run = run_or_404(request.user, pk, CHANGE)
    if request.method == "POST":
        scenario = run.scenario
        run_delete(run=run, user=request.user)
        messages.success(request, f"Run #{pk} was deleted.")
        return redirect(scenario)
    context = {
        "what": "run",
        "object": run,
        "design": run.scenario.design,
        "runs": [],
        "active": [run] if run.is_active else [],
        "cancel_url": run.get_absolute_url(),
    }
    return render(request, "scenarios/confirm_delete.html", context)


@login_required
@require_POST
def search_apply_view(request, pk: int):
    """Save the layout ``layout`` (an index into the search's best layouts, or 0: the layout
    that would fit of an infeasible run) as a what-if scenario of the searched one, and open it
    (ready to run its step time)."""
    run = run_or_404(request.user, pk)
    require(run.scenario.design, request.user, CHANGE)
    summary = run.summary or {}
    best = (summary.get("best") or []) if run.kind == "search" else []
    if run.status == RunStatus.INFEASIBLE and summary.get("would_fit"):
        best = [summary["would_fit"]]
    try:
        row = best[int(request.POST.get("layout", ""))]
    except (ValueError, IndexError):
        messages.error(request, "This run has no such layout to apply.")
        return redirect(run)
    source = run.scenario
    try:
        scenario = scenario_create(
            design=source.design,
            name=f"{source.name} · {layout_label(row)}"[: schema.MAX_NAME_LENGTH],
            description=f"Layout found by the layout search of run #{run.pk} of {source.name!r}.",
            job=layout_job(source.job, row),
            what_if=source.what_if,
            failures=source.failures,
            power=source.power,
            user=request.user,
        )
    except ValidationError as exc:
        messages.error(request, f"That layout could not be saved: {'; '.join(exc.messages)}")
        return redirect(run)
    messages.success(request, f"Saved the layout as {scenario.name!r}: run it to see its step time.")
    return redirect(scenario)
