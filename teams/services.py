"""Teams and their members: create a team, invite a user by username, change a member's role,
remove a member (a team always keeps an admin); and the demo account a newcomer logs in with."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from teams.choices import TeamRole
from teams.models import Team, TeamMembership
from teams.permissions import MANAGE, require

#: The demo account of embedded mode (``manage.py demo_seed`` creates it; the login page shows it).
DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo-twin-2026"


def team_create(*, name: str, users=(), role: str = TeamRole.ADMIN) -> Team:
    """Create a team (or return the existing one of that name) and add the users to it with
    ``role`` (command line, seeds and tests; the web uses ``team_start``)."""
    team, _ = Team.objects.get_or_create(name=name, defaults={"slug": slugify(name)})
    for user in users:
        TeamMembership.objects.get_or_create(team=team, user=user, defaults={"role": role})
    return team


@transaction.atomic
def team_start(*, name: str, user) -> Team:
    """Start a new team with ``user`` as its first admin (a taken name is an error, never a way in)."""
    name = str(name or "").strip()
    if not name:
        raise ValidationError({"name": "name: required"})
    if len(name) > 100:
        raise ValidationError({"name": f"name: at most 100 characters (got {len(name):,})"})
    slug = slugify(name)[:100]
    if not slug:
        raise ValidationError({"name": "name: needs at least one letter or digit"})
    if Team.objects.filter(name__iexact=name).exists() or Team.objects.filter(slug=slug).exists():
        raise ValidationError(
            {"name": f"name: a team called {name!r} exists already; ask its admin to invite you"}
        )
    team = Team.objects.create(name=name, slug=slug)
    TeamMembership.objects.create(team=team, user=user, role=TeamRole.ADMIN)
    return team


def _check_role(role: str) -> str:
    if role not in TeamRole.values:
        raise ValidationError(
            {"role": f"role: must be one of {', '.join(TeamRole.values)} (got {str(role)[:40]!r})"}
        )
    return role


@transaction.atomic
def team_invite(*, team: Team, username: str, role: str, user) -> TeamMembership:
    """Add an existing user (by username) to a team with a role (team admins only).

    Raises
    ------
    NotFound, Forbidden (``teams.permissions``), ValidationError (``username``, ``role``)
    """
    require(team, user, MANAGE)
    _check_role(role)
    username = str(username or "").strip()
    invited = get_user_model().objects.filter(username=username).first() if username else None
    if invited is None:
        raise ValidationError(
            {
                "username": f"username: no account is called {username[:40]!r} (a staff member "
                "creates accounts in the admin)"
            }
        )
    existing = TeamMembership.objects.filter(team=team, user=invited).first()
    if existing is not None:
        raise ValidationError(
            {
                "username": f"username: {username} is already a member of {team} "
                f"({existing.get_role_display()})"
            }
        )
    return TeamMembership.objects.create(team=team, user=invited, role=role)


def _keep_an_admin(membership: TeamMembership) -> None:
    if membership.role != TeamRole.ADMIN:
        return
    others = TeamMembership.objects.filter(team=membership.team_id, role=TeamRole.ADMIN).exclude(
        pk=membership.pk
    )
    if not others.exists():
        raise ValidationError(
            {
                "role": f"role: {membership.user} is the last admin of {membership.team}; "
                "make someone else admin first"
            }
        )


@transaction.atomic
def membership_update(*, membership: TeamMembership, role: str, user) -> TeamMembership:
    """Change a member's role (team admins only; a team keeps at least one admin)."""
    require(membership, user, MANAGE)
    membership = (
        TeamMembership.objects.select_for_update().select_related("team", "user").get(pk=membership.pk)
    )
    if _check_role(role) != TeamRole.ADMIN:
        _keep_an_admin(membership)
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def membership_remove(*, membership: TeamMembership, user) -> None:
    """Remove a member (team admins), or leave a team oneself; a team keeps at least one admin."""
    if membership.user_id != getattr(user, "pk", None):
        require(membership, user, MANAGE)
    membership = (
        TeamMembership.objects.select_for_update().select_related("team", "user").get(pk=membership.pk)
    )
    _keep_an_admin(membership)
    membership.delete()
