"""Scenario, run and comparison pages: forms and their validation messages next to the fields,
access control (another team sees nothing), the JSON the live pages read, comparison deltas."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from scenarios.choices import RunStatus
from scenarios.forms import ScenarioForm, default_job
from scenarios.models import Run, Scenario
from scenarios.selectors import run_headline
from scenarios.services import scenario_create
from teams.services import team_create
from topology.fabric.generators import generate
from topology.services import design_create_from_plan

NODES = 8  # 64 H100 GPUs, a few racks: fast to save and to render


@pytest.fixture
def design(catalog_db, catalog, team, user):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=NODES)
    return design_create_from_plan(plan=plan, name="H100 slice", team=team, user=user)


@pytest.fixture
def scenario(design, user):
    return scenario_create(
        design=design, name="Baseline", job=default_job(gpus=NODES * 8), what_if={}, user=user
    )


@pytest.fixture
def stranger(db, django_user_model):
    other = django_user_model.objects.create_user("mallory", password="pw-mallory-1")
    team_create(name="Other", users=[other])
    return other


def _form_data(**overrides) -> dict:
    initial = ScenarioForm.initial_from(name="Mine", job=default_job(gpus=NODES * 8), what_if={})
    data = {k: v for k, v in initial.items() if v not in (None, "")}
    data["overlap_dp"] = "on"
    data.update(overrides)
    return data


def _field_block(html: str, name: str) -> str:
    """The markup of one form field's wrapper (label, input, errors)."""
    start = html.rindex('<div class="field', 0, html.index(f'data-field="{name}"'))
    end = html.find('<div class="field', start + 10)
    return html[start : end if end > 0 else len(html)]


def _succeeded_run(scenario, **summary) -> Run:
    return Run.objects.create(
        scenario=scenario, kind="step", status=RunStatus.SUCCEEDED, progress=1.0, summary=summary
    )


# --- forms --------------------------------------------------------------------------------------


def test_scenario_new_requires_login(client, design):
    response = client.get(reverse("scenarios:scenario-new") + f"?design={design.pk}")
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_scenario_new_prefills_a_job_that_fits_the_design(client, user, design):
    client.force_login(user)
    html = client.get(reverse("scenarios:scenario-new") + f"?design={design.pk}").content.decode()
    assert re.search(r'name="dp" value="8"', html)
    response = client.post(reverse("scenarios:scenario-new") + f"?design={design.pk}", _form_data())
    scenario = Scenario.objects.get(name="Mine")
    assert response.status_code == 302 and response["Location"] == scenario.get_absolute_url()
    assert scenario.job["parallel"] == {"tp": 8, "pp": 1, "dp": 8}
    assert scenario.what_if == {}


def test_scenario_form_shows_core_validation_next_to_the_field(client, user, design):
    client.force_login(user)
    response = client.post(reverse("scenarios:scenario-new") + f"?design={design.pk}", _form_data(tp="3"))
    assert response.status_code == 400
    html = response.content.decode()
    block = _field_block(html, "tp")
    assert "has-error" in block and "must divide heads (32)" in block
    assert "has-error" not in _field_block(html, "pp")
    assert not Scenario.objects.filter(name="Mine").exists()


def test_scenario_form_shows_what_if_errors_next_to_what_if_fields(client, user, design):
    client.force_login(user)
    response = client.post(
        reverse("scenarios:scenario-new") + f"?design={design.pk}", _form_data(straggler_spread="2")
    )
    assert response.status_code == 400
    assert "has-error" in _field_block(response.content.decode(), "straggler_spread")
    response = client.post(
        reverse("scenarios:scenario-new") + f"?design={design.pk}", _form_data(server="nope")
    )
    assert "has-error" in _field_block(response.content.decode(), "server")


def test_scenario_form_maps_service_errors_by_path():
    from django.core.exceptions import ValidationError

    form = ScenarioForm(data={})
    form.is_valid()
    form._errors = {}
    form.add_service_errors(
        ValidationError({"job.model.moe.top_k": "job.model.moe.top_k: must be ≤ experts (8)"})
    )
    form.add_service_errors(ValidationError({"__all__": "something global"}))
    assert form.errors["top_k"] == ["must be ≤ experts (8)"]
    assert form.non_field_errors() == ["something global"]


def test_scenario_form_round_trips_job_and_what_if():
    job = {**default_job(gpus=64), "recompute": "selective"}
    what_if = {"nic_gbps": 200.0, "slow_nodes": [1, "node00003"], "nodes": 16}
    initial = ScenarioForm.initial_from(name="x", job=job, what_if=what_if)
    data = {k: v for k, v in initial.items() if v not in (None, "")}
    data["overlap_dp"] = "on"
    form = ScenarioForm(data=data, catalog_choices={"servers": [], "gpus": []})
    assert form.is_valid(), form.errors
    assert form.job() == job
    assert form.what_if() == what_if


def test_scenario_edit_saves_and_reports_errors(client, user, scenario):
    client.force_login(user)
    url = scenario.get_absolute_url()
    assert client.post(url, _form_data(name="Renamed", nic_gbps="200")).status_code == 302
    scenario.refresh_from_db()
    assert scenario.name == "Renamed" and scenario.what_if == {"nic_gbps": 200.0}
    response = client.post(url, _form_data(name="Renamed", global_batch="33"))
    assert response.status_code == 400
    assert "has-error" in _field_block(response.content.decode(), "global_batch")


# --- access control -----------------------------------------------------------------------------


