"""Selectors: the run state the consumer sends first, the floor-plan JSON, the rack panel."""

from __future__ import annotations

import json

import pytest

from scenarios import selectors, services
from scenarios.models import Run


def test_run_state_of_a_queued_run_has_no_rack_values(scenario):
    run = Run.objects.create(scenario=scenario)
    state = selectors.run_state(run=run)
    assert state["status"] == "queued" and state["active"] is True
    assert state["rack_values"] == {} and state["design"] == scenario.design_id
    json.dumps(state)  # the consumer sends it as JSON


def test_run_state_after_success_carries_brief_summary_and_rack_values(scenario):
    run = Run.objects.create(scenario=scenario, kind="step")
    services.run_execute(run_id=run.pk)
    run.refresh_from_db()
    state = selectors.run_state(run=run)
    racks = scenario.design.halls.get().racks.count()
    assert state["status"] == "succeeded" and state["progress"] == 1.0
    assert set(state["rack_values"]) == {"link_util", "slowdown", "job"}
    assert all(len(v) == racks for v in state["rack_values"].values())
    assert "details" not in state["summary"] and state["summary"]["step_time_s"] > 0
    assert len(json.dumps(state)) < 4000


def test_floor_plan_json_lists_racks_by_pk_with_design_metrics(design):
    plan = selectors.design_floor_plan_json(design=design)
    ids = [r["id"] for r in plan["racks"]]
    assert ids == sorted(ids) and len(ids) == design.halls.get().racks.count()
    assert {"id", "name", "row", "col", "kind"} == set(plan["racks"][0])
    assert all(0 <= r["row"] < plan["rows"] and 0 <= r["col"] < plan["columns"] for r in plan["racks"])
    for name in ("rack_power", "feed_load", "feed_load_n1", "gpu_type"):
        assert len(plan["values"][name]) == len(ids)
    assert plan["metrics"]["gpu_type"]["categories"] == ["h100-sxm"]
    json.dumps(plan)


def test_rack_panel_lists_devices_links_and_feeds(client, user, design):
    from django.urls import reverse

    plan = selectors.design_floor_plan_json(design=design)
    compute = next(r for r in plan["racks"] if r["kind"] == 0)
    client.force_login(user)
    rack = client.get(reverse("topology:rack-detail", args=[design.pk, compute["id"]])).json()
    assert rack["name"] == compute["name"]
    assert any(d["kind"] == "server" for d in rack["devices"])
    assert [d["u"] for d in rack["devices"]] == sorted((d["u"] for d in rack["devices"]), reverse=True)
    assert sum(link["count"] for link in rack["links"]) > 0 and rack["feeds"]
    index = [r["id"] for r in plan["racks"]].index(compute["id"])
    assert rack["nameplate_kw"] == pytest.approx(plan["power"]["nameplate_kw"][index], abs=0.01)
    assert client.get(reverse("topology:rack-detail", args=[design.pk, 10**12])).status_code == 404
