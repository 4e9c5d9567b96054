"""The designs API: lists with totals and filters, generation (parameter errors by their path),
edits at the version read (409 when it moved), racks, fork, delete, the design file out and in."""

from __future__ import annotations

from tests.api.conftest import errors_of
from topology.models import Design, Rack

GENERATE = {"name": "Generated", "generator": "rail-optimized", "params": {"server": "dgx-h100", "nodes": 4}}


def test_design_list_and_detail_carry_the_totals(api, design, team):
    listed = api.get(f"/api/designs/?team={team.pk}").json()
    assert listed["count"] == 1
    row = listed["results"][0]
    assert row["summary"]["gpus"] == 32 and row["version"] == design.version and row["team"] == team.pk
    detail = api.get(f"/api/designs/{design.pk}/").json()
    assert detail["counts"]["gpus"] == 32 and detail["counts"]["servers"] == 4
    assert api.get("/api/designs/?generator=nvl72").json()["count"] == 0


def test_design_generate_and_its_errors_by_parameter_path(api, catalog_db, team):
    response = api.post("/api/designs/", {**GENERATE, "team": team.pk}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["summary"]["gpus"] == 32
    bad = {**GENERATE, "name": "Bad", "team": team.pk, "params": {"server": "dgx-h100", "nodes": 0}}
    errors = errors_of(api.post("/api/designs/", bad, format="json"))
    assert list(errors) == ["params.nodes"] and errors["params.nodes"][0].startswith(
        "params.nodes: must be ≥ 1"
    )


def test_design_update_needs_the_version_read(api, design):
    version = design.version
    response = api.patch(f"/api/designs/{design.pk}/", {"version": version, "name": "Renamed"}, format="json")
    assert response.status_code == 200 and response.json()["name"] == "Renamed"
    assert response.json()["version"] == version + 1
    stale = api.patch(f"/api/designs/{design.pk}/", {"version": version, "name": "Again"}, format="json")
    assert stale.status_code == 409
    assert list(errors_of(stale)) == ["version"]
    assert errors_of(api.patch(f"/api/designs/{design.pk}/", {"name": "x"}, format="json"))["version"]


def test_rack_update_at_the_design_version(api, design):
    rack = Rack.objects.filter(hall__design=design).order_by("pk").first()
    racks = api.get(f"/api/designs/{design.pk}/racks/").json()
    assert racks["results"][0]["id"] == rack.pk
    url = f"/api/designs/{design.pk}/racks/{rack.pk}/"
    response = api.patch(url, {"version": design.version, "name": "R-renamed"}, format="json")
    assert response.status_code == 200 and response.json()["name"] == "R-renamed"
    assert api.patch(url, {"version": design.version, "name": "late"}, format="json").status_code == 409


def test_design_fork_and_delete(api, design, team):
    response = api.post(f"/api/designs/{design.pk}/fork/", {"team": team.pk, "name": "Copy"}, format="json")
    assert response.status_code == 201, response.content
    copy = response.json()
    assert copy["name"] == "Copy" and copy["summary"]["gpus"] == 32
    assert api.delete(f"/api/designs/{copy['id']}/").status_code == 204
    assert not Design.objects.filter(pk=copy["id"]).exists()


def test_design_file_round_trip(api, design, team):
    exported = api.get(f"/api/designs/{design.pk}/yaml/")
    assert exported.status_code == 200 and b"cluster:" in exported.content
    text = exported.content.replace(b"name: H100 x4", b"name: Imported")
    response = api.post(f"/api/designs/import/?team={team.pk}", text, content_type="application/yaml")
    assert response.status_code == 201, response.content
    imported = response.json()
    assert imported["name"] == "Imported" and imported["parameters"]["nodes"] == 4
    assert imported["summary"]["gpus"] == design.summary["gpus"]


def test_design_file_errors_name_the_field(api, team, catalog_db):
    head = b"version: 1\nname: x\ncluster: {generator: rail-optimized, server: dgx-h100, "
    cases = {
        head + b"nodes: 0}\n": "cluster.nodes",
        head + b"node: 4}\n": "cluster.node",
        b"version: 1\nname: x\nturbo: 1\n": "turbo",
        b"version: 2\nname: x\ncluster: {}\n": "version",
        b"a: &x 1\nb: *x\n": "a",
        b"name: [unclosed\n": "yaml",
    }
    for text, field in cases.items():
        response = api.post(f"/api/designs/import/?team={team.pk}", text, content_type="application/yaml")
        assert response.status_code == 400, (text, response.content)
        assert field in errors_of(response), (text, response.content)
    assert list(
        errors_of(api.post("/api/designs/import/", b"version: 1\n", content_type="application/yaml"))
    ) == ["team"]


def test_hand_built_design_does_not_export(api, design):
    Design.objects.filter(pk=design.pk).update(generator="manual", parameters={})
    response = api.get(f"/api/designs/{design.pk}/yaml/")
    assert response.status_code == 400 and list(errors_of(response)) == ["generator"]
