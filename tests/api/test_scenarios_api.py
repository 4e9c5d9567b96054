"""The scenarios API: create from JSON or a scenario file, read, change, export, delete; errors
in the scenario format's dotted paths."""

from __future__ import annotations

import copy

import pytest

from scenarios.models import Scenario
from tests.api.conftest import errors_of


def test_scenario_create_from_json_and_read(api, design, job):
    response = api.post(
        "/api/scenarios/", {"design": design.pk, "name": "Baseline", "job": job}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "Baseline" and body["design"] == design.pk and body["job"] == job
    assert api.get(f"/api/scenarios/{body['id']}/").json()["id"] == body["id"]
    listed = api.get(f"/api/scenarios/?design={design.pk}").json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == body["id"]


def test_scenario_create_names_the_field_by_its_scenario_path(api, design, job):
    job["parallel"]["tp"] = 3
    response = api.post("/api/scenarios/", {"design": design.pk, "name": "Bad", "job": job}, format="json")
    assert response.status_code == 400
    errors = errors_of(response)
    assert list(errors) == ["job.parallel.tp"]
    assert errors["job.parallel.tp"][0].startswith("job.parallel.tp: must divide heads (16) (got 3)")


def test_scenario_create_missing_fields_are_named(api):
    errors = errors_of(api.post("/api/scenarios/", {}, format="json"))
    assert {"design", "name", "job"} <= set(errors)
    assert errors["design"][0].startswith("design: ")


def test_scenario_update_changes_given_fields_and_revalidates(api, scenario):
    response = api.patch(f"/api/scenarios/{scenario.pk}/", {"name": "Renamed"}, format="json")
    assert response.status_code == 200 and response.json()["name"] == "Renamed"
    bad = copy.deepcopy(scenario.job)
    bad["model"]["layers"] = 0
    errors = errors_of(api.patch(f"/api/scenarios/{scenario.pk}/", {"job": bad}, format="json"))
    assert list(errors) == ["job.model.layers"]


def test_scenario_yaml_export_then_import_gives_the_same_scenario(api, scenario, design):
    exported = api.get(f"/api/scenarios/{scenario.pk}/yaml/")
    assert exported.status_code == 200 and exported["Content-Type"].startswith("application/yaml")
    response = api.post(
        f"/api/scenarios/import/?design={design.pk}", exported.content, content_type="application/yaml"
    )
    assert response.status_code == 201, response.content
    assert response.json()["job"] == scenario.job


@pytest.mark.parametrize("how", ["json", "multipart"])
def test_scenario_import_as_json_text_or_a_file(api, scenario, design, how):
    text = api.get(f"/api/scenarios/{scenario.pk}/yaml/").content
    if how == "json":
        response = api.post(
            "/api/scenarios/import/", {"design": design.pk, "yaml": text.decode()}, format="json"
        )
    else:
        from django.core.files.uploadedfile import SimpleUploadedFile

        upload = SimpleUploadedFile("s.yaml", text, content_type="application/yaml")
        response = api.post(
            "/api/scenarios/import/", {"design": design.pk, "file": upload}, format="multipart"
        )
    assert response.status_code == 201, response.content


def test_scenario_import_error_names_the_line(api, design):
    response = api.post(
        f"/api/scenarios/import/?design={design.pk}", b"name: [unclosed\n", content_type="application/yaml"
    )
    assert response.status_code == 400
    errors = errors_of(response)
    assert list(errors) == ["yaml"] and "line" in errors["yaml"][0]


def test_malformed_bodies_are_400_or_413_never_500(api, design):
    cases = [
        (b"{not json", "application/json", 400),
        (b'{"name": NaN}', "application/json", 400),
        (b'{"a": 1, "a": 2}', "application/json", 400),
        (b"[" * 100_000 + b"]" * 100_000, "application/json", 400),
        (b'{"name": "caf\xe9"}', "application/json", 400),
        (b'{"name": "\\u0000"}', "application/json", 400),
        (b'{"name": "\\ud800"}', "application/json", 400),
        (b'{"design": 99999999999999999999999}', "application/json", 400),
        (b"name=x", "application/x-www-form-urlencoded", 415),
        (b"x" * (3 * 1024 * 1024), "application/json", 413),
    ]
    for body, content_type, expected in cases:
        response = api.post("/api/scenarios/", body, content_type=content_type)
        assert response.status_code == expected, (body[:40], response.status_code, response.content[:300])
        errors = errors_of(response)
        assert all(len(m) <= 300 for v in errors.values() for m in v)


def test_scenario_delete(api, scenario):
    assert api.delete(f"/api/scenarios/{scenario.pk}/").status_code == 204
    assert not Scenario.objects.filter(pk=scenario.pk).exists()


def test_unknown_api_path_and_huge_ids_are_json_404(api):
    for url in ("/api/nope/", "/api/scenarios/" + "9" * 30 + "/", "/api/runs/abc/"):
        response = api.get(url)
        assert response.status_code == 404, url
        assert "__all__" in errors_of(response)


def test_scenario_import_as_json_takes_a_file_past_the_json_string_limit(api, scenario, design):
    text = api.get(f"/api/scenarios/{scenario.pk}/yaml/").content.decode() + "#" + "-" * 20_000 + "\n"
    response = api.post("/api/scenarios/import/", {"design": design.pk, "yaml": text}, format="json")
    assert response.status_code == 201, response.content[:300]
    too_long = {"design": design.pk, "name": "x" * 20_000}
    errors = errors_of(api.post("/api/scenarios/", too_long, format="json"))
    assert errors == {"name": ["name: text of 20,000 characters, more than the 10,000 allowed"]}


#: Every section of a saved scenario filled with values off their defaults (what the form offers:
#: no file-only keys), so a door that drops or reshapes one is seen.
ALL_SECTIONS = {
    "what_if": {"straggler_spread": 0.02, "slow_nodes": [1], "slow_node_factor": 1.5},
    "failures": {
        "trials": 200,
        "seed": 7,
        "steps": 5000,
        "checkpoint": {"interval_min": 20.0, "save_s": 5.0, "async": True},
        "detection_s": 30.0,
        "restart_min": 5.0,
        "spare_servers": 2,
        "repair_hours": 24.0,
        "rates": {"software_per_day": 2.0},
        "lemons": {"fraction": 0.25, "factor": 5.0, "remove_after": 3},
        "weibull_shape": 0.8,
    },
    "power": {
        "window_s": 30.0,
        "resolution_ms": 2.0,
        "store_ms": 50.0,
        "gpu": {"floor_fraction": 0.3, "cap_w": 600.0},
        "stagger_groups": 2,
        "storage": {"joules_per_gpu": 100.0},
        "pue": 1.3,
    },
}
SECTION_KEYS = ("job", *ALL_SECTIONS)


def _scenario_file(design, job, name: str) -> dict:
    from scenarios.scenario_file import design_cluster

    return {"version": 1, "name": name, "cluster": design_cluster(design=design), "job": job, **ALL_SECTIONS}


def _saved_through_the_form(client, user, scenario_id: int) -> None:
    """Open the scenario's editor as the page fills it and save it unchanged (the form's door)."""
    from scenarios.forms import ScenarioForm

    scenario = Scenario.objects.get(pk=scenario_id)
    sections = {key: getattr(scenario, key) for key in SECTION_KEYS}
    initial = ScenarioForm.initial_from(name=scenario.name, description="", **sections)
    client.force_login(user)
    response = client.post(
        scenario.get_absolute_url(), {k: v for k, v in initial.items() if v not in (None, "")}
    )
    assert response.status_code == 302, response.content.decode()[-2000:]


def test_scenario_sections_round_trip_through_api_form_and_file(api, client, user, design, job):
    """One format for every door: a scenario with every section (``failures:`` and ``power:``
    too) created through the API reads back whole, survives the form, and exports as the file;
    the file imported reads back whole through the API."""
    import yaml

    file = _scenario_file(design, job, "Every section")
    created = api.post(
        "/api/scenarios/",
        {"design": design.pk, "name": file["name"], "job": job, **ALL_SECTIONS},
        format="json",
    )
    assert created.status_code == 201, created.content
    scenario_id = created.json()["id"]
    for body in (created.json(), api.get(f"/api/scenarios/{scenario_id}/").json()):
        assert {key: body.get(key) for key in SECTION_KEYS} == {key: file[key] for key in SECTION_KEYS}
    _saved_through_the_form(client, user, scenario_id)
    assert yaml.safe_load(api.get(f"/api/scenarios/{scenario_id}/yaml/").content) == file

    imported_file = {**file, "name": "Imported"}
    imported = api.post(
        f"/api/scenarios/import/?design={design.pk}",
        yaml.safe_dump(imported_file, sort_keys=False),
        content_type="application/yaml",
    )
    assert imported.status_code == 201, imported.content
    imported_id = imported.json()["id"]
    body = api.get(f"/api/scenarios/{imported_id}/").json()
    assert {key: body.get(key) for key in SECTION_KEYS} == {key: imported_file[key] for key in SECTION_KEYS}
    _saved_through_the_form(client, user, imported_id)
    assert yaml.safe_load(api.get(f"/api/scenarios/{imported_id}/yaml/").content) == imported_file


def test_scenario_api_sections_are_the_scenario_files_sections(api):
    """The API's scenario bodies carry every section a saved scenario keeps, derived from the
    format's schema (its mappings but the design's cluster and the ignored ``measured``)."""
    from scenarios.api.serializers import (
        ScenarioCreateSerializer,
        ScenarioSerializer,
        ScenarioUpdateSerializer,
    )
    from scenarios.scenario_file import SECTIONS
    from scenarios.sim.format.schema import TOP

    assert SECTIONS == tuple(k for k in TOP.mappings if k not in ("cluster", "measured")) == SECTION_KEYS
    for serializer in (ScenarioSerializer, ScenarioCreateSerializer, ScenarioUpdateSerializer):
        assert set(SECTIONS) <= set(serializer().fields), serializer
    assert all(Scenario._meta.get_field(key).get_internal_type() == "JSONField" for key in SECTIONS)
    schema = api.get("/api/schema/?format=json").json()["components"]["schemas"]
    for name in ("Scenario", "ScenarioCreateRequest", "PatchedScenarioUpdateRequest"):
        assert set(SECTIONS) <= set(schema[name]["properties"]), name
    assert schema["ScenarioCreateRequest"]["required"] == ["design", "job", "name"]


def test_scenario_update_changes_a_failures_or_power_section(api, scenario):
    """PATCH with a section changes it (and leaves the others); the API had no such fields."""
    response = api.patch(f"/api/scenarios/{scenario.pk}/", {"power": ALL_SECTIONS["power"]}, format="json")
    assert response.status_code == 200, response.content
    scenario.refresh_from_db()
    assert scenario.power == ALL_SECTIONS["power"] and response.json()["power"] == ALL_SECTIONS["power"]
    errors = errors_of(
        api.patch(f"/api/scenarios/{scenario.pk}/", {"failures": {"trials": 0}}, format="json")
    )
    assert errors == {"failures.trials": ["failures.trials: must be ≥ 1 (got 0)"]}
