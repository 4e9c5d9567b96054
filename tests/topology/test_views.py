"""Design pages: login required, a team sees its designs with a floor plan and totals, no one else's."""

from __future__ import annotations

import pytest
from django.urls import reverse

from teams.services import team_create
from topology.fabric.generators import generate
from topology.services import design_create_from_plan


@pytest.fixture
def design(catalog_db, catalog, team, user):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-a100", nodes=40)
    return design_create_from_plan(plan=plan, name="Selene slice", team=team, user=user)


def test_design_list_requires_login(client, db):
    response = client.get(reverse("topology:design-list"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_design_list_shows_floor_plan_and_totals(client, user, design):
    client.force_login(user)
    html = client.get(reverse("topology:design-list")).content.decode()
    assert "Selene slice" in html
    assert html.count('class="rack kind-') == design.summary["racks"]
    assert "320" in html  # GPUs
    assert "Gb/s per GPU" in html


def test_design_of_another_team_is_not_found(client, django_user_model, design):
    stranger = django_user_model.objects.create_user("mallory", password="pw-mallory-1")
    team_create(name="Other", users=[stranger])
    client.force_login(stranger)
    assert client.get(design.get_absolute_url()).status_code == 404
    assert "Selene slice" not in client.get(reverse("topology:design-list")).content.decode()


@pytest.mark.slow
def test_demo_seed_gives_a_newcomer_designs_to_look_at(client, catalog_db):
    from django.core.management import call_command

    call_command("demo_seed", "--with-demo-user", verbosity=0)  # CI runs with REDIS_URL set
    call_command("demo_seed", "--with-demo-user", verbosity=0)  # idempotent
    assert client.post("/login/", {"username": "demo", "password": "demo-twin-2026"}).status_code == 302
    html = client.get(reverse("topology:design-list")).content.decode()
    assert html.count('<article class="card design-card">') == 3
