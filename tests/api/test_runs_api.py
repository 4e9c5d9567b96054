"""The runs API: start (kind + options), poll, cancel, results (summary + charts, arrays only by
name unless a bounded page is asked for), filters and pages."""

from __future__ import annotations

import numpy as np
import pytest

from scenarios.models import Run, RunArray
from scenarios.services import run_execute
from scenarios.storage import array_to_bytes
from tests.api.conftest import errors_of


def _start(api, scenario, **body):
    return api.post("/api/runs/", {"scenario": scenario.pk, **body}, format="json")


def test_run_start_poll_and_results(api, scenario):
    response = _start(api, scenario, kind="step")
    assert response.status_code == 201, response.content
    run = response.json()
    assert run["status"] == "queued" and run["scenario"]["id"] == scenario.pk and run["kind"] == "step"
    assert api.get(f"/api/runs/{run['id']}/").json()["status"] == "queued"
    assert run_execute(run_id=run["id"]) == "succeeded"  # what the worker does
    state = api.get(f"/api/runs/{run['id']}/").json()
    assert state["status"] == "succeeded" and state["progress"] == 1.0
    results = api.get(f"/api/runs/{run['id']}/results/").json()
    assert results["summary"]["step_time_s"] > 0 and results["figures"]
    assert results["charts"] and all("data" in chart or "figure" in chart for chart in results["charts"])
    names = {a["name"] for a in results["arrays"]}
    assert "link_utilization" in names
    assert all("values" not in a for a in results["arrays"])  # never the big arrays inline
    assert api.get(f"/api/runs/{run['id']}/results/?charts=false").json()["charts"] == []


def test_run_start_errors_name_the_option(api, scenario):
    errors = errors_of(_start(api, scenario, kind="sweep", options={"nodes": "abc"}))
    assert list(errors) == ["options.nodes"] and errors["options.nodes"][0].startswith("options.nodes: ")
    errors = errors_of(_start(api, scenario, kind="teleport"))
    assert list(errors) == ["kind"] and "must be one of" in errors["kind"][0]
    errors = errors_of(_start(api, scenario, kind="step", options={"turbo": 1}))
    assert list(errors) == ["options.turbo"]


def test_run_start_on_another_teams_scenario_reads_as_missing(stranger_api, scenario):
    response = _start(stranger_api, scenario)
    assert response.status_code == 400
    assert errors_of(response) == {"scenario": [f"scenario: scenario {scenario.pk} not found"]}
    missing = _start(stranger_api, type(scenario)(pk=10**12))
    assert errors_of(missing) == {"scenario": [f"scenario: scenario {10**12} not found"]}
    assert not Run.objects.exists()