def test_pages_of_another_team_are_not_found(client, stranger, scenario):
    run = _succeeded_run(scenario, step_time_s=1.0)
    design = scenario.design
    client.force_login(stranger)
    rack = design.halls.first().racks.first()
    for url in (
        scenario.get_absolute_url(),
        reverse("scenarios:scenario-yaml", args=[scenario.pk]),
        reverse("scenarios:scenario-new") + f"?design={design.pk}",
        run.get_absolute_url(),
        reverse("scenarios:run-state", args=[run.pk]),
        reverse("scenarios:run-charts", args=[run.pk]),
        reverse("scenarios:design-floor-plan", args=[design.pk]),
        reverse("scenarios:design-panel", args=[design.pk]),
        reverse("topology:rack-detail", args=[design.pk, rack.pk]),
        reverse("scenarios:compare") + f"?runs={run.pk}",
    ):
        assert client.get(url).status_code == 404, url
    for url in (
        reverse("scenarios:run-start", args=[scenario.pk]),
        reverse("scenarios:run-cancel", args=[run.pk]),
        reverse("scenarios:scenario-duplicate", args=[scenario.pk]),
    ):
        assert client.post(url, {"kind": "step"}).status_code == 404, url
    assert "Baseline" not in client.get(reverse("scenarios:scenario-list")).content.decode()
    assert Run.objects.count() == 1 and Scenario.objects.count() == 1


# --- scenario actions ---------------------------------------------------------------------------


def test_duplicate_as_what_if_copies_and_opens_the_editor(client, user, scenario):
    client.force_login(user)
    response = client.post(reverse("scenarios:scenario-duplicate", args=[scenario.pk]))
    copy = Scenario.objects.exclude(pk=scenario.pk).get()
    assert copy.name == "Baseline (what-if)" and copy.job == scenario.job
    assert response["Location"] == copy.get_absolute_url() + "#edit"


def test_yaml_export_then_import_gives_the_same_scenario(client, user, scenario):
    client.force_login(user)
    text = client.get(reverse("scenarios:scenario-yaml", args=[scenario.pk])).content.decode()
    assert "version: 1" in text and "parallel:" in text
    response = client.post(
        reverse("scenarios:scenario-import"),
        {"design": scenario.design.pk, "text": text.replace("Baseline", "Copy")},
    )
    imported = Scenario.objects.get(name="Copy")
    assert response.status_code == 302 and imported.job == scenario.job


def test_import_shows_yaml_errors(client, user, design):
    client.force_login(user)
    response = client.post(reverse("scenarios:scenario-import"), {"design": design.pk, "text": "job: [1, 2"})
    assert (
        response.status_code == 400
        and "yaml: line 2, column 1: did not find expected" in response.content.decode()
    )


def test_run_start_queues_a_run_and_opens_its_page(client, user, scenario):
    client.force_login(user)
    response = client.post(reverse("scenarios:run-start", args=[scenario.pk]), {"kind": "step"})
    run = Run.objects.get()
    assert run.status == RunStatus.QUEUED and run.kind == "step" and run.created_by == user
    assert response["Location"] == run.get_absolute_url()


def test_run_start_rejects_bad_sweep_nodes(client, user, scenario):
    client.force_login(user)
    response = client.post(
        reverse("scenarios:run-start", args=[scenario.pk]),
        {"kind": "sweep", "sweep-nodes": "8, x"},
        follow=True,
    )
    assert not Run.objects.exists()
    assert "whole numbers" in response.content.decode()


def test_run_cancel_from_the_page(client, user, scenario):
    run = Run.objects.create(scenario=scenario, kind="step", status=RunStatus.RUNNING, progress=0.3)
    client.force_login(user)
    response = client.post(reverse("scenarios:run-cancel", args=[run.pk]), HTTP_X_REQUESTED_WITH="fetch")
    assert response.json() == {"status": "cancelled"}
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED


# --- live pages ---------------------------------------------------------------------------------


def test_run_page_embeds_state_floor_plan_and_live_script(client, user, scenario):
    run = Run.objects.create(
        scenario=scenario, kind="step", status=RunStatus.RUNNING, progress=0.25, stage="routing"
    )
    client.force_login(user)
    response = client.get(run.get_absolute_url())
    html = response.content.decode()
    state = response.context["state"]
    plan = response.context["floor_plan"]
    assert state["id"] == run.pk and state["status"] == "running" and state["progress"] == 0.25
    assert len(plan["racks"]) == scenario.design.halls.first().racks.count()
    assert 'id="run-state"' in html and 'id="floor-plan-data"' in html
    assert 'aria-valuenow="25"' in html and "js/run.js" in html
    assert "vendor/plotly/plotly.min.js" in html  # loaded lazily by charts.js, from the project


def test_run_page_gives_its_scripts_every_url(client, user, scenario):
    """run.js and the kind modules fetch and connect only to URLs the page renders."""
    run = Run.objects.create(scenario=scenario, kind="power", status=RunStatus.SUCCEEDED)
    client.force_login(user)
    html = client.get(run.get_absolute_url()).content.decode()
    assert f'data-charts-url="{reverse("scenarios:run-charts", args=[run.pk])}"' in html
    assert f'data-kind-data-url="{reverse("scenarios:run-kind-data", args=[run.pk])}"' in html
    assert f'data-array-url="{reverse("scenarios:run-array", args=[run.pk, "array-name"])}"' in html
    assert f'data-live-url="/ws/runs/{run.pk}/"' in html
    assert 'data-kind-script="/static/js/kinds/power.js"' in html


