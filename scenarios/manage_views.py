"""Doors of the scenarios app that act on whole designs and delete things: the design file
(the design with its scenarios) out and in, the runs of each design version (for the design's
history page), and deleting scenarios and runs after a confirmation. Kept apart from
``views.py`` (the run and scenario editors) so that each module reads as one concern."""

from __future__ import annotations

from collections import defaultdict

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from scenarios import charts
from scenarios.models import Run, Scenario
from scenarios.selectors import run_kind_label
from scenarios.services import run_delete, scenario_delete
from scenarios.services.designs import design_export_yaml, design_import_yaml
from teams.current import current_team
from teams.models import Team
from teams.permissions import CHANGE, VIEW, require, restrict
from topology.models import Design

MAX_UPLOAD_BYTES = 1024 * 1024  # the bounded loader's limit: a bigger file is refused unread


class DesignImportForm(forms.Form):
    """A design file, uploaded or pasted, into one of the user's teams."""

    file = forms.FileField(required=False, help_text="a .yaml design file (at most 1 MiB)")
    text = forms.CharField(label="or paste it", required=False, widget=forms.Textarea(attrs={"rows": 12}))
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    name = forms.CharField(max_length=120, required=False, help_text="blank: the name in the file")

    def __init__(self, *args, teams=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams if teams is not None else Team.objects.none()

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        if upload is not None:
            if upload.size > MAX_UPLOAD_BYTES:
                self.add_error("file", f"{upload.size:,} bytes, more than the {MAX_UPLOAD_BYTES:,} allowed")
            else:
                data["text"] = upload.read(MAX_UPLOAD_BYTES + 1)
        if not data.get("text") and not self.errors:
            self.add_error("text", "choose a file or paste its text")
        return data


def _design(user, pk, action: str = VIEW) -> Design:
    return require(get_object_or_404(restrict(Design.objects, user, VIEW), pk=pk), user, action)


@login_required
def design_export(request, pk: int):
    """The design and its scenarios as one YAML file (``manage.py simulate`` runs it)."""
    design = _design(request.user, pk)
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


@login_required
def design_version_runs(request, pk: int):
    """``{"versions": {version: [{id, label, url}]}}``: the runs that simulated each version."""
    design = _design(request.user, pk)
    versions: dict[int, list] = defaultdict(list)
    runs = Run.objects.filter(scenario__design=design).select_related("scenario").order_by("-created")[:500]
    for run in runs:
        versions[run.design_version].append(
            {
                "id": run.pk,
                "label": f"#{run.pk} {run.scenario.name} ({run_kind_label(run)}, {run.status})",
                "url": run.get_absolute_url(),
            }
        )
    return JsonResponse({"design": design.pk, "versions": versions})


@login_required
def scenario_delete_view(request, pk: int):
    """Confirm, then delete a scenario with its runs (runs in progress are cancelled first)."""
    scenario = require(
        get_object_or_404(restrict(Scenario.objects, request.user, VIEW).select_related("design"), pk=pk),
        request.user,
        CHANGE,
    )
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


@login_required
def run_delete_view(request, pk: int):
    """Confirm, then delete a run and its results (cancelled first if still in progress)."""
    run = get_object_or_404(
        restrict(Run.objects, request.user, VIEW).select_related("scenario", "scenario__design"), pk=pk
    )
    require(run, request.user, CHANGE)
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
    """Save the layout ``layout`` (an index into the search's best layouts) as a what-if
    scenario of the searched one, and open it (ready to run its step time)."""
    from scenarios.kinds.search import layout_job
    from scenarios.services import scenario_create

    run = get_object_or_404(restrict(Run.objects, request.user, VIEW).select_related("scenario"), pk=pk)
    require(run.scenario.design, request.user, CHANGE)
    best = ((run.summary or {}).get("best") or []) if run.kind == "search" else []
    try:
        row = best[int(request.POST.get("layout", ""))]
    except (ValueError, IndexError):
        messages.error(request, "This run has no such layout to apply.")
        return redirect(run)
    source = run.scenario
    try:
        scenario = scenario_create(
            design=source.design,
            name=f"{source.name} · {charts.layout_label(row)}"[:120],
            description=f"Layout found by layout search #{run.pk} of {source.name!r}.",
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
