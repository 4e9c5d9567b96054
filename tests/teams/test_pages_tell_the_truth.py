"""Pages that tell a user what they may do and never act behind their back: a viewer asking for
a new design is told why not, starting a team keeps the current team, and "Import YAML" from a
design page imports onto that design."""

from __future__ import annotations

from django.urls import reverse

from scenarios.models import Scenario
from teams.choices import TeamRole
from teams.models import Team
from teams.services import team_create


def test_design_new_tells_a_viewer_why_they_cannot_create(client, django_user_model, team):
    viewer = django_user_model.objects.create_user("vera", password="pw-vera-123")
    team_create(name=team.name, users=[viewer], role=TeamRole.VIEWER)
    client.force_login(viewer)
    response = client.get(reverse("topology:design-new"))
    html = response.content.decode()
    assert response.status_code == 200
    assert "data-save-design" not in html  # no form that could only fail
    assert "You cannot create a design yet" in html
    assert "Alpha</a>: Viewer" in html and "editor" in html
    posted = client.post(reverse("topology:design-new"), {"name": "x", "generator": "rail-optimized"})
    assert posted.status_code == 403 and b"You cannot create a design yet" in posted.content


def test_design_new_tells_a_user_in_no_team_how_to_get_one(client, django_user_model, db):
    loner = django_user_model.objects.create_user("lone", password="pw-lone-123")
    client.force_login(loner)
    html = client.get(reverse("topology:design-new")).content.decode()
    assert "You are in no team yet" in html and "lone" in html and "data-save-design" not in html


def test_design_new_still_offers_the_form_to_an_editor(client, user, team, catalog_db):
    client.force_login(user)
    html = client.get(reverse("topology:design-new")).content.decode()
    assert "data-save-design" in html and "You cannot create" not in html


def test_starting_a_team_does_not_switch_the_current_team(client, user, design):
    client.force_login(user)
    response = client.post(reverse("teams:list"), {"name": "Gamma"}, follow=True)
    html = response.content.decode()
    assert "Team “Gamma” created; your current team is still “Alpha”" in html
    assert "Switch to Gamma" in html and "data-switch-team" in html
    # The lists still show team Alpha's design until the user switches.
    assert design.name in client.get(reverse("topology:design-list")).content.decode()
    gamma = Team.objects.get(name="Gamma")
    client.post(reverse("teams:switch"), {"team": gamma.pk, "next": "/designs/"})
    assert design.name not in client.get(reverse("topology:design-list")).content.decode()


def test_import_from_a_design_page_attaches_to_that_design(client, user, design, scenario):
    """The design belongs to a team that is not the current one: the import still lands on it."""
    from tests.scenarios.conftest import make_design

    other_team = team_create(name="Aardvark", users=[user])  # sorts first: the default current team
    other = make_design(team=other_team, user=user, name="Other x4")
    client.force_login(user)
    assert "Aardvark" in client.get(reverse("topology:design-list")).content.decode()
    text = client.get(reverse("scenarios:scenario-yaml", args=[scenario.pk])).content.decode()
    url = reverse("scenarios:scenario-import") + f"?design={design.pk}"
    page = client.get(url).content.decode()
    assert "data-import-design" in page and design.name in page
    response = client.post(url, {"design": design.pk, "text": text.replace("baseline", "Imported")})
    assert response.status_code == 302
    imported = Scenario.objects.get(name="Imported")
    assert imported.design_id == design.pk and imported.design_id != other.pk
    # Another design may not be smuggled in through the form while the page is fixed to one.
    refused = client.post(url, {"design": other.pk, "text": text.replace("baseline", "Smuggled")})
    assert refused.status_code == 400 and not Scenario.objects.filter(name="Smuggled").exists()
