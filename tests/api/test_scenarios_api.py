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
