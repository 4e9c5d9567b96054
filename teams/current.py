"""The current team of a session: lists show its objects, new designs go into it, and the nav's
switcher changes it. Which teams a user may switch to is decided by the permission module."""

from __future__ import annotations

from django.db.models import QuerySet

from teams.models import Team
from teams.permissions import VIEW, require, restrict

SESSION_KEY = "twin_team"


def user_teams(user) -> QuerySet:
    """The teams ``user`` may see (their teams; every team for a superuser)."""
    return restrict(Team.objects.all(), user, VIEW).order_by("name")


def current_team(request):
    """The session's team, or the user's first team when none was chosen (None: no team)."""
    if hasattr(request, "_twin_team"):
        return request._twin_team
    team = None
    if request.user.is_authenticated:
        teams = user_teams(request.user)
        chosen = request.session.get(SESSION_KEY)
        team = teams.filter(pk=chosen).first() if isinstance(chosen, int) else None
        team = team or teams.first()
    request._twin_team = team
    return team


def team_switch(request, team) -> None:
    """Make ``team`` (one the user may see) the session's current team."""
    require(team, request.user, VIEW)
    request.session[SESSION_KEY] = team.pk
    request._twin_team = team


def of_current_team(request, queryset: QuerySet, path: str = "team") -> QuerySet:
    """``queryset`` (already restricted) narrowed to the current team's objects."""
    team = current_team(request)
    return queryset.filter(**{path: team}) if team is not None else queryset.none()