def test_design_page_points_at_floor_plan_and_panel(client, user, design):
    client.force_login(user)
    html = client.get(design.get_absolute_url()).content.decode()
    assert reverse("scenarios:design-floor-plan", args=[design.pk]) in html
    assert reverse("scenarios:design-panel", args=[design.pk]) in html
    assert f'data-live-url="/ws/designs/{design.pk}/"' in html
    assert "js/design.js" in html


def test_design_floor_plan_json_is_cached_by_version(client, user, design):
    client.force_login(user)
    url = reverse("scenarios:design-floor-plan", args=[design.pk])
    response = client.get(url)
    body = response.json()
    assert body["rows"] == design.halls.first().rows and len(body["racks"]) == design.summary["racks"]
    assert set(body["values"]) >= {"rack_power", "feed_load", "feed_load_n1", "gpu_type"}
    again = client.get(url, HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    design.version += 1
    design.save()
    assert client.get(url, HTTP_IF_NONE_MATCH=response["ETag"]).status_code == 200


def test_design_panel_lists_scenarios_and_runs(client, user, scenario):
    _succeeded_run(scenario, step_time_s=1.234)
    client.force_login(user)
    html = client.get(reverse("scenarios:design-panel", args=[scenario.design.pk])).content.decode()
    assert "Baseline" in html and "1.234 s" in html and "New scenario" in html


def test_rack_detail_lists_devices_by_u_links_and_feeds(client, user, design):
    client.force_login(user)
    rack = design.halls.first().racks.filter(kind=0).order_by("pk").first()
    body = client.get(reverse("topology:rack-detail", args=[design.pk, rack.pk])).json()
    assert body["name"] == rack.name and body["u_height"] == rack.u_height
    servers = [d for d in body["devices"] if d["kind"] == "server"]
    assert servers and [d["u"] for d in body["devices"]] == sorted(
        (d["u"] for d in body["devices"]), reverse=True
    )
    assert sum(link["count"] for link in body["links"]) == 8 * len(servers)  # 8 NICs per DGX H100
    assert {f["side"] for f in body["feeds"]} == {"A", "B"}
    assert 0 < body["nameplate_kw"] <= body["power_budget_kw"]


def test_run_charts_by_kind(client, user, scenario):
    step = _succeeded_run(
        scenario,
        step_time_s=2.0,
        breakdown={"compute": 1.5, "dp": 0.5},
        memory={"weights": 10.0, "activations": 20.0},
    )
    sweep = Run.objects.create(
        scenario=scenario,
        kind="sweep",
        status=RunStatus.SUCCEEDED,
        summary={
            "points": [
                {
                    "gpus": 8,
                    "tokens_per_s": 100.0,
                    "time_to_train_days": 10.0,
                    "efficiency": 1.0,
                    "error": "",
                },
                {
                    "gpus": 16,
                    "tokens_per_s": 150.0,
                    "time_to_train_days": 7.0,
                    "efficiency": 0.75,
                    "error": "",
                },
            ],
            "knee_gpus": 16,
        },
    )
    search = Run.objects.create(
        scenario=scenario,
        kind="search",
        status=RunStatus.SUCCEEDED,
        summary={
            "best": [
                {
                    "tp": 8,
                    "pp": 1,
                    "dp": 8,
                    "cp": 1,
                    "ep": 1,
                    "vpp": 1,
                    "micro_batch": 1,
                    "recompute": "none",
                    "zero": 1,
                    "step_time_s": 1.0,
                    "mfu": 0.4,
                    "memory_gib_per_gpu": 30.0,
                    "breakdown": {"compute": 1.0},
                }
            ]
        },
    )
    client.force_login(user)
    ids = {
        run.kind: [
            c["id"] for c in client.get(reverse("scenarios:run-charts", args=[run.pk])).json()["charts"]
        ]
        for run in (step, sweep, search)
    }
    assert ids == {"step": ["breakdown", "memory"], "sweep": ["scaling"], "search": ["search", "breakdown"]}
    figure = client.get(reverse("scenarios:run-charts", args=[sweep.pk])).json()["charts"][0]["figure"]
    assert figure["data"][0]["x"] == [8, 16] and figure["data"][1]["y"] == [1.0, 0.75]


def test_step_run_shows_what_the_overlap_hides_kind_by_kind(client, user, scenario):
    """A run whose stack hid communication behind compute gets an exposed-vs-hidden chart in
    words, one bar per communication kind that costs or hides anything, and its headroom."""
    run = _succeeded_run(
        scenario,
        step_time_s=2.0,
        breakdown={"compute": 1.7, "tp": 0.2, "dp": 0.1},
        memory={"weights": 10.0},
    )
    run.summary |= {"hidden": {"tp": 0.3, "cp": 0.0, "dp": 0.6}, "memory_headroom_gib": 9.9}
    run.save(update_fields=["summary"])
    client.force_login(user)
    charts = client.get(reverse("scenarios:run-charts", args=[run.pk])).json()["charts"]
    assert [c["id"] for c in charts] == ["breakdown", "overlap", "memory"]
    exposed, hidden = charts[1]["figure"]["data"]
    assert exposed["y"] == ["Tensor-parallel comm.", "Data-parallel comm."]
    assert exposed["x"] == [0.2, 0.1] and hidden["x"] == [0.3, 0.6]
    page = client.get(run.get_absolute_url()).content.decode()
    assert "HBM headroom" in page and "+9.9 GiB" in page


# --- comparison ---------------------------------------------------------------------------------


def test_compare_highlights_better_and_worse(client, user, scenario):
    base = _succeeded_run(
        scenario,
        step_time_s=2.0,
        mfu=0.40,
        gpus=64,
        breakdown={"compute": 1.5, "dp": 0.5},
        memory={"weights": 10.0},
    )
    faster = _succeeded_run(
        scenario,
        step_time_s=1.5,
        mfu=0.38,
        gpus=64,
        breakdown={"compute": 1.2, "dp": 0.3},
        memory={"weights": 10.0},
    )
    client.force_login(user)
    response = client.get(reverse("scenarios:compare") + f"?runs={base.pk},{faster.pk}")
    rows = {row.label: row for row in response.context["rows"]}
    step, mfu, gpus = rows["Step time"], rows["MFU"], rows["GPUs"]
    assert step.cells[1].verdict == "better" and step.cells[1].delta_text == "-25 %"
    assert mfu.cells[1].verdict == "worse" and mfu.differs
    assert gpus.cells[1].delta_text == "±0 %" and not gpus.differs
    html = response.content.decode()
    assert 'data-verdict="better"' in html and 'data-verdict="worse"' in html
    assert [c["id"] for c in response.context["charts"]] == ["compare-breakdown", "compare-memory"]


def test_compare_lists_settings_that_differ(client, user, scenario):
    from scenarios.services import scenario_duplicate

    other = scenario_duplicate(scenario=scenario, user=user, what_if={"nic_gbps": 200.0})
    a = _succeeded_run(scenario, step_time_s=1.0)
    b = _succeeded_run(other, step_time_s=1.1)
    client.force_login(user)
    rows = {
        r.label: r
        for r in client.get(reverse("scenarios:compare") + f"?runs={a.pk}&runs={b.pk}").context["rows"]
    }
    # The scenario that leaves the NIC to the design shows the design's real speed, not "—".
    assert rows["NIC speed"].differs and [c.text for c in rows["NIC speed"].cells] == ["400 (design)", "200"]
    assert not rows["Tensor parallel (tp)"].differs
    assert rows["Step time"].cells[1].verdict == "worse"


def test_compare_labels_settings_in_words(client, user, scenario):
    a, b = _succeeded_run(scenario, step_time_s=1.0), _succeeded_run(scenario, step_time_s=1.0)
    client.force_login(user)
    html = client.get(reverse("scenarios:compare") + f"?runs={a.pk},{b.pk}").content.decode()
    assert "FFN hidden size" in html and "Global batch" in html
    assert "job.model" not in html and "ffn_hidden" not in html


def test_compare_keeps_result_rows_under_only_rows_that_differ(client, user, scenario):
    """Equal results are still results: they carry the class the "only differ" filter keeps."""
    a, b = (
        _succeeded_run(scenario, step_time_s=1.0, mfu=0.4),
        _succeeded_run(scenario, step_time_s=1.0, mfu=0.4),
    )
    client.force_login(user)
    response = client.get(reverse("scenarios:compare") + f"?runs={a.pk},{b.pk}")
    rows = {row.label: row for row in response.context["rows"]}
    assert rows["Step time"].result and not rows["Step time"].differs
    assert not rows["Global batch"].result
    html = response.content.decode()
    assert re.search(r'<tr class="same result">\s*<th scope="row">Step time</th>', html)
    css = (Path(__file__).resolve().parents[2] / "static/css/live.css").read_text()
    assert ".compare.only-diff tr.same.setting { display: none; }" in css
    # The filter is on when the page opens: equal settings are some hundred rows of noise.
    assert 'class="list compare only-diff"' in html
    assert re.search(r"<input [^>]*data-only-diff[^>]* checked", html)


def test_compare_shows_small_changes_against_the_chosen_baseline(client, user, scenario):
    a = _succeeded_run(scenario, step_time_s=1.0, mfu=0.400)
    b = _succeeded_run(scenario, step_time_s=1.005, mfu=0.398)
    c = _succeeded_run(scenario, step_time_s=0.9, mfu=0.44)
    client.force_login(user)
    rows = {
        row.label: row
        for row in client.get(reverse("scenarios:compare") + f"?runs={a.pk},{b.pk},{c.pk}").context["rows"]
    }
    assert rows["Step time"].cells[1].delta_text == "+0.5 %" and rows["Step time"].cells[1].verdict == "worse"
    assert rows["MFU"].cells[1].delta_text == "-0.5 %" and rows["MFU"].cells[1].verdict == "worse"
    response = client.get(reverse("scenarios:compare") + f"?runs={a.pk},{b.pk},{c.pk}&baseline={c.pk}")
    step = {row.label: row for row in response.context["rows"]}["Step time"]
    assert response.context["baseline"] == c
    assert [cell.delta_text for cell in step.cells] == ["+11 %", "+12 %", ""]
    assert [cell.verdict for cell in step.cells] == ["worse", "worse", ""]
    html = response.content.decode()
    assert f'data-make-baseline="{a.pk}"' in html and f'data-make-baseline="{c.pk}"' not in html


def test_compare_link_of_a_run_pre_ticks_it(client, user, scenario):
    mine = _succeeded_run(scenario, step_time_s=1.0)
    other = _succeeded_run(scenario, step_time_s=2.0)
    client.force_login(user)
    run_html = client.get(mine.get_absolute_url()).content.decode()
    assert f'href="{reverse("scenarios:compare")}?runs={mine.pk}&amp;baseline={mine.pk}"' in run_html
    html = client.get(reverse("scenarios:compare") + f"?runs={mine.pk}").content.decode()
    assert re.search(rf'value="{mine.pk}" id="pick-{mine.pk}" checked', html)
    assert re.search(rf'value="{other.pk}" id="pick-{other.pk}">', html)


def test_compare_sweep_and_search_by_their_headlines(client, user, scenario):
    """A search lines up with a step run on step time and MFU (its best layout's); a sweep says
    where it stops paying, or that it still scales."""
    step = _succeeded_run(scenario, step_time_s=2.0, mfu=0.40)
    best = {"tp": 4, "pp": 1, "dp": 16, "micro_batch": 1, "recompute": "none", "step_time_s": 1.6, "mfu": 0.5}
    search = Run.objects.create(
        scenario=scenario, kind="search", status=RunStatus.SUCCEEDED, summary={"best": [best], "valid": 9}
    )
    points = [
        {"index": i, "gpus": g, "tokens_per_s": t, "step_time_s": 1.0, "error": ""}
        for i, (g, t) in enumerate([(8, 100.0), (16, 190.0), (32, 200.0)])
    ]
    knee = Run.objects.create(
        scenario=scenario,
        kind="sweep",
        status=RunStatus.SUCCEEDED,
        summary={"points": points, "knee_gpus": 16},
    )
    scaling = Run.objects.create(
        scenario=scenario,
        kind="sweep",
        status=RunStatus.SUCCEEDED,
        summary={"points": points[:2], "knee_gpus": 16},
    )
    client.force_login(user)
    url = reverse("scenarios:compare") + f"?runs={step.pk},{search.pk},{knee.pk},{scaling.pk}"
    rows = {row.label: row for row in client.get(url).context["rows"]}
    assert [c.text for c in rows["Step time"].cells] == ["2.000 s", "1.600 s", "—", "—"]
    assert rows["Step time"].cells[1].verdict == "better" and rows["MFU"].cells[1].delta_text == "+25 %"
    assert [c.text for c in rows["Best layout"].cells][1] == "tp4 pp1 dp16 · mb1 · none"
    assert [c.text for c in rows["Adding GPUs stops paying at"].cells][2:] == ["16 GPUs", "—"]
    assert [c.text for c in rows["Still scaling at the largest size tried"].cells][2:] == ["—", "16 GPUs"]
    assert run_headline(knee) == "16 GPUs"  # what run lists show: the knee, not the point count


def test_new_scenario_without_a_design_lets_the_user_choose_one(client, user, design):
    client.force_login(user)
    response = client.get(reverse("scenarios:scenario-new"))
    assert response.status_code == 200
    html = response.content.decode()
    assert design.name in html
    assert f"?design={design.pk}" in html


def test_the_scenario_form_is_the_scenario_formats_own_declarations(client, user, design):
    """Every web field of the format has its input, with the format's label and path; nothing else."""
    from scenarios.forms import FIELD_PATHS, FORM_SECTIONS

    declared = {f"{s.path}.{f.key}": f for s in FORM_SECTIONS for f in s.fields if f.web}
    assert set(FIELD_PATHS.values()) == set(declared)
    client.force_login(user)
    html = client.get(reverse("scenarios:scenario-new") + f"?design={design.pk}").content.decode()
    for name, path in FIELD_PATHS.items():
        assert f'data-path="{path}"' in html, path
        assert f">{declared[path].label}</label>" in _field_block(html, name), path


def test_the_form_and_the_file_accept_the_same_what_if(client, user, design):
    """The form's "Servers in the cluster" is the file's what_if.nodes: an import keeps it."""
    client.force_login(user)
    text = f"""
version: 1
name: sized
cluster: {{generator: rail-optimized, server: dgx-h100, nodes: {NODES}}}
job:
  model: {{layers: 24, hidden: 2048, heads: 16, vocab: 51200, seq_len: 2048}}
  global_batch: 64
  micro_batch: 2
  parallel: {{tp: 8, pp: 1, dp: {2 * NODES}}}
what_if: {{nodes: {2 * NODES}, spine_capacity_scale: 0.5}}
"""
    response = client.post(reverse("scenarios:scenario-import"), {"design": design.pk, "text": text})
    assert response.status_code == 302, response.content.decode()[-2000:]
    imported = Scenario.objects.get(name="sized")
    assert imported.what_if == {"nodes": 2 * NODES, "spine_capacity_scale": 0.5}
    form_html = client.get(imported.get_absolute_url()).content.decode()
    assert f'name="what_if_nodes" value="{2 * NODES}"' in form_html


def test_the_node_limit_is_the_fabrics_own_and_stands_next_to_its_field(client, user, design):
    client.force_login(user)
    response = client.post(
        reverse("scenarios:scenario-new") + f"?design={design.pk}",
        _form_data(what_if_nodes="100000", dp="100000", global_batch="400000"),
    )
    assert response.status_code == 400
    block = _field_block(response.content.decode(), "what_if_nodes")
    assert "has-error" in block and "dgx-h100 nodes fit a 3-tier fabric" in block


def test_run_page_draws_the_hall_a_what_if_builds(client, user, scenario):
    """A what-if with twice the servers is drawn on the hall it builds, not the design's."""
    job = default_job(gpus=NODES * 2 * 8)
    what_if = {"nodes": NODES * 2}
    bigger = scenario_create(design=scenario.design, name="Twice", job=job, what_if=what_if, user=user)
    run = _succeeded_run(bigger, step_time_s=1.0, racks_aligned=False)
    same = _succeeded_run(scenario, step_time_s=1.0)
    client.force_login(user)
    plan = client.get(run.get_absolute_url()).context["floor_plan"]
    design_plan = client.get(same.get_absolute_url()).context["floor_plan"]
    assert plan["what_if"] and "what_if" not in design_plan
    assert len(plan["racks"]) > len(design_plan["racks"])
    assert {r["kind"] for r in plan["racks"]} == {0, 1} and all(r["id"] is None for r in plan["racks"])
    assert set(plan["metrics"]) >= {"link_util", "slowdown"}


def test_scenario_list_and_design_panel_are_paged(client, user, scenario):
    from scenarios.views.designs import PANEL_RUNS_PER_PAGE, PANEL_SCENARIOS_PER_PAGE
    from scenarios.views.scenarios import SCENARIOS_PER_PAGE

    for i in range(SCENARIOS_PER_PAGE):
        scenario_create(design=scenario.design, name=f"S{i}", job=scenario.job, what_if={}, user=user)
    for _ in range(PANEL_RUNS_PER_PAGE + 2):
        _succeeded_run(scenario, step_time_s=1.0)
    client.force_login(user)
    first = client.get(reverse("scenarios:scenario-list"))
    assert len(first.context["page"].object_list) == SCENARIOS_PER_PAGE
    html = first.content.decode()
    assert f"1–{SCENARIOS_PER_PAGE} of {SCENARIOS_PER_PAGE + 1}" in html
    assert 'href="?page=2"' in html
    second = client.get(reverse("scenarios:scenario-list") + "?page=2")
    assert [s.name for s in second.context["page"]] == ["Baseline"]  # the oldest
    assert second.context["page"][0].run_count == PANEL_RUNS_PER_PAGE + 2
    only = client.get(reverse("scenarios:scenario-list") + f"?design={scenario.design.pk}").context["design"]
    assert only == scenario.design
    panel = reverse("scenarios:design-panel", args=[scenario.design.pk])
    html = client.get(panel).content.decode()
    assert html.count('<tr><td><a href="/scenarios/') == PANEL_SCENARIOS_PER_PAGE
    assert 'href="?runs_page=2" data-panel-page' in html
    older = client.get(panel + "?runs_page=2").context["runs"]
    assert len(older.object_list) == 2


def test_apply_this_layout_saves_a_what_if_scenario_with_it(client, user, scenario):
    best = {
        "tp": 4,
        "pp": 2,
        "dp": 8,
        "cp": 1,
        "ep": 1,
        "vpp": 1,
        "micro_batch": 2,
        "recompute": "selective",
        "zero": 1,
        "step_time_s": 0.5,
        "mfu": 0.5,
        "memory_gib_per_gpu": 20.0,
        "breakdown": {"compute": 0.4},
    }
    own = {**best, "tp": 8, "pp": 1, "step_time_s": 0.6, "breakdown": {"compute": 0.4, "tp": 0.2}}
    search = Run.objects.create(
        scenario=scenario, kind="search", status=RunStatus.SUCCEEDED, summary={"best": [best], "own": own}
    )
    client.force_login(user)
    html = client.get(search.get_absolute_url()).content.decode()
    assert "data-search-results" in html and 'data-apply-layout="0"' in html
    assert "-0.200 s Tensor-parallel comm." in html and "-17 %" in html
    response = client.post(reverse("scenarios:search-apply", args=[search.pk]), {"layout": "0"})
    applied = Scenario.objects.exclude(pk=scenario.pk).get()
    assert response["Location"] == applied.get_absolute_url()
    assert applied.job["parallel"] == {"tp": 4, "pp": 2, "dp": 8}
    assert (applied.job["micro_batch"], applied.job["recompute"], applied.job["zero"]) == (2, "selective", 1)
    assert applied.job["model"] == scenario.job["model"] and "tp4 pp2 dp8" in applied.name
    response = client.post(reverse("scenarios:search-apply", args=[search.pk]), {"layout": "7"})
    assert response.status_code == 302 and Scenario.objects.count() == 2


def test_model_presets_fill_the_form_and_expand_in_the_file_format(client, user, design):
    from scenarios.services import scenario_from_yaml
    from scenarios.sim.format.presets import MODEL_PRESETS

    client.force_login(user)
    html = client.get(reverse("scenarios:scenario-new") + f"?design={design.pk}").content.decode()
    for label in ("GPT-3 175B", "Llama 3 8B", "Llama 3 70B", "Llama 3 405B", "Mixtral 8×7B", "DeepSeek-V3"):
        assert label in html, label
    assert 'id="model-presets"' in html and "Llama 3 Herd of Models" in html
    assert all(p.source for p in MODEL_PRESETS.values())
    text = f"""
version: 1
name: preset file
cluster: {{generator: rail-optimized, server: dgx-h100, nodes: {NODES}}}
job:
  model: {{preset: llama3-70b, seq_len: 4096}}
  global_batch: 64
  micro_batch: 1
  parallel: {{tp: 8, pp: 4, dp: 2}}
what_if: {{nodes: {NODES}}}
"""
    scenario = scenario_from_yaml(text=text, design=design, user=user)
    assert scenario.job["model"]["preset"] == "llama3-70b" and scenario.what_if == {"nodes": NODES}
    page = client.get(scenario.get_absolute_url())
    assert page.status_code == 200
    form = page.context["form"]
    assert form["preset"].value() == "llama3-70b" and str(form["seq_len"].value()) == "4096"
    from scenarios.sim.format.scenario import _parse_model

    model = _parse_model(scenario.job["model"])
    assert (model.layers, model.hidden, model.kv_heads, model.seq_len) == (80, 8192, 8, 4096)


def test_every_page_of_the_app_is_a_module_of_the_views_package():
    """The scenarios app's doors live in scenarios/views/ by concern, under their URL names."""
    from scenarios import urls

    modules = {pattern.name: pattern.callback.__module__ for pattern in urls.urlpatterns}
    assert set(modules.values()) == {
        "scenarios.views.scenarios",
        "scenarios.views.runs",
        "scenarios.views.compare",
        "scenarios.views.designs",
        "scenarios.views.kind_data",
    }
    assert modules["run-kind-data"] == modules["run-array"] == "scenarios.views.kind_data"
    assert modules["design-import"] == modules["design-floor-plan"] == "scenarios.views.designs"
    assert modules["scenario-delete"] == "scenarios.views.scenarios"
    assert modules["run-delete"] == modules["search-apply"] == "scenarios.views.runs"


# --- provenance ---------------------------------------------------------------------------------


def _finished_run(scenario, user, kind="step"):
    from scenarios.services import run_execute, run_start

    run = run_start(scenario=scenario, kind=kind, user=user)
    assert run_execute(run_id=run.pk) == "succeeded"
    return Run.objects.get(pk=run.pk)


def _recorded_run(scenario, user, kind="step", **summary):
    """A run started (so its inputs are kept) and marked succeeded with ``summary``."""
    from scenarios.services import run_start

    run = run_start(scenario=scenario, kind=kind, user=user)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED, progress=1.0, summary=summary)
    return Run.objects.get(pk=run.pk)


