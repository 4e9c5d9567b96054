"""The one permission module: restrict/require per object kind and action, and every door of
another team's object answering 404 (no existence leak)."""

from __future__ import annotations

import pytest
from django.urls import get_resolver, reverse

from scenarios.models import Run, RunArray, Scenario
from teams import permissions
from teams.models import Team, TeamMembership
from teams.permissions import ACTIONS, Forbidden, NotFound, allows, require, restrict
from topology.models import (
    Design,
    DesignBuild,
    DesignChange,
    Gpu,
    Hall,
    Link,
    Node,
    PowerFeed,
    Rack,
    Switch,
)

MODELS = (
    *(
        Team,
        TeamMembership,
        Design,
        Hall,
        Rack,
        Node,
        Gpu,
        Switch,
        Link,
        PowerFeed,
        DesignChange,
        DesignBuild,
    ),
    *(Scenario, Run, RunArray),
)


@pytest.fixture
def owned(scenario):
    """One object of every kind, all of team Alpha."""
    run = Run.objects.create(scenario=scenario, kind="step", status="succeeded")
    RunArray.objects.create(run=run, name="x", dtype="float32", shape=[0], data=b"")
    design = scenario.design
    DesignBuild.objects.create(team=design.team, kind="generate", name="queued", task_id="t-alpha")
    return run


def test_every_team_owned_model_declares_its_team_path():
    declared = set(permissions.TEAM_PATHS)
    assert {m._meta.label_lower for m in MODELS} == declared


def test_members_reach_their_team_objects_and_no_one_else_does(owned, user, outsider, django_user_model):
    from django.contrib.auth.models import AnonymousUser

    root = django_user_model.objects.create_superuser("root", password="pw-root-1234")
    for model in MODELS:
        path = permissions.TEAM_PATHS[model._meta.label_lower]
        alpha = model.objects.filter(**{"name" if model is Team else f"{path}__name": "Alpha"})
        assert alpha.exists(), model
        for action in ACTIONS:
            where = f"{model.__name__} {action}"
            assert set(restrict(model.objects.all(), user, action)) == set(alpha), where
            assert not restrict(alpha, outsider, action).exists(), where
            assert not restrict(alpha, AnonymousUser(), action).exists(), where
            assert restrict(model.objects.all(), root, action).count() == model.objects.count(), where


def test_require_hides_another_teams_object_and_names_a_forbidden_action(
    scenario, user, outsider, monkeypatch
):
    assert require(scenario, user, "change") is scenario
    with pytest.raises(NotFound, match="not found"):
        require(scenario, outsider, "view")
    with pytest.raises(NotFound):
        require(scenario, outsider, "run")  # not Forbidden: that would say the scenario exists
    monkeypatch.setitem(permissions.ROLE_ACTIONS, "viewer", frozenset({"view"}))
    TeamMembership.objects.filter(user=user).update(role="viewer")
    assert allows(scenario, user, "view") and not allows(scenario, user, "run")
    with pytest.raises(Forbidden, match="does not allow 'run'"):
        require(scenario, user, "run")
    with pytest.raises(ValueError, match="action: must be one of"):
        require(scenario, user, "fly")


#: Every URL of a team object, with the object kind its pk names (a new URL must be added here).
OBJECT_URLS = {
    "scenarios:scenario-detail": "scenario",
    "scenarios:scenario-duplicate": "scenario",
    "scenarios:scenario-yaml": "scenario",
    "scenarios:run-start": "scenario",
    "scenarios:design-floor-plan": "design",
    "scenarios:design-panel": "design",
    "scenarios:propose-layout": "design",
    "scenarios:run-detail": "run",
    "scenarios:run-state": "run",
    "scenarios:run-charts": "run",
    "scenarios:run-cancel": "run",
    "scenarios:run-again": "run",
    "scenarios:run-rerun": "run",
    "scenarios:run-scenario-yaml": "run",
    "topology:design-detail": "design",
    "topology:rack-detail": "design+rack",
    "topology:design-edit": "design",
    "topology:design-history": "design",
    "topology:design-fork": "design",
    "topology:design-delete": "design",
    "topology:design-racks": "design",
    "topology:design-feeds": "design",
    "topology:rack-edit": "design+rack",
    "topology:rack-add": "design+rack",
    "topology:rack-remove": "design+rack",
    "topology:feed-edit": "design+feed",
    "topology:build-detail": "build",
    "topology:build-status": "build",
    "scenarios:scenario-delete": "scenario",
    "scenarios:run-delete": "run",
    "scenarios:search-apply": "run",
    "scenarios:run-kind-data": "run",
    "scenarios:run-array": "run+array",
    "scenarios:design-export": "design",
    "scenarios:design-version-runs": "design",
}


def test_the_list_of_object_urls_is_complete():
    resolver = get_resolver()
    found = set()
    for namespace in ("scenarios", "topology"):
        inner = resolver.namespace_dict[namespace][1]
        for name in inner.reverse_dict:
            if isinstance(name, str) and inner.reverse_dict.getlist(name)[0][0][0][1]:
                found.add(f"{namespace}:{name}")
    assert found == set(OBJECT_URLS), "add the new URL to OBJECT_URLS and to the permission test"


def test_every_door_of_another_teams_object_is_not_found(client, owned, design, outsider):
    rack = Rack.objects.filter(hall__design=design).first()
    feed = PowerFeed.objects.filter(design=design).first()
    build = DesignBuild.objects.get(team=design.team)
    objects = {"scenario": owned.scenario.pk, "run": owned.pk, "design": design.pk, "build": build.pk}
    client.force_login(outsider)
    for name, kind in OBJECT_URLS.items():
        parts = {
            "design+rack": [design.pk, rack.pk],
            "design+feed": [design.pk, feed.pk],
            "run+array": [owned.pk, "x"],
        }
        args = parts.get(kind) or [objects[kind]]
        url = reverse(name, args=args)
        assert client.get(url).status_code in (404, 405), url
        assert client.post(url, {"kind": "step"}).status_code == 404, url
    assert client.get(reverse("scenarios:compare") + f"?runs={owned.pk}").status_code == 404
    assert client.get(reverse("scenarios:scenario-new") + f"?design={design.pk}").status_code == 404
    owned.refresh_from_db()
    assert owned.status == "succeeded" and Scenario.objects.count() == 1 and Run.objects.count() == 1
    assert Design.objects.get(pk=design.pk).version == 1 and Rack.objects.filter(pk=rack.pk).exists()


def test_ids_too_large_for_a_key_are_not_found_not_an_error(client, user, scenario):
    client.force_login(user)
    huge = "9" * 20
    for url in (f"/runs/{huge}/", f"/scenarios/{huge}/", f"/designs/{huge}/", f"/compare/?runs={huge}"):
        assert client.get(url).status_code == 404, url
    assert client.get(f"/scenarios/new/?design={huge}").status_code == 404
