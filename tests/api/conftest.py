"""Fixtures of the API tests: a token-authenticated client of team Alpha's member, and helpers
that read the API's one error shape."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient


def token_client(user) -> APIClient:
    """A client that authenticates as a script does: ``Authorization: Token <key>``."""
    from teams.tokens import api_token_create

    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=user).key}")
    return client


def role_granting(*actions: str) -> str:
    """The role of ``teams.permissions.ROLE_ACTIONS`` granting the fewest actions beyond ``actions``."""
    from teams.permissions import ROLE_ACTIONS

    fits = [role for role, granted in ROLE_ACTIONS.items() if set(actions) <= granted]
    return min(fits, key=lambda role: len(ROLE_ACTIONS[role]))


def set_role(user, team, role: str) -> None:
    from teams.models import TeamMembership

    TeamMembership.objects.update_or_create(user=user, team=team, defaults={"role": role})


@pytest.fixture
def team(db, user):
    """Team Alpha, Alice with a role granting every action (whatever the default role is)."""
    from teams.permissions import ACTIONS
    from teams.services import team_create

    alpha = team_create(name="Alpha", users=[user])
    set_role(user, alpha, role_granting(*ACTIONS))
    return alpha


@pytest.fixture
def api(user, team):
    """Alice (team Alpha) through her API token."""
    return token_client(user)


@pytest.fixture
def stranger_api(outsider):
    """Bob (team Beta) through his API token."""
    return token_client(outsider)


def errors_of(response) -> dict[str, list[str]]:
    """The ``errors`` mapping of an API error response (asserting the shape)."""
    body = response.json()
    assert set(body) == {"errors"}, body
    assert all(isinstance(v, list) and all(isinstance(m, str) for m in v) for v in body["errors"].values())
    return body["errors"]