def test_run_page_says_what_it_ran_with_and_a_rename_or_catalog_edit_changes_nothing(client, user, scenario):
    import yaml

    from scenarios.services import scenario_update
    from tests.scenarios.test_provenance import edit_gpu_bf16

    run = _finished_run(scenario, user)
    client.force_login(user)
    html = client.get(run.get_absolute_url()).content.decode()
    digest = run.inputs["catalog_digest"]
    assert "data-ran-with" in html and f"design v{run.design_version}" in html and digest[:12] in html
    assert "data-unchanged" in html and "data-rerun" in html
    state_before = client.get(reverse("scenarios:run-state", args=[run.pk])).json()
    scenario_update(scenario=scenario, user=user, name="Renamed afterwards")
    edit_gpu_bf16(500.0)
    html = client.get(run.get_absolute_url()).content.decode()
    assert "<h1>Baseline · Step time" in html and "Renamed afterwards" in html  # the diff names today's
    assert 'data-changed="design"' in html and 'data-changed="catalog"' in html
    assert 'data-changed="scenario"' in html and "data-scenario-diff" in html
    assert reverse("topology:design-history", args=[scenario.design_id]) in html
    state_after = client.get(reverse("scenarios:run-state", args=[run.pk])).json()
    assert state_after["scenario"]["name"] == "Baseline" and state_after["summary"] == state_before["summary"]
    yaml_response = client.get(reverse("scenarios:run-scenario-yaml", args=[run.pk]))
    assert yaml_response["Content-Disposition"].endswith(f'run-{run.pk}-baseline.yaml"')
    document = yaml.safe_load(yaml_response.content)
    assert document["name"] == "Baseline" and document == run.inputs["scenario"]


