"""Pages of scenarios: the list, the editor (new, detail with its run buttons), duplicate, the
scenario file out and in, and delete after a confirmation."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from scenarios.forms import FIELD_SPECS, PATH_FIELDS, ScenarioForm, ScenarioImportForm, default_job
from scenarios.kinds import registry
from scenarios.models import Scenario
from scenarios.scenario_file import scenario_revision
from scenarios.services import (
    scenario_create,
    scenario_delete,
    scenario_duplicate,
    scenario_from_yaml,
    scenario_require_revision,
    scenario_to_yaml,
    scenario_update,
)
from scenarios.services.layouts import PROPOSED_DEGREES, layout_propose
from scenarios.views.doors import design_or_404, page_of, pk_or_404, scenario_or_404
from teams.current import of_current_team
from teams.permissions import CHANGE, RUN, VIEW, actions_on, restrict, team_roles
from topology.models import Design, GpuType, ServerType

#: Rows of a paged list of scenarios: lists that grow with use stay one screen.
SCENARIOS_PER_PAGE = 50


def catalog_choices() -> dict[str, list[str]]:
    """The server and GPU types the scenario form offers."""
    return {
        "servers": list(ServerType.objects.order_by("slug").values_list("slug", flat=True)),
        "gpus": list(GpuType.objects.order_by("slug").values_list("slug", flat=True)),
    }


@login_required
def scenario_list(request):
    """The current team's scenarios, newest first, paged (``?design=<id>`` keeps one design's)."""
    scenarios = of_current_team(request, restrict(Scenario.objects, request.user), "design__team")
    design = None
    if request.GET.get("design"):
        design = design_or_404(request.user, pk_or_404(request.GET["design"]))
        scenarios = scenarios.filter(design=design)
    scenarios = scenarios.select_related("design", "created_by").annotate(run_count=Count("runs"))
    page = page_of(request, scenarios.order_by("-updated", "-pk"), SCENARIOS_PER_PAGE)
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
    design = design_or_404(request.user, design_pk, CHANGE)
    form = ScenarioForm(request.POST or None, catalog_choices=catalog_choices(), initial=_new_initial(design))
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


def _new_job(design: Design) -> dict[str, Any]:
    return default_job(gpus=int((design.summary or {}).get("gpus") or 8))


def _new_initial(design: Design) -> dict[str, Any]:
    taken = set(Scenario.objects.filter(design=design).values_list("name", flat=True))
    name, n = "Baseline", 2
    while name in taken:
        name, n = f"Scenario {n}", n + 1
    return ScenarioForm.initial_from(name=name, job=_new_job(design), what_if={})


def _initial(scenario: Scenario) -> dict[str, Any]:
    return ScenarioForm.initial_from(
        name=scenario.name,
        description=scenario.description,
        job=scenario.job,
        what_if=scenario.what_if,
        failures=scenario.failures,
        power=scenario.power,
    )


def editor_form(scenario: Scenario, data=None) -> ScenarioForm:
    """The editor of a saved scenario, bound to ``data`` (a POST) or showing the saved values."""
    return ScenarioForm(data, catalog_choices=catalog_choices(), initial=_initial(scenario))


def kind_forms(bound_kind: str | None = None, bound_form=None) -> list[tuple[Any, Any]]:
    """(kind, options form) of every registered kind; the one just posted stays bound."""
    return [
        (kind, bound_form if kind.name == bound_kind else kind.options_form(prefix=kind.name))
        for kind in registry().values()
    ]


def scenario_page(request, scenario, *, form=None, run_forms=None, status: int = 200):
    """The scenario page: its runs, the run buttons with their options (``run_forms``, default
    :func:`kind_forms` unbound) and the editor (``form``, default the saved scenario).

    What the user's role does not allow is not offered: a viewer sees the editor read-only, no
    run, save, duplicate or delete, and a line saying why. Every form posts the scenario's
    revision it shows (``scenario_revision``), so a run or a save of a scenario changed since
    the page loaded is refused."""
    allowed = actions_on(scenario, request.user)
    if form is None:
        form = editor_form(scenario)
    if CHANGE not in allowed:
        form.read_only()
    context = {
        "scenario": scenario,
        "design": scenario.design,
        "form": form,
        "run_forms": run_forms if run_forms is not None else kind_forms(),
        "runs": scenario.runs.all()[:50],
        "revision": scenario_revision(scenario),
        "can_change": CHANGE in allowed,
        "can_run": RUN in allowed,
        "role_note": _role_note(request.user, scenario, allowed),
    }
    return render(request, "scenarios/scenario_detail.html", context, status=status)


def _role_note(user, scenario, allowed) -> str:
    """Why a member without the editor's actions is offered no run, save or duplicate."""
    if CHANGE in allowed and RUN in allowed:
        return ""
    team = scenario.design.team
    role = team_roles(user).get(team.pk, "member")
    return f"You are a {role} in team {team.name}; an editor can run this, save changes or duplicate it."


