"""The permission matrix: roles (viewer, editor, admin, outsider, anonymous) x object kinds
(design, rack, feed, build, scenario, run, team) x actions (view, change, run, manage) x doors
(every HTTP page and form of the design, team and scenario apps, and the run and design
sockets).

Each door declares the action it needs; a role whose column grants it gets through, one that
does not gets a 403 (or its form refused) and changes nothing, another team's member gets a 404
and changes nothing, and an anonymous visitor is sent to the login page. A URL missing from the
table fails the completeness test. The API's column lives in the API's own tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
from django.urls import get_resolver, reverse

from scenarios.models import Run, RunArray, Scenario
from scenarios.storage import array_to_bytes
from teams import permissions
from teams.models import Team, TeamMembership
from topology.models import Design, DesignBuild, PowerFeed, Rack

pytestmark = pytest.mark.slow

ROLES = ("viewer", "editor", "admin", "outsider", "anonymous")
#: The columns this suite holds the permission module to (and checks ROLE_ACTIONS against).
COLUMNS = {
    "viewer": {"view"},
    "editor": {"view", "change", "run"},
    "admin": {"view", "change", "run", "manage"},
}
ALPHA_DESIGN = "Alpha secret design"
ALPHA_SCENARIO = "alpha-secret-scenario"


@dataclass
class World:
    design: Design
    rack: Rack
    feed: PowerFeed
    scenario: Scenario
    run: Run
    build: DesignBuild
    team: Team
    extra: TeamMembership  # a viewer the team doors act on
    users: dict = field(default_factory=dict)


@pytest.fixture
def world(catalog_db, django_user_model, job):
    from scenarios.services import scenario_create
    from teams.services import team_create
    from tests.scenarios.conftest import make_design

    # No passwords: the doors are driven with force_login, and hashing one costs most of a second.
    users = {name: django_user_model.objects.create_user(name) for name in ROLES[:4]}
    alpha = team_create(name="Alpha", users=[users["admin"]])
    for role in ("viewer", "editor"):
        TeamMembership.objects.create(team=alpha, user=users[role], role=role)
    extra = TeamMembership.objects.create(
        team=alpha, user=django_user_model.objects.create_user("extra"), role="viewer"
    )
    team_create(name="Beta", users=[users["outsider"]])
    # Two racks of servers, so that one can be removed.
    design = make_design(team=alpha, user=users["admin"], name=ALPHA_DESIGN, nodes=8)
    job["parallel"]["dp"] = 8
    scenario = scenario_create(design=design, name=ALPHA_SCENARIO, job=job, what_if={}, user=users["admin"])
    from scenarios.provenance import RunInputs
    from scenarios.scenario_file import scenario_to_dict
    from topology.selectors import catalog_load

    inputs = RunInputs.build(scenario_to_dict(scenario=scenario), design_version=1, catalog=catalog_load())
    run = Run.objects.create(
        scenario=scenario, kind="step", status="succeeded", design_version=1, inputs=inputs.to_json()
    )
    data, dtype, shape = array_to_bytes(np.arange(4, dtype=np.float32))
    RunArray.objects.create(run=run, name="x", dtype=dtype, shape=shape, data=data)
    build = DesignBuild.objects.create(
        team=alpha, user=users["admin"], kind="generate", name="b", task_id="t1"
    )
    return World(
        design=design,
        rack=Rack.objects.filter(hall__design=design, nodes__isnull=False).distinct().first(),
        feed=PowerFeed.objects.filter(design=design).first(),
        scenario=scenario,
        run=run,
        build=build,
        team=alpha,
        extra=extra,
        users=users,
    )


def fingerprint(w: World) -> tuple:
    """Everything a door could change, to prove a refused request changed nothing."""
    design = Design.objects.filter(pk=w.design.pk).values_list("version", "name", "description").first()
    rack = Rack.objects.filter(pk=w.rack.pk).values_list("power_budget_kw", "name").first()
    feed = PowerFeed.objects.filter(pk=w.feed.pk).values_list("panel", "feed_type", "name").first()
    run = Run.objects.filter(pk=w.run.pk).values_list("status", flat=True).first()
    return (
        design,
        rack,
        feed,
        run,
        Design.objects.count(),
        Rack.objects.count(),
        Scenario.objects.count(),
        Run.objects.count(),
        DesignBuild.objects.count(),
        Team.objects.count(),
        sorted(TeamMembership.objects.values_list("team", "user", "role")),
    )


def _generator_data(w: World, **extra) -> dict:
    return {
        "generator": "rail-optimized",
        "server": "dgx-h100",
        "nodes": "4",
        "oversubscription": "1",
        **extra,
    }


@dataclass(frozen=True)
class Door:
    """One HTTP door: its URL name, method, what its pk names, and the action it needs (None:
    any logged-in user, on their own teams only)."""

    name: str
    method: str
    kind: str | None
    action: str | None
    data: Callable[[World], dict] = lambda w: {}
    query: Callable[[World], str] = lambda w: ""
    #: What a role lacking the action gets: "forbidden" (403) or "refused" (the form says no, 400).
    denied: str = "forbidden"
    #: What another team's member gets on a door without an object: "ok" or "refused".
    outsider: str = "ok"
    ok: tuple[int, ...] = (200,)

    @property
    def id(self) -> str:
        return f"{self.name}-{self.method}"

    def url(self, w: World) -> str:
        args = {
            None: [],
            "design": [w.design.pk],
            "rack": [w.design.pk, w.rack.pk],
            "feed": [w.design.pk, w.feed.pk],
            "build": [w.build.pk],
            "scenario": [w.scenario.pk],
            "run": [w.run.pk],
            "run+array": [w.run.pk, "x"],
            "team": [w.team.pk],
            "member": [w.team.pk, w.extra.pk],
        }[self.kind]
        return reverse(self.name, args=args) + self.query(w)


def _scenario_text(w: World) -> str:
    from scenarios.services import scenario_to_yaml

    return scenario_to_yaml(scenario=w.scenario).replace(ALPHA_SCENARIO, "imported")


def _version(w: World) -> dict:
    return {"version": str(Design.objects.get(pk=w.design.pk).version)}


POSTED = (200, 302)
DOORS = [
    # designs
    Door("topology:design-list", "get", None, None),
    Door("topology:design-new", "get", None, None),
    Door(
        "topology:design-new",
        "post",
        None,
        "change",
        data=lambda w: _generator_data(w, name="Fresh", team=str(w.team.pk)),
        denied="forbidden",  # a viewer who may create in no team is told why, not shown a form
        outsider="refused",
        ok=(302,),
    ),
    Door(
        "topology:design-preview",
        "get",
        None,
        None,
        query=lambda w: "?generator=rail-optimized&server=dgx-h100&nodes=4",
    ),
    Door("topology:build-detail", "get", "build", "view"),
    Door("topology:build-status", "get", "build", "view"),
    Door("topology:design-detail", "get", "design", "view"),
    Door("topology:design-edit", "get", "design", "change"),
    Door(
        "topology:design-edit",
        "post",
        "design",
        "change",
        data=lambda w: {"name": "Renamed", "description": "d", **_version(w)},
        ok=(302,),
    ),
    Door("topology:design-history", "get", "design", "view"),
    Door("topology:design-fork", "get", "design", "view"),
    Door(
        "topology:design-fork",
        "post",
        "design",
        "change",
        data=lambda w: {"team": str(w.team.pk), "name": "Forked"},
        denied="refused",
        ok=(302,),
    ),
    Door("topology:design-delete", "get", "design", "manage"),
    Door("topology:design-delete", "post", "design", "manage", ok=(302,)),
    Door("topology:design-racks", "get", "design", "view"),
    Door("topology:rack-detail", "get", "rack", "view"),
    Door("topology:rack-edit", "get", "rack", "change"),
    Door(
        "topology:rack-edit",
        "post",
        "rack",
        "change",
        data=lambda w: {"name": w.rack.name, "power_budget_kw": "1.5", **_version(w)},
        ok=(302,),
    ),
    Door("topology:rack-add", "post", "rack", "change", data=_version, ok=(302,)),
    Door("topology:rack-remove", "get", "rack", "change"),
    Door("topology:rack-remove", "post", "rack", "change", data=_version, ok=(302,)),
    Door("topology:design-feeds", "get", "design", "view"),
    Door("topology:feed-edit", "get", "feed", "change"),
    Door(
        "topology:feed-edit",
        "post",
        "feed",
        "change",
        data=lambda w: {
            "name": w.feed.name,
            "panel": "__new__",  # the explicit "New panel…" choice (a typed name is refused)
            "new_panel": "PANEL-X",
            "feed_type": str(w.feed.feed_type_id),
            **_version(w),
        },
        ok=(302,),
    ),
    # scenarios and runs (scenarios/views/)
    Door("scenarios:scenario-list", "get", None, None),
    Door("scenarios:scenario-new", "get", None, None),
    Door(
        "scenarios:scenario-new",
        "get",
        None,
        "change",
        query=lambda w: f"?design={w.design.pk}",
        outsider="missing",
    ),
    Door("scenarios:scenario-import", "get", None, None),
    Door(
        "scenarios:scenario-import",
        "post",
        None,
        "change",
        data=lambda w: {"design": str(w.design.pk), "text": _scenario_text(w)},
        denied="refused",
        outsider="refused",
        ok=(302,),
    ),
    Door("scenarios:scenario-detail", "get", "scenario", "view"),
    Door(
        "scenarios:scenario-detail",
        "post",
        "scenario",
        "change",
        data=lambda w: {"name": "x"},
        ok=(200, 302, 400),
    ),
    Door("scenarios:scenario-duplicate", "post", "scenario", "change", ok=(302,)),
    Door("scenarios:scenario-yaml", "get", "scenario", "view"),
    Door("scenarios:run-start", "post", "scenario", "run", data=lambda w: {"kind": "nope"}, ok=(302,)),
    Door("scenarios:scenario-delete", "get", "scenario", "change"),
    Door("scenarios:scenario-delete", "post", "scenario", "change", ok=(302,)),
    Door("scenarios:design-floor-plan", "get", "design", "view"),
    Door("scenarios:design-panel", "get", "design", "view"),
    Door("scenarios:propose-layout", "get", "design", "view"),
    Door("scenarios:design-export", "get", "design", "view"),
    Door("scenarios:design-version-runs", "get", "design", "view"),
    Door("scenarios:design-import", "get", None, None),
    Door(
        "scenarios:design-import",
        "post",
        None,
        "change",
        data=lambda w: {
            "team": str(w.team.pk),
            "text": "version: 1\nname: imported\n"
            "cluster: {generator: rail-optimized, server: dgx-h100, nodes: 4}\n",
        },
        denied="refused",
        outsider="refused",
        ok=(302,),
    ),
    Door("scenarios:run-detail", "get", "run", "view"),
    Door("scenarios:run-state", "get", "run", "view"),
    Door("scenarios:run-charts", "get", "run", "view"),
    Door("scenarios:run-kind-data", "get", "run", "view"),
    Door("scenarios:run-array", "get", "run+array", "view"),
    Door("scenarios:run-cancel", "post", "run", "run", ok=(302,)),
    Door("scenarios:run-rerun", "post", "run", "run", ok=(302,)),
    Door("scenarios:run-again", "post", "run", "run", ok=(302,)),
    Door("scenarios:run-scenario-yaml", "get", "run", "view"),
    Door("scenarios:run-delete", "get", "run", "change"),
    Door("scenarios:run-delete", "post", "run", "change", ok=(302,)),
    Door("scenarios:search-apply", "post", "run", "change", data=lambda w: {"layout": "0"}, ok=(302,)),
    Door("scenarios:compare", "get", None, "view", query=lambda w: f"?runs={w.run.pk}", outsider="missing"),
    # teams
    Door("teams:list", "get", None, None),
    Door("teams:list", "post", None, None, data=lambda w: {"name": "Gamma"}, ok=(302,)),
    Door(
        "teams:switch",
        "post",
        None,
        "view",
        data=lambda w: {"team": str(w.team.pk)},
        outsider="missing",
        ok=(302,),
    ),
    Door("teams:detail", "get", "team", "view"),
    Door(
        "teams:invite",
        "post",
        "team",
        "manage",
        data=lambda w: {"username": "outsider", "role": "editor"},
        ok=(302,),
    ),
    Door(
        "teams:member-role",
        "post",
        "member",
        "manage",
        data=lambda w: {f"m{w.extra.pk}-role": "editor"},
        ok=(302,),
    ),
    Door("teams:member-remove", "post", "member", "manage", ok=(302,)),
]
#: Doors that are not the design/team/scenario apps' (the API's own tests cover the API).
NOT_HERE = {"login", "logout", "account", "logout-everywhere"}


def test_the_columns_are_the_permission_modules_roles():
    assert {role: set(actions) for role, actions in permissions.ROLE_ACTIONS.items()} == COLUMNS


def test_the_matrix_lists_every_door():
    resolver = get_resolver()
    found = set()
    for namespace in ("topology", "scenarios", "teams"):
        inner = resolver.namespace_dict[namespace][1]
        found |= {f"{namespace}:{n}" for n in inner.reverse_dict if isinstance(n, str)}
    found |= {n for n in resolver.reverse_dict if isinstance(n, str)} - NOT_HERE
    assert found == {d.name for d in DOORS}, "add the door to DOORS with the action it needs"


def expected(door: Door, role: str) -> str:
    if role == "anonymous":
        return "login"
    if role == "outsider":
        return "missing" if door.kind is not None else door.outsider
    if door.action is None or door.action in COLUMNS[role]:
        return "ok"
    return door.denied


def outcome(door: Door, response) -> str:
    code = response.status_code
    if code == 302 and response["Location"].startswith(reverse("login")):
        return "login"
    if code == 404:
        return "missing"
    if code == 403:
        return "forbidden"
    if code in door.ok:
        return "ok"
    if code == 400:
        return "refused"
    return f"status {code}"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("door", DOORS, ids=lambda d: d.id)
def test_door(client, world, door, role):
    if role != "anonymous":
        client.force_login(world.users[role])
    before = fingerprint(world)
    url = door.url(world)
    send = client.get if door.method == "get" else client.post
    response = send(url, door.data(world)) if door.method == "post" else send(url)
    want, got = expected(door, role), outcome(door, response)
    assert got == want, f"{role} {door.method.upper()} {url}: expected {want}, got {got}"
    if want != "ok":
        assert fingerprint(world) == before, f"{role} {door.method.upper()} {url} changed something"
    if role == "outsider" and response.status_code == 200:
        text = response.content.decode()
        assert ALPHA_DESIGN not in text and ALPHA_SCENARIO not in text, f"{url} leaks team Alpha's objects"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("what", ["run", "design"])
@pytest.mark.django_db(transaction=True)
def test_socket(world, role, what):
    """The run and design streams accept the team's members and look missing to everyone else."""
    from asgiref.sync import async_to_sync
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator
    from django.contrib.auth.models import AnonymousUser
    from django.db import connections

    from scenarios.routing import websocket_urlpatterns

    pk = world.run.pk if what == "run" else world.design.pk
    user = AnonymousUser() if role == "anonymous" else world.users[role]

    async def connect():
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/{what}s/{pk}/")
        comm.scope["user"] = user
        connected, code = await comm.connect(timeout=10)
        first = await comm.receive_json_from(timeout=10) if connected else None
        await comm.disconnect()
        return connected, code, first

    try:
        connected, code, first = async_to_sync(connect)()
    finally:
        async_to_sync(_close_connections)(connections)
    if role in COLUMNS:
        assert connected and first["type"] in ("state", "design_state"), (role, what)
    else:
        assert not connected and code == 4404, (role, what, code)