def test_rerun_button_starts_the_run_as_it_ran(client, user, scenario):
    run = _finished_run(scenario, user)
    client.force_login(user)
    response = client.post(reverse("scenarios:run-rerun", args=[run.pk]))
    again = Run.objects.exclude(pk=run.pk).get()
    assert response.status_code == 302 and response["Location"] == again.get_absolute_url()
    assert again.inputs["rerun_of"] == run.pk and again.inputs["scenario"] == run.inputs["scenario"]


def test_rerun_button_is_not_offered_to_a_viewer(client, user, scenario, django_user_model):
    from teams.models import TeamMembership
    from teams.permissions import ROLE_ACTIONS, RUN, VIEW

    run = _finished_run(scenario, user)
    viewer = django_user_model.objects.create_user("vic")
    role = next(r for r, granted in ROLE_ACTIONS.items() if VIEW in granted and RUN not in granted)
    TeamMembership.objects.create(user=viewer, team=scenario.design.team, role=role)
    client.force_login(viewer)
    html = client.get(run.get_absolute_url()).content.decode()
    assert "data-rerun" not in html and "data-run-today" not in html and "data-ran-with" in html
    assert client.post(reverse("scenarios:run-rerun", args=[run.pk])).status_code == 403
    assert client.post(reverse("scenarios:run-again", args=[run.pk])).status_code == 403


