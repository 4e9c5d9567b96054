"""The API's permission matrix: every principal (each role of ``teams.permissions.ROLE_ACTIONS``,
a member of another team, a staff user outside the team, a superuser, anonymous) against every
endpoint of the schema, on one object of each kind (design, scenario, run, team, catalog).

The expected answer of each cell comes from ``ROLE_ACTIONS`` alone, so the test follows the
roles as they change: a role without ``view`` finds nothing (404 for an object in the path, 400
"not found" for an id in the body), a role with ``view`` but not the action gets 403, a role
with it succeeds. Another team's object answers exactly like a missing one (no existence leak),
and lists hold only what the principal may view. Every request runs in a transaction that is
rolled back, so each cell sees the same world.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from django.db import transaction

from scenarios.models import Run, RunArray, Scenario
from scenarios.provenance import RunInputs
from scenarios.scenario_file import scenario_to_dict
from scenarios.storage import array_to_bytes
from teams.models import Team, TeamMembership
from teams.permissions import ACTIONS, CHANGE, MANAGE, ROLE_ACTIONS, RUN, VIEW, restrict
from tests.api.conftest import role_granting, set_role, token_client
from topology.models import Design, Rack

MISSING_ID = 987654321
OK = "ok"
SCENARIO_YAML = (
    "version: 1\nname: matrix\ncluster: {generator: rail-optimized, server: dgx-h100, nodes: 4}\n"
    "job:\n  model: {layers: 24, hidden: 2048, heads: 16, vocab: 51200, seq_len: 2048}\n"
    "  global_batch: 64\n  micro_batch: 2\n  parallel: {tp: 8, pp: 1, dp: 4}\n"
)


@dataclass(frozen=True)
class Endpoint:
    """One operation of the schema and what it asks of the principal.

    ``kind`` is the object it acts on (``None``: nothing in particular, e.g. a list),
    ``action`` the action it needs on it, ``ref`` where the object is named (``path`` or
    ``body``); ``request(world, object_id)`` gives (url, body, content type).
    """

    method: str
    path: str
    kind: str | None
    action: str
    ref: str = "path"
    list_model: Any = None

    def request(self, world: dict, object_id: int | None = None):
        return REQUESTS[(self.method, self.path)](world, object_id)


def _design_yaml(world, _):
    text = "version: 1\nname: imported\ncluster: {generator: rail-optimized, server: dgx-h100, nodes: 4}\n"
    return f"/api/designs/import/?team={world['team'] if _ is None else _}", text.encode(), "application/yaml"


def _json(url, body=None):
    return url, body, "application/json"


REQUESTS = {
    ("GET", "/api/designs/"): lambda w, _: _json("/api/designs/"),
    ("POST", "/api/designs/"): lambda w, i: _json(
        "/api/designs/",
        {
            "team": i or w["team"],
            "name": "generated",
            "generator": "rail-optimized",
            "params": {"server": "dgx-h100", "nodes": 4},
        },
    ),
    ("GET", "/api/designs/{id}/"): lambda w, i: _json(f"/api/designs/{i or w['design']}/"),
    ("PATCH", "/api/designs/{id}/"): lambda w, i: _json(
        f"/api/designs/{i or w['design']}/", {"version": w["version"], "name": "renamed"}
    ),
    ("DELETE", "/api/designs/{id}/"): lambda w, i: _json(f"/api/designs/{i or w['design']}/"),
    ("POST", "/api/designs/{id}/fork/"): lambda w, i: _json(
        f"/api/designs/{i or w['design']}/fork/", {"team": w["team"], "name": "forked"}
    ),
    ("GET", "/api/designs/{id}/racks/"): lambda w, i: _json(f"/api/designs/{i or w['design']}/racks/"),
    ("PATCH", "/api/designs/{id}/racks/{rack}/"): lambda w, i: _json(
        f"/api/designs/{i or w['design']}/racks/{w['rack']}/", {"version": w["version"], "name": "r-renamed"}
    ),
    ("GET", "/api/designs/{id}/yaml/"): lambda w, i: _json(f"/api/designs/{i or w['design']}/yaml/"),
    ("POST", "/api/designs/import/"): _design_yaml,
    ("GET", "/api/scenarios/"): lambda w, _: _json("/api/scenarios/"),
    ("POST", "/api/scenarios/"): lambda w, i: _json(
        "/api/scenarios/", {"design": i or w["design"], "name": "new", "job": w["job"]}
    ),
    ("GET", "/api/scenarios/{id}/"): lambda w, i: _json(f"/api/scenarios/{i or w['scenario']}/"),
    ("PATCH", "/api/scenarios/{id}/"): lambda w, i: _json(
        f"/api/scenarios/{i or w['scenario']}/", {"name": "x"}
    ),
    ("DELETE", "/api/scenarios/{id}/"): lambda w, i: _json(f"/api/scenarios/{i or w['scenario']}/"),
    ("GET", "/api/scenarios/{id}/yaml/"): lambda w, i: _json(f"/api/scenarios/{i or w['scenario']}/yaml/"),
    ("POST", "/api/scenarios/import/"): lambda w, i: (
        f"/api/scenarios/import/?design={i or w['design']}",
        SCENARIO_YAML.encode(),
        "application/yaml",
    ),
    ("GET", "/api/kinds/"): lambda w, _: _json("/api/kinds/"),
    ("GET", "/api/runs/"): lambda w, _: _json("/api/runs/"),
    ("POST", "/api/runs/"): lambda w, i: _json(
        "/api/runs/", {"scenario": i or w["scenario"], "kind": "step"}
    ),
    ("GET", "/api/runs/{id}/"): lambda w, i: _json(f"/api/runs/{i or w['run']}/"),
    ("DELETE", "/api/runs/{id}/"): lambda w, i: _json(f"/api/runs/{i or w['run']}/"),
    ("POST", "/api/runs/{id}/cancel/"): lambda w, i: _json(f"/api/runs/{i or w['run']}/cancel/"),
    ("POST", "/api/runs/{id}/rerun/"): lambda w, i: _json(f"/api/runs/{i or w['run']}/rerun/"),
    ("GET", "/api/runs/{id}/results/"): lambda w, i: _json(f"/api/runs/{i or w['run']}/results/"),
    ("GET", "/api/runs/{id}/arrays/{name}/"): lambda w, i: _json(f"/api/runs/{i or w['run']}/arrays/values/"),
    ("GET", "/api/catalog/"): lambda w, _: _json("/api/catalog/"),
    ("GET", "/api/catalog/{kind}/"): lambda w, _: _json("/api/catalog/gpus/"),
    ("POST", "/api/catalog/{kind}/"): lambda w, _: _json("/api/catalog/gpus/", w["new_gpu"]),
    ("GET", "/api/catalog/{kind}/{slug}/"): lambda w, _: _json("/api/catalog/gpus/h100-sxm/"),
    ("PATCH", "/api/catalog/{kind}/{slug}/"): lambda w, _: _json(
        "/api/catalog/gpus/h100-sxm/", {"tdp_w": 701.0}
    ),
    ("GET", "/api/teams/"): lambda w, _: _json("/api/teams/"),
    ("GET", "/api/teams/{id}/"): lambda w, i: _json(f"/api/teams/{i or w['team']}/"),
    ("GET", "/api/teams/{id}/members/"): lambda w, i: _json(f"/api/teams/{i or w['team']}/members/"),
    ("POST", "/api/teams/{id}/members/"): lambda w, i: _json(
        f"/api/teams/{i or w['team']}/members/", {"username": "dave", "role": w["lowest_role"]}
    ),
    ("PATCH", "/api/teams/{id}/members/{member}/"): lambda w, i: _json(
        f"/api/teams/{i or w['team']}/members/{w['member']}/", {"role": w["lowest_role"]}
    ),
    ("DELETE", "/api/teams/{id}/members/{member}/"): lambda w, i: _json(
        f"/api/teams/{i or w['team']}/members/{w['member']}/"
    ),
    ("GET", "/api/account/tokens/"): lambda w, _: _json("/api/account/tokens/"),
    ("POST", "/api/account/tokens/"): lambda w, _: _json("/api/account/tokens/"),
    # the newest token is the one this cell's client was just given (token_client): its own
    ("DELETE", "/api/account/tokens/{token_key}/"): lambda w, _: _json(
        f"/api/account/tokens/{_newest_token()}/"
    ),
    ("POST", "/api/account/tokens/revoke-all/"): lambda w, _: _json("/api/account/tokens/revoke-all/"),
}


def _newest_token() -> str:
    from knox.models import AuthToken

    newest = AuthToken.objects.order_by("-created").first()
    return newest.token_key if newest else "none"


ENDPOINTS = [
    Endpoint("GET", "/api/designs/", None, VIEW, list_model=Design),
    Endpoint("POST", "/api/designs/", "team", CHANGE, ref="body"),
    Endpoint("GET", "/api/designs/{id}/", "design", VIEW),
    Endpoint("PATCH", "/api/designs/{id}/", "design", CHANGE),
    Endpoint("DELETE", "/api/designs/{id}/", "design", MANAGE),
    Endpoint("POST", "/api/designs/{id}/fork/", "design", CHANGE),  # view it, change the target team
    Endpoint("GET", "/api/designs/{id}/racks/", "design", VIEW),
    Endpoint("PATCH", "/api/designs/{id}/racks/{rack}/", "design", CHANGE),
    Endpoint("GET", "/api/designs/{id}/yaml/", "design", VIEW),
    Endpoint("POST", "/api/designs/import/", "team", CHANGE, ref="body"),
    Endpoint("GET", "/api/scenarios/", None, VIEW, list_model=Scenario),
    Endpoint("POST", "/api/scenarios/", "design", CHANGE, ref="body"),
    Endpoint("GET", "/api/scenarios/{id}/", "scenario", VIEW),
    Endpoint("PATCH", "/api/scenarios/{id}/", "scenario", CHANGE),
    Endpoint("DELETE", "/api/scenarios/{id}/", "scenario", CHANGE),
    Endpoint("GET", "/api/scenarios/{id}/yaml/", "scenario", VIEW),
    Endpoint("POST", "/api/scenarios/import/", "design", CHANGE, ref="body"),
    Endpoint("GET", "/api/kinds/", None, VIEW),
    Endpoint("GET", "/api/runs/", None, VIEW, list_model=Run),
    Endpoint("POST", "/api/runs/", "scenario", RUN, ref="body"),
    Endpoint("GET", "/api/runs/{id}/", "run", VIEW),
    Endpoint("DELETE", "/api/runs/{id}/", "run", CHANGE),
    Endpoint("POST", "/api/runs/{id}/cancel/", "run", RUN),
    Endpoint("POST", "/api/runs/{id}/rerun/", "run", RUN),
    Endpoint("GET", "/api/runs/{id}/results/", "run", VIEW),
    Endpoint("GET", "/api/runs/{id}/arrays/{name}/", "run", VIEW),
    Endpoint("GET", "/api/catalog/", "catalog", VIEW),
    Endpoint("GET", "/api/catalog/{kind}/", "catalog", VIEW),
    Endpoint("POST", "/api/catalog/{kind}/", "catalog", CHANGE),
    Endpoint("GET", "/api/catalog/{kind}/{slug}/", "catalog", VIEW),
    Endpoint("PATCH", "/api/catalog/{kind}/{slug}/", "catalog", CHANGE),
    Endpoint("GET", "/api/teams/", None, VIEW, list_model=Team),
    Endpoint("GET", "/api/teams/{id}/", "team", VIEW),
    Endpoint("GET", "/api/teams/{id}/members/", "team", VIEW),
    Endpoint("POST", "/api/teams/{id}/members/", "team", MANAGE),
    Endpoint("PATCH", "/api/teams/{id}/members/{member}/", "team", MANAGE),
    Endpoint("DELETE", "/api/teams/{id}/members/{member}/", "team", MANAGE),
    # a user's own tokens: anyone logged in, never another user's (tests/teams/test_api_tokens.py)
    Endpoint("GET", "/api/account/tokens/", None, VIEW),
    Endpoint("POST", "/api/account/tokens/", None, VIEW),
    Endpoint("DELETE", "/api/account/tokens/{token_key}/", None, VIEW),
    Endpoint("POST", "/api/account/tokens/revoke-all/", None, VIEW),
]

#: Principals besides the roles: who they are and the actions they hold on team Alpha's objects.
OTHERS = ("outsider", "staff", "superuser", "anonymous")
PRINCIPALS = [*(f"role:{r}" for r in ROLE_ACTIONS), *OTHERS]


def expected(principal: str, endpoint: Endpoint) -> str | int:
    """What the matrix allows: ``OK`` (2xx), or the error status."""
    if principal == "anonymous":
        return 401
    if principal == "superuser":
        return OK
    if endpoint.kind is None:
        return OK
    if endpoint.kind == "catalog":
        return OK if endpoint.action == VIEW or principal == "staff" else 403
    granted = ROLE_ACTIONS[principal.removeprefix("role:")] if principal.startswith("role:") else frozenset()
    if VIEW not in granted:
        return 400 if endpoint.ref == "body" else 404
    return OK if endpoint.action in granted else 403


def test_the_matrix_covers_every_operation_of_the_schema():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = {
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }
    covered = {(e.method, e.path) for e in ENDPOINTS}
    assert operations == covered, {"not in the matrix": operations - covered, "gone": covered - operations}
    assert set(REQUESTS) == covered


@pytest.fixture
def world(catalog_db, design, scenario, user, team, outsider, django_user_model):
    """Team Alpha's design, scenario, finished run with an array, and one user per principal."""
    from topology.selectors import catalog_load

    document = scenario_to_dict(scenario=scenario)
    inputs = RunInputs.build(document, design_version=design.version, catalog=catalog_load()).to_json()
    run = Run.objects.create(scenario=scenario, kind="step", status="succeeded", progress=1.0, inputs=inputs)
    data, dtype, shape = array_to_bytes(np.arange(5, dtype=np.float32))
    RunArray.objects.create(run=run, name="values", dtype=dtype, shape=shape, data=data)
    set_role(outsider, Team.objects.get(name="Beta"), role_granting(*ACTIONS))
    lowest = min(ROLE_ACTIONS, key=lambda r: len(ROLE_ACTIONS[r]))
    users = {"outsider": outsider}
    for role in ROLE_ACTIONS:
        member = django_user_model.objects.create_user(f"m-{role}")
        set_role(member, team, role)
        users[f"role:{role}"] = member
    users["staff"] = django_user_model.objects.create_user("staff", is_staff=True)
    users["superuser"] = django_user_model.objects.create_superuser("root", password=None)
    users["anonymous"] = None
    carol = django_user_model.objects.create_user("carol")
    set_role(carol, team, lowest)
    django_user_model.objects.create_user("dave")
    from topology.selectors import catalog_load

    new_gpu = {**catalog_load().to_dict()["gpus"][0], "slug": "matrix-gpu", "name": "Matrix GPU"}
    design.refresh_from_db()
    return {
        "users": users,
        "design": design.pk,
        "version": design.version,
        "rack": Rack.objects.filter(hall__design=design).order_by("pk").first().pk,
        "scenario": scenario.pk,
        "run": run.pk,
        "team": team.pk,
        "member": TeamMembership.objects.get(user=carol).pk,
        "lowest_role": lowest,
        "job": scenario.job,
        "new_gpu": new_gpu,
    }


