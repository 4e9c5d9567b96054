"""The catalog API (read by everyone logged in, changed by staff through the catalog service,
which gives every design using the entry a new version) and the teams API (members, and team
admins inviting, changing roles, removing)."""

from __future__ import annotations

from teams.models import TeamMembership
from teams.permissions import ACTIONS, ROLE_ACTIONS, VIEW
from tests.api.conftest import errors_of, role_granting, set_role, token_client
from topology.models import Design, GpuType


def test_catalog_reads_for_everyone_logged_in(api, catalog_db):
    whole = api.get("/api/catalog/").json()
    assert {"gpus", "servers", "switches", "links", "feeds"} <= set(whole)
    gpus = api.get("/api/catalog/gpus/").json()["gpus"]
    slug = gpus[0]["slug"]
    assert api.get(f"/api/catalog/gpus/{slug}/").json()["slug"] == slug
    assert api.get("/api/catalog/gpus/no-such-gpu/").status_code == 404
    assert api.get("/api/catalog/toasters/").status_code == 404


def test_catalog_writes_are_for_staff_and_bump_design_versions(api, design, user, django_user_model):
    server = design.halls.first().racks.first().nodes.first().server_type
    gpu = server.gpu_type
    denied = api.patch(f"/api/catalog/gpus/{gpu.slug}/", {"tdp_w": 777.0}, format="json")
    assert denied.status_code == 403 and "staff" in errors_of(denied)["__all__"][0]
    staff = token_client(django_user_model.objects.create_user("curator", is_staff=True))
    version = design.version
    response = staff.patch(f"/api/catalog/gpus/{gpu.slug}/", {"tdp_w": 777.0}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["tdp_w"] == 777.0 and GpuType.objects.get(pk=gpu.pk).tdp_w == 777.0
    assert Design.objects.get(pk=design.pk).version > version
    bad = staff.patch(f"/api/catalog/gpus/{gpu.slug}/", {"idle_w": 10_000.0}, format="json")
    assert bad.status_code == 400
    assert any("idle_w" in key for key in errors_of(bad)), bad.content
    new = {**response.json(), "slug": "api-gpu", "name": "API GPU"}
    assert staff.post("/api/catalog/gpus/", new, format="json").status_code == 201
    again = staff.post("/api/catalog/gpus/", new, format="json")
    assert again.status_code == 400 and list(errors_of(again)) == ["slug"]


def test_teams_and_members(api, team, user, outsider, django_user_model):
    assert [t["id"] for t in api.get("/api/teams/").json()["results"]] == [team.pk]
    assert api.get(f"/api/teams/{team.pk}/").json()["name"] == "Alpha"
    carol = django_user_model.objects.create_user("carol")
    lowest = min(ROLE_ACTIONS, key=lambda r: len(ROLE_ACTIONS[r]))
    invited = api.post(f"/api/teams/{team.pk}/members/", {"username": "carol", "role": lowest}, format="json")
    assert invited.status_code == 201, invited.content
    member = invited.json()
    assert member["username"] == "carol" and member["role"] == lowest
    members = api.get(f"/api/teams/{team.pk}/members/").json()["results"]
    assert {m["username"] for m in members} == {"alice", "carol"}
    top = role_granting(*ACTIONS)
    changed = api.patch(f"/api/teams/{team.pk}/members/{member['id']}/", {"role": top}, format="json")
    assert changed.status_code == 200 and changed.json()["role"] == top
    assert api.delete(f"/api/teams/{team.pk}/members/{member['id']}/").status_code == 204
    assert not TeamMembership.objects.filter(user=carol).exists()
    unknown = api.post(
        f"/api/teams/{team.pk}/members/", {"username": "nobody", "role": lowest}, format="json"
    )
    assert unknown.status_code == 400 and list(errors_of(unknown)) == ["username"]
    assert token_client(outsider).get(f"/api/teams/{team.pk}/members/").status_code == 404


def test_a_member_who_only_views_cannot_invite(team, user, django_user_model):
    viewer_role = role_granting(VIEW)
    set_role(user, team, viewer_role)
    django_user_model.objects.create_user("erin")
    response = token_client(user).post(
        f"/api/teams/{team.pk}/members/", {"username": "erin", "role": viewer_role}, format="json"
    )
    assert response.status_code == (201 if "manage" in ROLE_ACTIONS[viewer_role] else 403)