def test_run_page_of_a_run_from_before_provenance_says_so(client, user, scenario):
    run = _succeeded_run(scenario, step_time_s=1.0)
    client.force_login(user)
    response = client.get(run.get_absolute_url())
    assert response.status_code == 200
    assert "inputs not recorded: run before provenance was kept" in response.content.decode()
    assert client.get(reverse("scenarios:run-scenario-yaml", args=[run.pk])).status_code == 404


def test_compare_shows_every_differing_setting_from_the_runs_inputs(client, user, scenario):
    from scenarios.services import scenario_duplicate, scenario_update

    spares = scenario_duplicate(scenario=scenario, user=user)
    scenario_update(scenario=spares, user=user, failures={"spare_servers": 2, "trials": 50})
    scenario_update(scenario=scenario, user=user, failures={"trials": 50}, power={"pue": 1.3})
    a, b = (
        _recorded_run(scenario, user, "failures", ettr=0.9),
        _recorded_run(spares, user, "failures", ettr=0.8),
    )
    scenario_update(scenario=scenario, user=user, name="Renamed", failures={"trials": 50, "spare_servers": 2})
    from tests.scenarios.test_provenance import edit_gpu_bf16

    edit_gpu_bf16(500.0)
    client.force_login(user)
    response = client.get(reverse("scenarios:compare") + f"?runs={a.pk},{b.pk}&baseline={b.pk}")
    rows = {row.label: row for row in response.context["rows"]}
    assert response.context["baseline"] == b
    spare = next(row for label, row in rows.items() if "spare" in label.lower())
    # As they ran: a held the default spares (at most the job's 8 servers), b 2.
    assert spare.differs and [c.text for c in spare.cells] == ["8", "2"]
    pue = next(row for label, row in rows.items() if "PUE" in label)
    assert pue.differs and pue.cells[0].text == "1.3" and pue.cells[1].text != "—"
    assert [c.text for c in rows["Server type"].cells] == ["dgx-h100 (design)"] * 2
    digests = [c.text for c in rows["Catalog rows (sha256)"].cells]
    assert digests == [r.inputs["catalog_digest"][:12] + "…" for r in (a, b)]  # not today's catalog
    html = response.content.decode()
    assert "Renamed" not in html and "Baseline" in html