def _call(client, endpoint: Endpoint, world: dict, object_id: int | None = None):
    url, body, content_type = endpoint.request(world, object_id)
    with transaction.atomic():
        if body is None:
            response = client.generic(endpoint.method, url)
        elif isinstance(body, bytes):
            response = client.generic(endpoint.method, url, body, content_type=content_type)
        else:
            response = client.generic(endpoint.method, url, _dumps(body), content_type=content_type)
        transaction.set_rollback(True)
    return response


def _dumps(body) -> str:
    import json

    return json.dumps(body)


def _outcome(response) -> str | int:
    return OK if 200 <= response.status_code < 300 else response.status_code


def _check_cell(world: dict, endpoint: Endpoint, principal: str) -> str | None:
    """What is wrong with one cell of the matrix, or None."""
    user = world["users"][principal]
    client = token_client(user)
    response = _call(client, endpoint, world)
    want, got = expected(principal, endpoint), _outcome(response)
    where = f"{endpoint.method} {endpoint.path} as {principal}"
    if want != got:
        return f"{where}: expected {want}, got {got} {response.content[:160]!r}"
    if got != OK and set(response.json()) != {"errors"}:
        return f"{where}: error not in the API's shape: {response.content[:160]!r}"
    if want in (404, 400):
        # Another team's object reads exactly like one that does not exist.
        missing = _call(client, endpoint, world, MISSING_ID)
        hidden = response.content.decode().replace(str(world[endpoint.kind]), "<id>")
        absent = missing.content.decode().replace(str(MISSING_ID), "<id>")
        if (missing.status_code, absent) != (response.status_code, hidden):
            return f"{where}: leaks existence: {hidden[:160]} vs a missing id's {absent[:160]}"
    if endpoint.list_model is not None and got == OK and user is not None:
        ids = {row["id"] for row in response.json()["results"]}
        allowed = set(restrict(endpoint.list_model.objects.all(), user, VIEW).values_list("pk", flat=True))
        if not ids <= allowed:
            return f"{where}: lists {sorted(ids - allowed)}, which it may not view"
    return None


@pytest.mark.slow
def test_every_principal_gets_exactly_what_its_column_allows(world):
    wrong = [
        problem
        for endpoint in ENDPOINTS
        for principal in PRINCIPALS
        if (problem := _check_cell(world, endpoint, principal)) is not None
    ]
    assert not wrong, f"{len(wrong)} cells of {len(ENDPOINTS) * len(PRINCIPALS)} wrong:\n" + "\n".join(wrong)


def test_the_matrix_has_a_cell_of_every_kind():
    """The expectations exercise every answer: success, 401, 403, 404 and 400 (an id in a body)."""
    outcomes = {expected(p, e) for p in PRINCIPALS for e in ENDPOINTS}
    assert outcomes >= {OK, 401, 404, 400}
    assert 403 in outcomes or all(len(a) == len(ACTIONS) for a in ROLE_ACTIONS.values())
