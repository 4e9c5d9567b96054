"""Who may do what to which object: the one place every door (views, services, consumers, the
API, the admin) asks.

Two entry points, in the style of NetBox's ``RestrictedQuerySet.restrict(user, action)``:

- ``restrict(queryset, user, action)`` narrows a queryset to the objects ``user`` may act on;
- ``require(obj, user, action)`` returns ``obj`` or raises :class:`NotFound` when the user may
  not even see it (another team's object is indistinguishable from a missing one: no existence
  leak) and :class:`Forbidden` when they may see it but not perform ``action``.

Every object belongs to a team through a chain of foreign keys (``TEAM_PATHS``). A membership's
role grants a set of actions (``ROLE_ACTIONS``); superusers may do everything.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import Http404

from teams.models import TeamMembership

VIEW, CHANGE, RUN, MANAGE = "view", "change", "run", "manage"
#: ``view`` reads; ``change`` edits designs and scenarios; ``run`` starts and cancels runs;
#: ``manage`` administers a team (members, invitations, deletion).
ACTIONS = (VIEW, CHANGE, RUN, MANAGE)

#: Actions each membership role grants (``teams.choices.TeamRole`` values): the only place
#: a role means something. Viewers read; editors also change designs and scenarios and start
#: runs; admins also manage the team (members, invitations) and delete designs.
ROLE_ACTIONS: dict[str, frozenset[str]] = {
    "viewer": frozenset({VIEW}),
    "editor": frozenset({VIEW, CHANGE, RUN}),
    "admin": frozenset(ACTIONS),
}

#: ORM path from each model (``app_label.model_name``) to its team's primary key.
TEAM_PATHS = {
    "teams.team": "pk",
    "teams.teammembership": "team",
    "topology.design": "team",
    "topology.hall": "design__team",
    "topology.rack": "hall__design__team",
    "topology.node": "rack__hall__design__team",
    "topology.gpu": "node__rack__hall__design__team",
    "topology.switch": "design__team",
    "topology.link": "design__team",
    "topology.powerfeed": "design__team",
    "topology.designchange": "design__team",
    "topology.designbuild": "team",
    "scenarios.scenario": "design__team",
    "scenarios.run": "scenario__design__team",
    "scenarios.runarray": "run__scenario__design__team",
}


class NotFound(Http404):
    """The object does not exist for this user (missing, or another team's)."""


class Forbidden(PermissionDenied):
    """The user sees the object but their role does not allow the action."""


def _check_action(action: str) -> None:
    if action not in ACTIONS:
        raise ValueError(f"action: must be one of {', '.join(ACTIONS)} (got {action!r})")


def _team_path(model: type[Model]) -> str:
    label = model._meta.label_lower
    try:
        return TEAM_PATHS[label]
    except KeyError:
        raise ValueError(f"{label}: no team path is declared in teams.permissions.TEAM_PATHS") from None


def _roles_allowing(action: str) -> list[str]:
    return [role for role, actions in ROLE_ACTIONS.items() if action in actions]


def teams_allowing(user, action: str) -> QuerySet:
    """Primary keys of the teams in which ``user`` may perform ``action`` (a subquery)."""
    _check_action(action)
    return TeamMembership.objects.filter(user=user, role__in=_roles_allowing(action)).values("team")


def restrict(queryset: QuerySet, user, action: str = VIEW) -> QuerySet:
    """The objects of ``queryset`` on which ``user`` may perform ``action``.

    Anonymous users get nothing, superusers everything, everyone else the objects of the teams
    whose membership grants the action.
    """
    _check_action(action)
    if user is None or not user.is_authenticated:
        return queryset.none()
    if user.is_superuser:
        return queryset
    path = _team_path(queryset.model)
    return queryset.filter(**{f"{path}__in": teams_allowing(user, action)})


def allows(obj: Model, user, action: str = VIEW) -> bool:
    """Whether ``user`` may perform ``action`` on ``obj`` (for templates and menus)."""
    manager = type(obj)._default_manager
    return restrict(manager.filter(pk=obj.pk), user, action).exists()


def team_roles(user) -> dict[int, str]:
    """``{team pk: role}`` of the user's memberships (the teams page shows each role)."""
    if user is None or not user.is_authenticated:
        return {}
    return dict(TeamMembership.objects.filter(user=user).values_list("team", "role"))


def actions_on(obj: Model, user) -> frozenset[str]:
    """Every action ``user`` may perform on ``obj`` (one query; pages show only what is allowed)."""
    if user is None or not user.is_authenticated:
        return frozenset()
    if user.is_superuser:
        return frozenset(ACTIONS)
    path = _team_path(type(obj))
    team = type(obj)._default_manager.filter(pk=obj.pk).values(path)
    roles = TeamMembership.objects.filter(user=user, team__in=team).values_list("role", flat=True)
    return frozenset().union(*(ROLE_ACTIONS.get(role, frozenset()) for role in roles))


def require(obj: Model, user, action: str = VIEW) -> Model:
    """Return ``obj`` if ``user`` may perform ``action`` on it.

    Raises
    ------
    NotFound
        The user may not see the object (another team's objects do not exist for them).
    Forbidden
        The user sees it, but their role does not grant ``action``.
    """
    _check_action(action)
    label = type(obj)._meta.verbose_name
    if not allows(obj, user, VIEW):
        raise NotFound(f"{label} {obj.pk}: not found")
    if action != VIEW and not allows(obj, user, action):
        raise Forbidden(f"{label} {obj.pk}: your role does not allow '{action}'")
    return obj


def catalog_allows(user, action: str = VIEW) -> bool:
    """The hardware catalog is shared by every team: anyone logged in views it, staff change it."""
    _check_action(action)
    if user is None or not user.is_authenticated:
        return False
    return action == VIEW or bool(user.is_staff or user.is_superuser)


def require_catalog(user, action: str = VIEW) -> None:
    """Raise :class:`Forbidden` unless ``user`` may perform ``action`` on the catalog."""
    if not catalog_allows(user, action):
        raise Forbidden(f"catalog: only staff may '{action}' it" if action != VIEW else "catalog: log in")
