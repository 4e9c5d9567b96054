"""The failures and power run kinds on a saved design: chunked = unsplit, what they store and
stream, their charts and page data, the power run replaying the failures run's trial, and the
binary array endpoint the page's replay reads."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.urls import reverse

from scenarios import services
from scenarios.models import Run
from tests.scenarios.test_kinds import NullProgress, running_context, through_json

FAILURES = {"trials": 600, "window_days": 20, "spare_servers": 2, "seed": 3}
POWER = {"window_s": 4, "events": ["checkpoint"]}


@pytest.fixture
def studied(scenario, user):
    services.scenario_update(scenario=scenario, user=user, failures=FAILURES, power=POWER)
    return scenario


def test_a_chunked_failure_run_merges_to_the_unsplit_run(studied):
    spec, context = running_context(studied, "failures", {"chunks": 3})
    chunks = spec.split(context)
    assert len(chunks) == 2  # 600 trials = 2 blocks of 500: at most one task per block
    assert {"spine", "fabric_link"} >= set(chunks[0]["step_times"]["degraded_step_time_s"])
    results = [through_json(spec.compute_chunk(context, c, NullProgress())) for c in reversed(chunks)]
    merged = spec.merge(context, results)
    whole = spec.execute(context, NullProgress())
    assert json.dumps(merged.summary, sort_keys=True) == json.dumps(whole.summary, sort_keys=True)
    summary = merged.summary
    assert 0 < summary["etr"] <= 1 and summary["productive_p50_days"] > 0
    assert summary["event_log"] and summary["interruptions_total"] > 0
    racks = studied.design.halls.get().racks.count()
    assert len(merged.rack_values["failures"]) == racks
    # every failure with a place is on a rack (software stops have none)
    interruptions = summary["interruptions"]
    placed = interruptions["total"] - interruptions["by_category"].get("software", 0.0)
    placed += interruptions["degradations"] + interruptions["feed_faults_absorbed"]
    assert np.sum(merged.arrays["rack_failures"]) == pytest.approx(placed)


def test_a_failure_run_on_the_worker_path_shows_its_figures_charts_and_replay(studied, user, client):
    run = Run.objects.create(scenario=studied, kind="failures", options={"chunks": 1})
    services.run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    client.force_login(user)
    html = client.get(run.get_absolute_url()).content.decode()
    assert "Effective training time (ETTR)" in html and "data-failures-panel" in html
    assert "js/kinds/failures.js" in html
    charts = client.get(reverse("scenarios:run-charts", args=[run.pk])).json()["charts"]
    assert [c["id"] for c in charts] == ["wall-time", "badput", "interval", "interruptions"]
    lost, interval = charts[1]["figure"], charts[2]["figure"]
    assert "Productive training (goodput)" not in lost["data"][0]["y"] and "h trained" in str(lost["layout"])
    swept = interval["data"][0]["x"]  # no shape or annotation may stretch the log axis
    assert not interval["layout"].get("shapes") and not interval["layout"].get("annotations")
    assert all(min(swept) <= x <= max(swept) for trace in interval["data"][1:] for x in trace["x"])
    data = client.get(reverse("scenarios:run-kind-data", args=[run.pk])).json()
    assert data["racks_aligned"] and data["event_log"] and data["horizon_s"] > 0
    state = client.get(reverse("scenarios:run-state", args=[run.pk])).json()
    assert len(state["rack_values"]["failures"]) == studied.design.halls.get().racks.count()
    labels = [f["label"] for f in state["figures"]]
    assert labels[:2] == ["Effective training time (ETTR)", "Goodput"]


def test_a_power_run_replays_the_latest_failure_run_and_serves_its_series(studied, user, client):
    failures = Run.objects.create(scenario=studied, kind="failures", options={"chunks": 1})
    services.run_execute(run_id=failures.pk)
    run = services.run_start(scenario=studied, kind="power", user=user)
    services.run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    summary = run.summary
    assert summary["event_source"].startswith(f"failures run #{failures.pk}")
    assert summary["facility_peak_mw"] > summary["facility_trough_mw"] > 0
    assert summary["swing_mw"] == pytest.approx(summary["facility_peak_mw"] - summary["facility_trough_mw"])
    assert summary["coarse"]["resolution_s"] > 0
    client.force_login(user)
    state = client.get(reverse("scenarios:run-state", args=[run.pk])).json()
    racks = studied.design.halls.get().racks.count()
    assert (
        len(state["rack_values"]["power_rack"]) == racks and len(state["rack_values"]["power_feed"]) == racks
    )
    charts = [c["id"] for c in client.get(reverse("scenarios:run-charts", args=[run.pk])).json()["charts"]]
    assert charts[:2] == ["facility", "spectrum"] and "job-timeline" in charts
    data = client.get(reverse("scenarios:run-kind-data", args=[run.pk])).json()
    assert data["feeds"] and data["feeds"][0]["side_loss"] >= data["feeds"][-1]["side_loss"]
    reply = client.get(reverse("scenarios:run-array", args=[run.pk, "power_coarse_rack_kw"]) + "?frames=24")
    shape = json.loads(reply["X-Shape"])
    values = np.frombuffer(reply.content, dtype="<f4").reshape(shape)
    assert shape[0] == racks and shape[1] <= 24 and (values >= 0).all()
    assert client.get(reverse("scenarios:run-array", args=[run.pk, "no_such_array"])).status_code == 404


def test_power_options_and_failure_settings_are_form_errors_naming_the_field(studied, user, client):
    client.force_login(user)
    response = client.post(
        reverse("scenarios:run-start", args=[studied.pk]), {"kind": "power", "power-events": "bogus"}
    )
    assert response.status_code == 400 and not Run.objects.exists()
    from scenarios.forms import ScenarioForm

    initial = ScenarioForm.initial_from(
        name=studied.name, job=studied.job, what_if={}, failures=studied.failures, power=studied.power
    )
    data = {k: v for k, v in initial.items() if v not in (None, "", False)}
    response = client.post(studied.get_absolute_url(), {**data, "trials": "0"})
    assert response.status_code == 400
    html = response.content.decode()
    block = html[html.index('data-field="trials"') :][:1500]
    assert "must be ≥ 1 (got 0)" in block  # next to its field
    response = client.post(studied.get_absolute_url(), {**data, "spare_servers": "9"})
    assert "must be ≤ the cluster&#x27;s 4 servers" in response.content.decode()
