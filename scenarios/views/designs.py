"""The scenarios app's part of a design: the floor plan JSON and the scenarios-and-runs panel of the
design page, the runs of each design version (its history page), and the design file (the
design with its scenarios) out and in."""

from __future__ import annotations

from collections import defaultdict

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import condition

from scenarios.forms import DesignImportForm
from scenarios.models import Run, Scenario
from scenarios.selectors import design_floor_plan_json, run_kind_label
from scenarios.services.designs import design_export_yaml, design_import_yaml
from scenarios.views.doors import design_or_404, page_of
from teams.current import current_team
from teams.models import Team
from teams.permissions import CHANGE, actions_on, restrict
from topology.models import Design

#: Rows of the design page's panel lists (they grow with use; the panel stays one screen).
PANEL_SCENARIOS_PER_PAGE = 10
PANEL_RUNS_PER_PAGE = 15


def _design_etag(request, pk: int) -> str | None:
    version = restrict(Design.objects, request.user).filter(pk=pk).values_list("version", flat=True).first()
    return None if version is None else f"fp-{pk}-v{version}"


@login_required
@condition(etag_func=_design_etag)
def design_floor_plan(request, pk: int):
    """The design's floor plan JSON (``design_floor_plan_json``); cached by the browser per version."""
    response = JsonResponse(design_floor_plan_json(design=design_or_404(request.user, pk)))
    response["Cache-Control"] = "private, no-cache"
    return response


@login_required
def design_panel(request, pk: int):
    """The design page's scenarios and latest runs (HTML fragment, refreshed on live status)."""
    design = design_or_404(request.user, pk)
    scenarios = Scenario.objects.filter(design=design).order_by("-updated", "-pk")
    runs = Run.objects.filter(scenario__design=design).select_related("scenario").order_by("-created", "-pk")
    context = {
        "design": design,
        "scenarios": page_of(request, scenarios, PANEL_SCENARIOS_PER_PAGE, "scenarios_page"),
        "runs": page_of(request, runs, PANEL_RUNS_PER_PAGE, "runs_page"),
        "new_url": f"{reverse('scenarios:scenario-new')}?design={design.pk}",
        "can": actions_on(design, request.user),
    }
    return render(request, "scenarios/_design_panel.html", context)


@login_required
def design_version_runs(request, pk: int):
    """``{"versions": {version: [{id, label, url}]}}``: the runs that simulated each version."""
    design = design_or_404(request.user, pk)
    versions: dict[int, list] = defaultdict(list)
    runs = Run.objects.filter(scenario__design=design).select_related("scenario").order_by("-created")[:500]
    for run in runs:
        versions[run.design_version].append(
            {
                "id": run.pk,
                "label": f"#{run.pk} {run.scenario_name} ({run_kind_label(run)}, {run.status})",
                "url": run.get_absolute_url(),
            }
        )
    return JsonResponse({"design": design.pk, "versions": versions})


@login_required
def design_export(request, pk: int):
    """The design and its scenarios as one YAML file (``manage.py simulate`` runs it)."""
    design = design_or_404(request.user, pk)
    try:
        text = design_export_yaml(design=design, user=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(m.split(": ", 1)[-1] for m in error.messages))
        return redirect(design)
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{slugify(design.name) or "design"}.yaml"'
    return response


@login_required
def design_import(request):
    """Create a design with its scenarios from a design file."""
    teams = restrict(Team.objects.all(), request.user, CHANGE).order_by("name")
    team = current_team(request)
    initial = {"team": team if team is not None and teams.filter(pk=team.pk).exists() else teams.first()}
    form = DesignImportForm(request.POST or None, request.FILES or None, teams=teams, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            design = design_import_yaml(
                text=form.cleaned_data["text"],
                team=form.cleaned_data["team"],
                user=request.user,
                name=form.cleaned_data["name"] or None,
            )
        except ValidationError as error:
            for field, errors in error.message_dict.items():
                target = field if field in ("name",) else "text"
                for message in errors:
                    form.add_error(target, message if target == "text" else message.split(": ", 1)[-1])
        else:
            messages.success(request, f"Imported “{design.name}” with {design.scenarios.count()} scenarios.")
            return redirect(design)
    status = 400 if form.errors else 200
    return render(request, "scenarios/design_import.html", {"form": form, "teams": teams}, status=status)