async def _close_connections(connections) -> None:
    from channels.db import database_sync_to_async

    await database_sync_to_async(connections.close_all)()


def test_lists_show_only_the_current_teams_objects(client, world, django_user_model):
    """A member of two teams sees one team's designs and scenarios at a time and switches."""
    from teams.services import team_create

    both = world.users["editor"]
    team_create(name="Beta", users=[both])
    client.force_login(both)
    assert ALPHA_DESIGN in client.get(reverse("topology:design-list")).content.decode()
    client.post(reverse("teams:switch"), {"team": Team.objects.get(name="Beta").pk})
    for name in (
        "topology:design-list",
        "scenarios:scenario-list",
        "scenarios:scenario-new",
        "scenarios:compare",
    ):
        text = client.get(reverse(name)).content.decode()
        assert ALPHA_DESIGN not in text and ALPHA_SCENARIO not in text, name
    assert client.get(world.design.get_absolute_url()).status_code == 200  # still a member of Alpha


def test_admin_shows_non_superuser_staff_only_their_teams(client, world):
    from django.contrib.auth.models import Permission

    staff = world.users["outsider"]
    staff.is_staff = True
    staff.save()
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="topology"))
    client.force_login(staff)
    listing = client.get(reverse("admin:topology_design_changelist")).content.decode()
    assert ALPHA_DESIGN not in listing
    change = reverse("admin:topology_design_change", args=[world.design.pk])
    assert client.get(change).status_code in (302, 404)  # "doesn't exist" for them
    rack = reverse("admin:topology_rack_change", args=[world.rack.pk])
    before = fingerprint(world)
    client.post(rack, {"name": "hacked", "power_budget_kw": "1"})
    assert fingerprint(world) == before
    viewer = world.users["viewer"]
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.set(Permission.objects.filter(content_type__app_label="topology"))
    client.force_login(viewer)
    page = client.get(reverse("admin:topology_rack_change", args=[world.rack.pk]))
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()  # read only