def test_compare_link_keeps_the_run_it_came_from_as_baseline(client, user, scenario):
    mine = _succeeded_run(scenario, step_time_s=1.0)
    other = _succeeded_run(scenario, step_time_s=2.0)
    client.force_login(user)
    html = client.get(reverse("scenarios:compare") + f"?runs={mine.pk}&baseline={mine.pk}").content.decode()
    assert f'name="baseline" value="{mine.pk}"' in html
    response = client.get(
        reverse("scenarios:compare") + f"?runs={other.pk}&runs={mine.pk}&baseline={mine.pk}"
    )
    assert response.context["baseline"] == mine


def test_compare_marks_a_run_from_before_provenance(client, user, scenario):
    legacy = _succeeded_run(scenario, step_time_s=1.0)
    recorded = _finished_run(scenario, user)
    client.force_login(user)
    response = client.get(reverse("scenarios:compare") + f"?runs={legacy.pk},{recorded.pk}")
    assert response.content.decode().count("data-not-recorded") == 1
    rows = {row.label: row for row in response.context["rows"]}
    digest = rows["Catalog rows (sha256)"].cells
    assert digest[0].text == "not recorded" and digest[1].text == recorded.inputs["catalog_digest"][:12] + "…"


def test_compare_labels_the_design_cluster_in_words(client, user, scenario):
    a, b = _finished_run(scenario, user), _finished_run(scenario, user)
    client.force_login(user)
    labels = [
        row.label for row in client.get(reverse("scenarios:compare") + f"?runs={a.pk},{b.pk}").context["rows"]
    ]
    assert "Design: server type" in labels and "Design: NIC speed" in labels