@login_required
def scenario_detail(request, pk: int):
    """The scenario: its runs, run buttons, and the editor (POST saves it, unless the scenario
    changed since the page loaded: 409 and nothing saved)."""
    scenario = scenario_or_404(request.user, pk, CHANGE if request.method == "POST" else VIEW)
    form = editor_form(scenario, request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            scenario_save(request, scenario, form)
        except ValidationError as error:
            status = 409 if getattr(error, "code", None) == "conflict" else 400
            form.add_service_errors(error)
            scenario.refresh_from_db()
        else:
            messages.success(request, "Scenario saved.")
            return redirect(scenario)
    if form.errors and status == 200:
        status = 400
    return scenario_page(request, scenario, form=form, status=status)


def scenario_save(request, scenario, form) -> None:
    """Save the editor's valid ``form`` onto ``scenario`` if it is still the revision the page
    posted (``ValidationError`` code ``conflict`` if not; field errors from the service)."""
    scenario_require_revision(scenario=scenario, seen_revision=request.POST.get("revision") or None)
    scenario_update(
        scenario=scenario,
        user=request.user,
        name=form.cleaned_data["name"],
        description=form.cleaned_data["description"],
        **form.sections(),
    )


@login_required
def propose_layout(request, pk: int):
    """``GET ?preset=...&<editor inputs>``: the fastest layout of the job the editor shows (blank
    inputs: the new-scenario defaults) that fits the design's GPUs, as JSON
    (``services.layouts.LayoutProposal`` and ``fields``: the editor's inputs to fill)."""
    design = design_or_404(request.user, pk)
    data = request.GET.copy()
    data.setdefault("name", "layout proposal")
    for name, spec in FIELD_SPECS.items():  # an on/off input not sent keeps its default
        if spec.kind == "bool" and name not in data:
            data[name] = "true" if spec.default else "false"
    form = ScenarioForm(data, catalog_choices=catalog_choices())
    if not form.is_valid():
        return JsonResponse({"errors": form.errors.get_json_data()}, status=400)
    job = {**_new_job(design), **form.job()}
    try:
        proposal = layout_propose(design=design, job=job, what_if=form.what_if())
    except ValidationError as error:
        form.add_service_errors(error)
        return JsonResponse({"errors": form.errors.get_json_data()}, status=400)
    fields = {}
    for key, value in (proposal.layout or {}).items():
        path = f"job.parallel.{key}" if key in PROPOSED_DEGREES else f"job.{key}"
        fields[PATH_FIELDS[path]] = value
    return JsonResponse({**proposal.to_dict(), "fields": fields})


@login_required
@require_POST
def scenario_duplicate_view(request, pk: int):
    scenario = scenario_or_404(request.user, pk, CHANGE)
    copy = scenario_duplicate(scenario=scenario, user=request.user)
    messages.success(request, f"Duplicated as “{copy.name}”: change the what-if and run it.")
    return redirect(f"{copy.get_absolute_url()}#edit")


@login_required
def scenario_yaml(request, pk: int):
    scenario = scenario_or_404(request.user, pk)
    response = HttpResponse(
        scenario_to_yaml(scenario=scenario), content_type="application/yaml; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{slugify(scenario.name) or "scenario"}.yaml"'
    return response


@login_required
def scenario_import(request):
    """Import a scenario file onto a design: ``?design=<pk>`` (the design page's "Import YAML")
    fixes the design, whichever team is current; otherwise the current team's designs."""
    if request.GET.get("design"):
        design = design_or_404(request.user, pk_or_404(request.GET["design"]), CHANGE)
        designs = Design.objects.filter(pk=design.pk)
    else:
        design = None
        designs = of_current_team(request, restrict(Design.objects, request.user, CHANGE))
    form = ScenarioImportForm(
        request.POST or None,
        request.FILES or None,
        designs=designs,
        initial={"design": design},
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
        request,
        "scenarios/scenario_import.html",
        {"form": form, "design": design},
        status=400 if form.errors else 200,
    )


@login_required
def scenario_delete_view(request, pk: int):
    """Confirm, then delete a scenario with its runs (runs in progress are cancelled first)."""
    scenario = scenario_or_404(request.user, pk, CHANGE)
    if request.method == "POST":
        design = scenario.design
        scenario_delete(scenario=scenario, user=request.user)
        messages.success(request, f"Scenario “{scenario.name}” and its runs were deleted.")
        return redirect(design)
    runs = scenario.runs.all()
    context = {
        "what": "scenario",
        "object": scenario,
        "design": scenario.design,
        "runs": runs,
        "active": [r for r in runs if r.is_active],
        "cancel_url": scenario.get_absolute_url(),
    }
    return render(request, "scenarios/confirm_delete.html", context)
