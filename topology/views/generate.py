"""A new design from a generator: the form (the parameters and validation of ``manage.py design
generate``), its live preview of the totals and floor plan (the generator takes milliseconds),
and the page that shows the background save's progress."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET

from teams.current import current_team
from teams.forms import add_service_errors
from teams.models import Team
from teams.permissions import CHANGE, VIEW, restrict
from topology import services
from topology.choices import BuildKind, BuildStatus
from topology.forms import DesignNewForm, GeneratorForm
from topology.models import DesignBuild
from topology.progress import progress_read
from topology.selectors import plan_floor_plan
from topology.views.designs import TILE_PX


def _teams(user):
    return restrict(Team.objects.all(), user, CHANGE).order_by("name")


@login_required
def design_new(request):
    """The generator form; a valid POST queues the save and opens its progress page."""
    teams = _teams(request.user)
    if not teams.exists():
        return _cannot_create(request)
    team = current_team(request)
    initial = {"team": team if team is not None and teams.filter(pk=team.pk).exists() else teams.first()}
    form = DesignNewForm(request.POST or None, teams=teams, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            build = services.design_build_start(
                kind=BuildKind.GENERATE,
                team=form.cleaned_data["team"],
                user=request.user,
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
                generator=form.cleaned_data["generator"],
                params=form.params(),
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            return redirect(build)
    context = {"form": form, "teams": teams, "preview_url": reverse("topology:design-preview")}
    return render(request, "topology/design_new.html", context, status=400 if form.errors else 200)


def _cannot_create(request):
    """Why this user may not create a design: their role in each of their teams, and the way on."""
    from teams.current import user_teams
    from teams.permissions import team_roles

    roles = team_roles(request.user)
    memberships = [{"team": t, "role": roles.get(t.pk)} for t in user_teams(request.user)]
    status = 403 if request.method == "POST" else 200
    return render(request, "topology/design_new_denied.html", {"memberships": memberships}, status=status)


@login_required
@require_GET
def design_preview(request):
    """Totals and floor plan of what the form's parameters would build (nothing is saved)."""
    form = GeneratorForm(request.GET)
    if form.is_valid():
        try:
            plan = services.generator_plan(generator=form.cleaned_data["generator"], params=form.params())
        except ValidationError as error:
            add_service_errors(form, error)
    if form.errors:
        errors = {field: [str(m) for m in messages] for field, messages in form.errors.items()}
        return JsonResponse({"ok": False, "errors": errors}, status=400)
    summary = plan.summary()
    html = render_to_string(
        "topology/_preview.html",
        {
            "design": {"summary": summary},
            "summary": summary,
            "plan": plan_floor_plan(plan),
            "tile": TILE_PX,
            "params": plan.params,
        },
    )
    return JsonResponse({"ok": True, "summary": summary, "html": html})


def _build(user, pk) -> DesignBuild:
    return get_object_or_404(
        restrict(DesignBuild.objects.select_related("design", "team"), user, VIEW), pk=pk
    )


def _state(build: DesignBuild) -> dict:
    live = progress_read(build.task_id) if build.status in (BuildStatus.QUEUED, BuildStatus.RUNNING) else None
    progress = 1.0 if build.status == BuildStatus.SUCCEEDED else (live or {}).get("progress", 0.0)
    stage = (live or {}).get("stage") or build.get_status_display()
    return {
        "id": build.pk,
        "status": build.status,
        "status_label": build.get_status_display(),
        "progress": progress,
        "stage": stage,
        "error": build.error,
        "design_url": build.design.get_absolute_url() if build.design_id else None,
    }


@login_required
def build_detail(request, pk: int):
    """The progress of a design being saved; the page polls ``build_status`` and opens the
    design when it is saved."""
    build = _build(request.user, pk)
    if build.kind not in BuildKind.values:
        raise Http404("not found")
    return render(request, "topology/build_detail.html", {"build": build, "state": _state(build)})


@login_required
def build_status(request, pk: int):
    """The build's state as JSON (status, progress 0..1, stage, error, the design's URL)."""
    return JsonResponse(_state(_build(request.user, pk)))
