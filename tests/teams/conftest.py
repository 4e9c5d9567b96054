"""Members of team Alpha (``team`` in ``tests/conftest.py``) in the two roles below admin."""

from __future__ import annotations

import pytest


@pytest.fixture
def editor(django_user_model, team):
    from teams.models import TeamMembership

    carol = django_user_model.objects.create_user("carol")
    TeamMembership.objects.create(team=team, user=carol, role="editor")
    return carol


@pytest.fixture
def viewer(django_user_model, team):
    from teams.models import TeamMembership

    vic = django_user_model.objects.create_user("victor")
    TeamMembership.objects.create(team=team, user=vic, role="viewer")
    return vic