def test_run_again_with_todays_inputs_is_the_ordinary_run(client, user, scenario):
    from scenarios.services import run_start
    from tests.scenarios.test_provenance import edit_gpu_bf16

    run = run_start(scenario=scenario, kind="sweep", user=user)  # its inputs are kept at start
    edit_gpu_bf16(500.0)
    client.force_login(user)
    assert "data-run-today" in client.get(run.get_absolute_url()).content.decode()
    response = client.post(reverse("scenarios:run-again", args=[run.pk]))
    today = Run.objects.exclude(pk=run.pk).get()
    assert response["Location"] == today.get_absolute_url()
    assert today.kind == "sweep" and today.options == run.options and "rerun_of" not in today.inputs
    assert today.inputs["catalog"]["gpus"][0]["peak_tflops_bf16"] == 500.0
    assert today.inputs["catalog_digest"] != run.inputs["catalog_digest"]


def test_apply_this_layout_applies_it_to_the_job_as_it_ran(client, user, scenario):
    from scenarios.services import run_start, scenario_update

    search = run_start(scenario=scenario, kind="search", user=user)
    best = {
        "tp": 4,
        "pp": 2,
        "dp": 8,
        "cp": 1,
        "ep": 1,
        "vpp": 1,
        "micro_batch": 2,
        "recompute": "none",
        "zero": 1,
    }
    Run.objects.filter(pk=search.pk).update(status=RunStatus.SUCCEEDED, summary={"best": [best]})
    ran_batch = scenario.job["global_batch"]
    scenario_update(
        scenario=scenario, user=user, name="Edited later", job={**scenario.job, "global_batch": ran_batch * 2}
    )
    client.force_login(user)
    client.post(reverse("scenarios:search-apply", args=[search.pk]), {"layout": "0"})
    applied = Scenario.objects.exclude(pk=scenario.pk).get()
    assert applied.job["global_batch"] == ran_batch and applied.name.startswith("Baseline · tp4 pp2 dp8")


def test_run_page_shows_what_the_result_says_of_its_limits(client, user, scenario):
    """A failures run outside the closed form's regime says so on its page (it only sat in the
    summary JSON); a run without warnings shows no empty box."""
    warned = Run.objects.create(
        scenario=scenario,
        kind="failures",
        status=RunStatus.SUCCEEDED,
        progress=1.0,
        summary={"etr": 0.8, "warnings": ["closed form: its ETTR 0.900 differs from the simulated 0.800"]},
    )
    client.force_login(user)
    html = client.get(warned.get_absolute_url()).content.decode()
    warning = "closed form: its ETTR 0.900 differs from the simulated 0.800"
    assert f'<ul class="warnings" data-warnings><li>{warning}</li>' in html
    plain = _succeeded_run(scenario, step_time_s=1.0)
    assert (
        '<ul class="warnings" data-warnings hidden></ul>'
        in client.get(plain.get_absolute_url()).content.decode()
    )