def test_run_cancel(api, scenario):
    run = _start(api, scenario).json()
    response = api.post(f"/api/runs/{run['id']}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"


def test_run_arrays_come_in_bounded_pages(api, scenario):
    run = Run.objects.create(scenario=scenario, kind="step", status="succeeded")
    data, dtype, shape = array_to_bytes(np.array([0.5, np.nan, 2.0, np.inf] * 5000, dtype=np.float64))
    RunArray.objects.create(run=run, name="link_utilization", dtype=dtype, shape=shape, data=data)
    page = api.get(f"/api/runs/{run.pk}/arrays/link_utilization/?offset=1&limit=3").json()
    assert page["size"] == 20000 and page["values"] == [None, 2.0, None] and page["shape"] == [20000]
    assert len(api.get(f"/api/runs/{run.pk}/arrays/link_utilization/").json()["values"]) == 1000
    errors = errors_of(api.get(f"/api/runs/{run.pk}/arrays/link_utilization/?limit=10001"))
    assert list(errors) == ["limit"] and "10000" in errors["limit"][0].replace(",", "")
    assert api.get(f"/api/runs/{run.pk}/arrays/nope/").status_code == 404


@pytest.mark.parametrize(
    "query, expected",
    [("status=succeeded", 1), ("status=queued", 2), ("kind=sweep", 1), ("kind=step", 2), ("", 3)],
)
def test_run_list_filters_and_pages(api, scenario, query, expected):
    Run.objects.create(scenario=scenario, kind="step", status="succeeded")
    Run.objects.create(scenario=scenario, kind="step", status="queued")
    Run.objects.create(scenario=scenario, kind="sweep", status="queued")
    body = api.get(f"/api/runs/?{query}&scenario={scenario.pk}&design={scenario.design_id}").json()
    assert body["count"] == expected
    assert len(api.get("/api/runs/?page_size=1").json()["results"]) == 1


def test_run_list_filter_values_are_checked(api):
    for query in ("status=exploded", "kind=teleport", "scenario=abc", "design=" + "9" * 30):
        response = api.get(f"/api/runs/?{query}")
        assert response.status_code == 400, query
        assert list(errors_of(response)) == [query.split("=")[0]]


def test_kinds_lists_registered_kinds(api):
    kinds = {k["name"]: k for k in api.get("/api/kinds/").json()}
    assert {"step", "sweep", "search"} <= set(kinds) and "nodes" in kinds["sweep"]["options"]


def test_run_carries_its_inputs_and_a_catalog_edit_changes_nothing(api, scenario):
    from scenarios.provenance import RunInputs
    from tests.scenarios.test_provenance import edit_gpu_bf16

    run = _start(api, scenario, kind="step").json()
    inputs = run["inputs"]
    assert set(inputs) == {"scenario", "design_version", "catalog_digest", "rerun_of"}
    assert inputs["scenario"]["name"] == "baseline" and inputs["design_version"] == scenario.design.version
    assert inputs["catalog_digest"] == RunInputs.of(Run.objects.get(pk=run["id"])).catalog_digest
    assert run_execute(run_id=run["id"]) == "succeeded"
    before = api.get(f"/api/runs/{run['id']}/").json()
    edit_gpu_bf16(500.0)
    api.patch(f"/api/scenarios/{scenario.pk}/", {"name": "renamed"}, format="json")
    after = api.get(f"/api/runs/{run['id']}/").json()
    assert after["inputs"] == before["inputs"] and after["scenario"]["name"] == "baseline"
    assert after["summary"] == before["summary"]


def test_run_rerun_starts_a_run_from_the_stored_inputs(api, scenario):
    run = _start(api, scenario, kind="step").json()
    response = api.post(f"/api/runs/{run['id']}/rerun/")
    assert response.status_code == 201, response.content
    again = response.json()
    assert again["id"] != run["id"] and again["status"] == "queued" and again["kind"] == "step"
    assert again["inputs"]["rerun_of"] == run["id"]
    assert again["inputs"]["catalog_digest"] == run["inputs"]["catalog_digest"]


def test_run_rerun_needs_the_role_that_starts_runs(api, stranger_api, scenario, team, django_user_model):
    from teams.permissions import ROLE_ACTIONS, RUN, VIEW
    from tests.api.conftest import set_role, token_client

    run = _start(api, scenario, kind="step").json()
    viewer_role = next(r for r, granted in ROLE_ACTIONS.items() if VIEW in granted and RUN not in granted)
    viewer = django_user_model.objects.create_user("vera")
    set_role(viewer, team, viewer_role)
    assert token_client(viewer).post(f"/api/runs/{run['id']}/rerun/").status_code == 403
    assert stranger_api.post(f"/api/runs/{run['id']}/rerun/").status_code == 404
    assert Run.objects.count() == 1


def test_a_run_from_before_provenance_says_so(api, scenario):
    run = Run.objects.create(scenario=scenario, kind="step", status="succeeded")
    assert api.get(f"/api/runs/{run.pk}/").json()["inputs"] is None
    errors = errors_of(api.post(f"/api/runs/{run.pk}/rerun/"))
    assert errors == {
        "inputs": [
            "inputs: not recorded (it ran before provenance was kept), so it cannot run again as it ran"
        ]
    }
