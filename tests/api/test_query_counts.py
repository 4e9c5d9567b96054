"""Every API list endpoint answers in a fixed number of queries, whatever the number of rows
(baselines, as NetBox keeps them): a list that grows by a query per row (an N+1) fails here.
Each endpoint is read with one row (or the seed catalog) and again with several more."""

from __future__ import annotations

import copy

import pytest

from tests.api.conftest import token_client

#: Queries of one request: the token with its user (teams.authentication),
#: then the endpoint's own (pages: a count and the page; permission lookups of the user's teams).
BASELINE = {
    "/api/designs/": 3,
    "/api/scenarios/": 3,
    "/api/runs/": 3,
    "/api/kinds/": 1,
    "/api/teams/": 3,
    "/api/teams/{team}/members/": 5,
    "/api/designs/{design}/racks/": 5,
    "/api/catalog/": 6,
    "/api/catalog/gpus/": 6,
    "/api/account/tokens/": 3,
}


def _more_designs(world, count):
    from tests.scenarios.conftest import make_design

    for number in range(count):
        make_design(team=world["team"], user=world["user"], name=f"More {number}")


def _more_scenarios(world, count):
    from scenarios.services import scenario_create

    for number in range(count):
        scenario_create(
            design=world["design"],
            name=f"what-if {number}",
            job=copy.deepcopy(world["job"]),
            what_if={},
            user=world["user"],
        )


def _more_runs(world, count):
    from scenarios.models import Run

    for _ in range(count):
        Run.objects.create(scenario=world["scenario"], kind="step", status="succeeded", progress=1.0)


def _more_teams(world, count):
    from teams.services import team_create

    for number in range(count):
        team_create(name=f"Team {number}", users=[world["user"]])


def _more_members(world, count):
    from django.contrib.auth import get_user_model

    from teams.models import TeamMembership

    for number in range(count):
        member = get_user_model().objects.create_user(f"member-{number}")
        TeamMembership.objects.create(team=world["team"], user=member, role="viewer")


def _more_racks(world, count):
    """A bigger design of the same kind: more racks in the design the URL names."""
    from tests.scenarios.conftest import make_design

    world["design"] = make_design(
        team=world["team"], user=world["user"], name="Bigger", nodes=4 * (count + 1)
    )


def _more_gpus(world, count):
    from topology.selectors import catalog_load

    staff = token_client(world["staff"])
    first = catalog_load().to_dict()["gpus"][0]
    for number in range(count):
        entry = {**first, "slug": f"extra-gpu-{number}", "name": f"Extra GPU {number}"}
        assert staff.post("/api/catalog/gpus/", entry, format="json").status_code == 201


def _more_tokens(world, count):
    from teams.tokens import api_token_create

    for _ in range(count):
        api_token_create(user=world["user"])


GROW = {
    "/api/designs/": _more_designs,
    "/api/scenarios/": _more_scenarios,
    "/api/runs/": _more_runs,
    "/api/kinds/": lambda world, count: None,  # the installed kinds: no rows
    "/api/teams/": _more_teams,
    "/api/teams/{team}/members/": _more_members,
    "/api/designs/{design}/racks/": _more_racks,
    "/api/catalog/": _more_gpus,
    "/api/catalog/gpus/": _more_gpus,
    "/api/account/tokens/": _more_tokens,
}


@pytest.fixture
def world(catalog_db, design, scenario, user, team, job, django_user_model):
    from scenarios.models import Run

    Run.objects.create(scenario=scenario, kind="step", status="succeeded", progress=1.0)
    staff = django_user_model.objects.create_user("staff", is_staff=True)
    return {"design": design, "scenario": scenario, "user": user, "team": team, "job": job, "staff": staff}


def _url(path: str, world) -> str:
    return path.format(team=world["team"].pk, design=world["design"].pk)


def _rows(body) -> int:
    if isinstance(body, dict) and "results" in body:
        return len(body["results"])
    if isinstance(body, dict) and len(body) == 1:
        return len(next(iter(body.values())))
    return len(body) if isinstance(body, list) else sum(len(v) for v in body.values())


@pytest.mark.parametrize("path", list(BASELINE))
def test_list_endpoint_queries_do_not_grow_with_rows(world, path, django_assert_num_queries):
    """The baseline with few rows and with more: a new query per row fails; a new query per
    request means the baseline is updated here, on purpose."""
    api = token_client(world["user"])
    with django_assert_num_queries(BASELINE[path]):
        first = api.get(_url(path, world))
    assert first.status_code == 200, first.content[:300]
    GROW[path](world, 3)
    with django_assert_num_queries(BASELINE[path]):
        second = api.get(_url(path, world))
    assert second.status_code == 200
    assert _rows(second.json()) > _rows(first.json()) or path == "/api/kinds/"
