"""Teams and their members: invitations by username, roles, a team always keeps an admin, and
starting a team never joins an existing one."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from teams import services
from teams.permissions import Forbidden


def test_team_invite_adds_an_existing_user_by_username_with_a_role(team, user, django_user_model):
    django_user_model.objects.create_user("dora")
    member = services.team_invite(team=team, username="dora", role="editor", user=user)
    assert member.role == "editor" and member.team == team
    with pytest.raises(ValidationError, match="username: dora is already a member of Alpha"):
        services.team_invite(team=team, username="dora", role="viewer", user=user)
    with pytest.raises(ValidationError, match="username: no account is called 'nobody'"):
        services.team_invite(team=team, username="nobody", role="viewer", user=user)
    with pytest.raises(ValidationError, match="role: must be one of viewer, editor, admin"):
        services.team_invite(team=team, username="dora", role="owner", user=user)


def test_only_team_admins_invite_and_a_team_keeps_an_admin(team, user, editor, viewer):
    with pytest.raises(Forbidden):
        services.team_invite(team=team, username="victor", role="admin", user=editor)
    admin = team.teammembership_set.get(user=user)
    with pytest.raises(ValidationError, match="last admin of Alpha"):
        services.membership_update(membership=admin, role="viewer", user=user)
    with pytest.raises(ValidationError, match="last admin of Alpha"):
        services.membership_remove(membership=admin, user=user)
    vic = team.teammembership_set.get(user=viewer)
    services.membership_update(membership=vic, role="admin", user=user)
    services.membership_update(membership=admin, role="editor", user=user)  # another admin exists now
    services.membership_remove(membership=team.teammembership_set.get(user=editor), user=editor)  # leaving
    assert sorted(team.teammembership_set.values_list("user__username", "role")) == [
        ("alice", "editor"),
        ("victor", "admin"),
    ]


def test_team_start_makes_the_creator_admin_and_never_joins_an_existing_team(db, user, team):
    started = services.team_start(name="Gamma", user=user)
    assert started.teammembership_set.get().role == "admin"
    with pytest.raises(ValidationError, match="a team called 'alpha' exists already"):
        services.team_start(name="alpha", user=user)
