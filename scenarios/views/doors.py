"""What every page of scenarios and runs does first: find the object through the permission module
(another team's is a 404, a role without the action a 403) and page a list."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404

from scenarios.models import Run, Scenario
from teams.permissions import VIEW, require, restrict
from topology.models import Design

#: Largest primary key a URL may name (a bigger number is not an id: 404, not a database error).
MAX_PK = 2**63 - 1


def pk_or_404(value) -> int:
    """A primary key from a query string (404 for anything that cannot be one)."""
    text = str(value or "").strip()
    if not text.isdigit() or int(text) > MAX_PK:
        raise Http404("not found")
    return int(text)


def design_or_404(user, pk, action: str = VIEW) -> Design:
    """The design ``pk`` if ``user`` may see it (404 otherwise) and perform ``action`` (403)."""
    return require(get_object_or_404(restrict(Design.objects, user, VIEW), pk=pk_or_404(pk)), user, action)


def scenario_or_404(user, pk, action: str = VIEW) -> Scenario:
    """The scenario ``pk`` (with its design) if ``user`` may see it and perform ``action``."""
    scenario = get_object_or_404(restrict(Scenario.objects, user, VIEW).select_related("design"), pk=pk)
    return require(scenario, user, action)


def run_or_404(user, pk, action: str = VIEW) -> Run:
    """The run ``pk`` (with its scenario and design) if ``user`` may see it and perform ``action``."""
    run = get_object_or_404(
        restrict(Run.objects, user, VIEW).select_related("scenario", "scenario__design"), pk=pk
    )
    return require(run, user, action)


def page_of(request, queryset, per_page: int, param: str = "page"):
    """One page of ``queryset`` from ``?<param>=N`` (out-of-range numbers give the last page)."""
    return Paginator(queryset, per_page).get_page(request.GET.get(param))
