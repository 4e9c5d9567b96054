"""Pages of runs: start one from the scenario page, the run page (live), its state and charts as
JSON, cancel, delete after a confirmation, and "apply this layout" of a layout search."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from scenarios.charts.search import layout_label
from scenarios.choices import RunStatus
from scenarios.kinds import registry, run_kind
from scenarios.kinds.search import layout_job
from scenarios.provenance import NOT_RECORDED, RunInputs
from scenarios.scenario_file import sections_of
from scenarios.selectors import run_charts as run_charts_of
from scenarios.selectors import run_floor_plan_json, run_provenance, run_state
from scenarios.services import run_cancel, run_delete, run_rerun, run_start, scenario_create
from scenarios.services.scenarios import document_to_yaml
from scenarios.sim.format import schema
from scenarios.views.doors import run_or_404, scenario_or_404
from scenarios.views.scenarios import editor_form, kind_forms, scenario_page, scenario_save
from teams.permissions import CHANGE, RUN, actions_on, require


@login_required
@require_POST
def run_start_view(request, pk: int):
    """Start a run of the posted kind of the scenario the page showed (its posted ``revision``;
    409 if it changed since). With ``save_first`` the editor's fields were posted too: they are
    saved and the saved scenario runs, both or neither. Bad options or fields are form errors
    on the scenario page."""
    scenario = scenario_or_404(request.user, pk, RUN)
    try:
        kind = run_kind(request.POST.get("kind", ""))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect(scenario)
    options_form = kind.options_form(request.POST, prefix=kind.name)
    edit_form = None
    if request.POST.get("save_first"):
        edit_form = editor_form(scenario, request.POST)
    status = 400
    if options_form.is_valid() and (edit_form is None or edit_form.is_valid()):
        try:
            run = _save_and_start(request, scenario, kind, options_form, edit_form)
        except ValidationError as error:
            scenario.refresh_from_db()
            status = _start_errors(error, options_form, edit_form)
        else:
            return redirect(run)
    run_forms = kind_forms(kind.name, options_form)
    return scenario_page(request, scenario, form=edit_form, run_forms=run_forms, status=status)


def _save_and_start(request, scenario, kind, options_form, edit_form):
    """Save the posted editor (if any) and start the run, in one transaction."""
    seen = request.POST.get("revision") or None
    with transaction.atomic():
        if edit_form is not None:
            scenario_save(request, scenario, edit_form)
            seen = None  # checked before the save; the run is of what was just saved
        return run_start(
            scenario=scenario,
            kind=kind.name,
            user=request.user,
            options=kind.form_options(options_form.cleaned_data),
            seen_revision=seen,
        )


def _start_errors(error: ValidationError, options_form, edit_form) -> int:
    """Put a refused start's errors where they belong; the page's status (409: stale scenario)."""
    if getattr(error, "code", None) == "conflict":
        options_form.add_error(None, error.messages[0])
        return 409
    if edit_form is not None and hasattr(error, "error_dict") and not _option_keys(error):
        edit_form.add_service_errors(error)
        return 400
    _add_option_errors(options_form, error)
    return 400


def _option_keys(error: ValidationError) -> list[str]:
    return [k for k in error.error_dict if k == "kind" or str(k).startswith("options")]


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
        "can_run": RUN in actions_on(design, request.user),
        "provenance": run_provenance(run=run),
        "metric": request.GET.get("metric") or (kind.floor_metric(run) if kind else "rack_power"),
    }
    return render(request, "scenarios/run_detail.html", context)


@login_required
@require_POST
def run_rerun_view(request, pk: int):
    """Start a run again as it ran (its stored inputs); a refusal is a message on its page."""
    run = run_or_404(request.user, pk, RUN)
    try:
        again = run_rerun(run=run, user=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect(run)
    return redirect(again)


@login_required
@require_POST
def run_again_view(request, pk: int):
    """Start the run's kind with its options again on today's scenario, design and catalog (the
    ordinary run); a refusal (the scenario no longer checks) is a message on its page."""
    run = run_or_404(request.user, pk, RUN)
    try:
        again = run_start(scenario=run.scenario, kind=run.kind, user=request.user, options=run.options)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect(run)
    return redirect(again)


@login_required
def run_scenario_yaml(request, pk: int):
    """The run's scenario as it ran, as a scenario file (404 for a run that kept no inputs)."""
    run = run_or_404(request.user, pk)
    inputs = RunInputs.of(run)
    if inputs is None:
        raise Http404(NOT_RECORDED)
    header = (
        f"Cluster Twin run #{run.pk}: the scenario as it ran on design {run.scenario.design.name!r} "
        f"version {inputs.design_version}, catalog rows sha256 {inputs.catalog_digest}"
    )
    response = HttpResponse(document_to_yaml(inputs.scenario, header=header), content_type="application/yaml")
    name = slugify(inputs.name) or "scenario"
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-{name}.yaml"'
    return response


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
    inputs = RunInputs.of(run)  # the layout was found for the job as it ran, not as it is today
    sections = inputs.scenario if inputs is not None else sections_of(source)
    try:
        scenario = scenario_create(
            design=source.design,
            name=f"{run.scenario_name} · {layout_label(row)}"[: schema.MAX_NAME_LENGTH],
            description=f"Layout found by the layout search of run #{run.pk} of {run.scenario_name!r}.",
            job=layout_job(sections["job"], row),
            what_if=sections.get("what_if") or {},
            failures=sections.get("failures") or {},
            power=sections.get("power") or {},
            user=request.user,
        )
    except ValidationError as exc:
        messages.error(request, f"That layout could not be saved: {'; '.join(exc.messages)}")
        return redirect(run)
    messages.success(request, f"Saved the layout as {scenario.name!r}: run it to see its step time.")
    return redirect(scenario)
