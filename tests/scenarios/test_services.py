"""Scenario and run services: validation with field paths, access, YAML, start/cancel/reap."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml
from django.core.exceptions import ValidationError
from django.utils import timezone

from scenarios import services
from scenarios.choices import RunStatus
from scenarios.models import Run
from teams.permissions import NotFound


def test_scenario_create_saves_job_and_overrides(design, user, job):
    scenario = services.scenario_create(
        design=design, name="  baseline ", job=job, what_if={"straggler_spread": 0.05}, user=user
    )
    assert scenario.name == "baseline"
    assert scenario.what_if == {"straggler_spread": 0.05}
    assert scenario.created_by == user


@pytest.mark.parametrize(
    ("change", "field", "text"),
    [
        (lambda j, w: j["parallel"].update(tp=3), "job.parallel.tp", "must divide heads"),
        (
            lambda j, w: j["parallel"].update(dp=2),
            "job.parallel",
            "must equal the cluster's GPUs (4 nodes × 8 = 32)",
        ),
        (lambda j, w: j["model"].update(layers=-1), "job.model.layers", "≥ 1"),
        (lambda j, w: w.update(nic_gbps=-5), "what_if.nic_gbps", "> 0"),
        (lambda j, w: w.update(server="no-such-server"), "what_if.server", "no-such-server"),
        (lambda j, w: w.update(nodes=0), "what_if.nodes", "≥ 1"),
        (lambda j, w: w.update(nodes=8), "job.parallel", "(8 nodes × 8 = 64)"),
        (lambda j, w: w.update(bogus=1), "what_if.bogus", "unknown field"),
    ],
)
def test_scenario_create_names_the_field_and_the_limit(design, user, job, change, field, text):
    what_if = {}
    change(job, what_if)
    with pytest.raises(ValidationError) as caught:
        services.scenario_create(design=design, name="bad", job=job, what_if=what_if, user=user)
    errors = caught.value.message_dict
    assert field in errors, errors
    assert text in " ".join(errors[field])


def test_scenario_name_limit_is_the_files_and_the_columns(design, user, job):
    """A scenario's name has one limit (``schema.MAX_NAME_LENGTH``): the file's field, the saved
    scenario's column and the editor's input; past it the service names the field and the limit."""
    from scenarios.forms import ScenarioForm
    from scenarios.models import Scenario
    from scenarios.sim.format.schema import MAX_NAME_LENGTH, TOP

    assert TOP.field("name").hi == Scenario._meta.get_field("name").max_length == MAX_NAME_LENGTH
    assert ScenarioForm().fields["name"].max_length == MAX_NAME_LENGTH
    assert services.scenario_create(design=design, name="n" * MAX_NAME_LENGTH, job=job, user=user).pk
    with pytest.raises(ValidationError) as caught:
        services.scenario_create(design=design, name="n" * (MAX_NAME_LENGTH + 1), job=job, user=user)
    assert caught.value.message_dict == {
        "name": [f"name: must be at most {MAX_NAME_LENGTH} characters (got {MAX_NAME_LENGTH + 1})"]
    }


def test_scenario_create_refuses_a_design_of_another_team(design, outsider, job):
    with pytest.raises(NotFound):  # another team's design does not exist for them
        services.scenario_create(design=design, name="x", job=job, what_if={}, user=outsider)


def test_scenario_slow_nodes_accept_node_names(scenario, user):
    services.scenario_update(scenario=scenario, user=user, what_if={"slow_nodes": ["node00002", 0]})
    data = services.scenario_to_dict(scenario=scenario)
    assert data["what_if"]["slow_nodes"] == [2, 0]
    with pytest.raises(ValidationError, match="unknown node"):
        services.scenario_update(scenario=scenario, user=user, what_if={"slow_nodes": ["node99999"]})


def test_scenario_nodes_override_is_a_file_field_that_sizes_the_cluster(scenario, user, job):
    from scenarios.sim.format.scenario import parse_scenario

    job["parallel"]["dp"] = 8
    services.scenario_update(scenario=scenario, user=user, job=job, what_if={"nodes": 8})
    data = services.scenario_to_dict(scenario=scenario)
    assert data["cluster"]["nodes"] == 4 and data["what_if"]["nodes"] == 8  # the form's field, in the file
    cluster = parse_scenario(data).effective_cluster()
    assert cluster.nodes == 8 and cluster.tiers is None  # sized by the generator at 8 nodes


def test_scenario_duplicate_picks_a_fresh_name(scenario, user):
    first = services.scenario_duplicate(scenario=scenario, user=user)
    second = services.scenario_duplicate(scenario=scenario, user=user)
    assert first.name == "baseline (what-if)"
    assert second.name == "baseline (what-if) 2"
    assert first.job == scenario.job and first.pk != scenario.pk


def test_scenario_yaml_roundtrip_runs_as_a_scenario_file(scenario, user):
    from scenarios.sim.format.scenario import parse_scenario

    text = services.scenario_to_yaml(scenario=scenario)
    parsed = parse_scenario(yaml.safe_load(text))
    assert parsed.cluster.nodes == 4 and parsed.cluster.server == "dgx-h100"
    copy = services.scenario_from_yaml(
        text=text.replace("baseline", "imported"), design=scenario.design, user=user
    )
    assert copy.name == "imported" and copy.job == scenario.job and copy.what_if == {}


def test_scenario_from_yaml_without_design_generates_one(catalog_db, team, user, job):
    text = yaml.safe_dump(
        {
            "version": 1,
            "name": "fresh",
            "cluster": {"generator": "rail-optimized", "server": "dgx-h100", "nodes": 4},
            "job": job,
        }
    )
    scenario = services.scenario_from_yaml(text=text, design=None, user=user)
    assert scenario.design.team == team
    assert scenario.design.parameters["nodes"] == 4


@pytest.mark.parametrize("name_length", [112, 120])
def test_scenario_from_yaml_names_its_generated_design_within_the_name_column(
    catalog_db, team, user, job, name_length
):
    """The design a scenario file's cluster generates is called "<name> cluster", or "... 2" when
    the team has that one, cut to fit the name column: a 112-character scenario name (so
    "<name> cluster" is 120) or a 120-character one gives a valid name, never an over-long one
    (a DataError on PostgreSQL)."""
    from tests.scenarios.conftest import make_design
    from topology.models import Design

    max_length = Design._meta.get_field("name").max_length
    name = "n" * name_length
    base = f"{name} cluster"
    taken = make_design(team=team, user=user, name=base[:max_length])
    text = yaml.safe_dump(
        {
            "version": 1,
            "name": name,
            "cluster": {"generator": "rail-optimized", "server": "dgx-h100", "nodes": 4},
            "job": job,
        }
    )
    design = services.scenario_from_yaml(text=text, design=None, user=user).design
    assert len(design.name) <= max_length
    assert design.name == f"{base[: max_length - 2]} 2" and design.name != taken.name
    assert design.team == team
    design.full_clean()


def test_scenario_from_yaml_reports_bad_yaml_and_bad_fields(design, user):
    with pytest.raises(ValidationError) as caught:
        services.scenario_from_yaml(text="a: [", design=design, user=user)
    assert "yaml" in caught.value.message_dict
    with pytest.raises(ValidationError) as caught:
        services.scenario_from_yaml(text="version: 1\nname: x\ncluster: {}\n", design=design, user=user)
    assert "job" in caught.value.message_dict


def test_run_start_enqueues_after_commit(scenario, user, django_capture_on_commit_callbacks, monkeypatch):
    enqueued = []
    from scenarios import queue

    monkeypatch.setattr(queue, "enqueue_run", lambda run_id, task_id: enqueued.append((run_id, task_id)))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = services.run_start(scenario=scenario, kind="step", user=user)
    assert enqueued == []  # nothing leaves before the commit
    for callback in callbacks:
        callback()
    assert enqueued == [(run.pk, run.task_id)]
    assert run.status == RunStatus.QUEUED and run.design_version == scenario.design.version


def test_run_start_validates_kind_and_options(scenario, user):
    with pytest.raises(ValidationError) as caught:
        services.run_start(scenario=scenario, kind="nope", user=user)
    assert "kind" in caught.value.message_dict
    with pytest.raises(ValidationError) as caught:
        services.run_start(scenario=scenario, kind="sweep", user=user, options={"nodes": [0]})
    assert "options.nodes" in caught.value.message_dict
    with pytest.raises(ValidationError) as caught:
        services.run_start(scenario=scenario, kind="step", user=user, options={"x": 1})
    assert "options.x" in caught.value.message_dict


def test_run_start_refuses_outsiders(scenario, outsider):
    with pytest.raises(NotFound):  # another team's design does not exist for them
        services.run_start(scenario=scenario, kind="step", user=outsider)


def test_run_execute_computes_a_step_run_and_stores_arrays(scenario, user):
    from scenarios.storage import run_array

    run = Run.objects.create(scenario=scenario, kind="step", created_by=user)
    assert services.run_execute(run_id=run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and run.progress == 1.0
    assert run.summary["step_time_s"] > 0 and run.summary["racks_aligned"] is True
    links = run_array(run=run, name="link_utilization")
    racks = run_array(run=run, name="rack_link_utilization")
    assert links.size > 0 and racks.size == scenario.design.halls.get().racks.count()
    assert racks.max() == pytest.approx(links.max(), rel=1e-6)


def test_run_execute_saves_the_error_message(scenario, user):
    from scenarios.models import Scenario

    broken = Scenario.objects.create(
        design=scenario.design, name="broken", job={**scenario.job, "parallel": {"tp": 3, "pp": 1, "dp": 4}}
    )
    run = Run.objects.create(scenario=broken, kind="step")
    assert services.run_execute(run_id=run.pk) == "failed"
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert "job.parallel.tp: must divide heads" in run.error


def test_run_execute_skips_a_final_run(scenario, user):
    run = Run.objects.create(scenario=scenario, kind="step", status=RunStatus.CANCELLED)
    assert services.run_execute(run_id=run.pk) == "skipped"
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.summary == {}


def test_run_cancel_stops_an_active_run_only(scenario, user, monkeypatch):
    revoked = []
    from scenarios import queue

    monkeypatch.setattr(queue, "revoke", revoked.append)
    run = Run.objects.create(scenario=scenario, kind="step", task_id="t-1")
    services.run_cancel(run=run, user=user)
    assert run.status == RunStatus.CANCELLED and run.finished is not None
    assert revoked == ["t-1"]
    done = Run.objects.create(scenario=scenario, kind="step", status=RunStatus.SUCCEEDED)
    services.run_cancel(run=done, user=user)
    assert done.status == RunStatus.SUCCEEDED and revoked == ["t-1"]


def test_progress_callback_raises_once_the_run_is_cancelled(scenario):
    run = Run.objects.create(scenario=scenario, kind="step", status=RunStatus.RUNNING)
    progress = services.RunProgress(run)
    progress(0.5, "half")
    run.refresh_from_db()
    assert run.progress == 0.5 and run.stage == "half"
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
    with pytest.raises(services.RunCancelled):
        progress.check_cancelled()


def test_runs_reap_stale_requeues_started_runs_whose_lease_expired(
    scenario, django_capture_on_commit_callbacks
):
    now = timezone.now()
    stale = Run.objects.create(
        scenario=scenario,
        status=RunStatus.RUNNING,
        started=now,
        heartbeat=now - timedelta(seconds=120),
        attempts=1,
    )
    fresh = Run.objects.create(scenario=scenario, status=RunStatus.RUNNING, started=now, heartbeat=now)
    queued = Run.objects.create(scenario=scenario, status=RunStatus.QUEUED, created=now - timedelta(hours=2))
    report = services.runs_reap_stale(stale_after=60, now=now)
    assert report.requeued == [stale.pk] and report.failed == []
    stale.refresh_from_db()
    fresh.refresh_from_db()
    queued.refresh_from_db()
    assert stale.status == RunStatus.QUEUED and stale.stage.startswith("queued again")
    assert fresh.status == RunStatus.RUNNING and queued.status == RunStatus.QUEUED


def test_runs_reap_stale_fails_a_run_lost_max_attempts_times(scenario):
    now = timezone.now()
    doomed = Run.objects.create(
        scenario=scenario,
        status=RunStatus.RUNNING,
        started=now,
        heartbeat=now - timedelta(seconds=120),
        attempts=services.max_attempts(),
    )
    assert services.runs_reap_stale(stale_after=60, now=now).failed == [doomed.pk]
    doomed.refresh_from_db()
    assert doomed.status == RunStatus.FAILED and "worker lost" in doomed.error and "3 times" in doomed.error


def test_runs_reap_stale_leaves_queued_chunks_and_requeues_lost_ones(scenario):
    from scenarios.choices import ChunkState
    from scenarios.models import RunChunk

    now = timezone.now()
    old = now - timedelta(seconds=600)
    run = Run.objects.create(
        scenario=scenario, status=RunStatus.RUNNING, started=old, heartbeat=old, attempts=1
    )
    waiting = RunChunk.objects.create(run=run, index=0, state=ChunkState.QUEUED)
    lost = RunChunk.objects.create(run=run, index=1, state=ChunkState.RUNNING, heartbeat=old, attempts=1)
    live = RunChunk.objects.create(run=run, index=2, state=ChunkState.RUNNING, heartbeat=now, attempts=1)
    report = services.runs_reap_stale(stale_after=60, now=now)
    assert report.chunks_requeued == [(run.pk, 1)] and report.failed == report.requeued == []
    states = dict(RunChunk.objects.filter(run=run).values_list("index", "state"))
    assert states == {0: ChunkState.QUEUED, 1: ChunkState.QUEUED, 2: ChunkState.RUNNING}
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    assert waiting.index == 0 and lost.index == 1 and live.index == 2


def test_json_safe_replaces_non_finite_numbers():
    import numpy as np

    from utilities.jsonsafe import json_safe

    assert json_safe({"a": float("nan"), "b": (np.float32(1.5), np.inf)}) == {
        "a": None,
        "b": [1.5, None],
    }
