"""Split runs computed through the services in this process (the chunk tasks are queued to a
queue no worker reads): chunks count once, a late chunk is merged, waiting chunks are never
judged lost, and bad input inside a run is logged as one line."""

from __future__ import annotations

import logging
import uuid

import pytest

from scenarios import services
from scenarios.choices import ChunkState, RunStatus
from scenarios.models import Run, RunChunk

SWEEP = {"nodes": [1, 2, 4], "chunk_size": 1}


@pytest.fixture
def unread_queue():
    """Chunk tasks go to a queue of this test only and are dropped afterwards."""
    from twin.celery import app

    name, default = f"unread-{uuid.uuid4().hex[:8]}", app.conf.task_default_queue
    app.conf.task_default_queue = name
    yield name
    app.conf.task_default_queue = default
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(name)


def split_sweep(scenario) -> Run:
    # run_start cleans the options; its on-commit enqueue never fires inside the test's transaction
    run = services.run_start(scenario=scenario, kind="sweep", user=scenario.created_by, options=SWEEP)
    assert services.run_execute(run_id=run.pk) == "split"
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.chunks.count() == len(SWEEP["nodes"])
    return run


def test_a_split_run_waits_for_its_chunks_and_says_so(scenario, unread_queue):
    run = split_sweep(scenario)
    assert run.stage.startswith("0/3 chunks done, waiting for 3")
    assert services.run_chunk_compute(run_id=run.pk, index=0) == "waiting"
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and "1/3 chunks done, waiting for 2" in run.stage


def test_a_redelivered_chunk_that_completed_counts_once(scenario, unread_queue):
    run = split_sweep(scenario)
    assert services.run_chunk_compute(run_id=run.pk, index=1) == "waiting"
    assert services.run_chunk_compute(run_id=run.pk, index=1) == "skipped"  # the redelivered copy
    assert RunChunk.objects.get(run=run, index=1).attempts == 1
    services.run_chunk_compute(run_id=run.pk, index=0)
    assert services.run_chunk_compute(run_id=run.pk, index=2) == "succeeded"
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    assert [p["nodes"] for p in run.summary["points"]] == SWEEP["nodes"]


def test_a_late_chunk_is_merged_and_a_waiting_chunk_is_never_judged_lost(scenario, unread_queue):
    run = split_sweep(scenario)
    services.run_chunk_compute(run_id=run.pk, index=0)
    services.run_chunk_compute(run_id=run.pk, index=2)
    Run.objects.filter(pk=run.pk).update(heartbeat=run.started.replace(year=2000))  # no beat for years
    report = services.runs_reap_stale(stale_after=0.0)
    assert run.pk not in report.failed + report.requeued + report.merges_queued
    assert services.run_chunk_compute(run_id=run.pk, index=1) == "succeeded"  # arrives last
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and len(run.summary["points"]) == 3


def test_a_chunk_lost_with_its_worker_is_claimed_again(scenario, unread_queue):
    from datetime import timedelta

    from django.utils import timezone

    run = split_sweep(scenario)
    long_ago = timezone.now() - timedelta(hours=1)
    RunChunk.objects.filter(run=run, index=0).update(state=ChunkState.RUNNING, heartbeat=long_ago, attempts=1)
    assert services.runs_reap_stale(stale_after=60).chunks_requeued == [(run.pk, 0)]
    assert services.run_chunk_compute(run_id=run.pk, index=0) == "waiting"
    assert RunChunk.objects.get(run=run, index=0).attempts == 2


def test_a_validation_failure_inside_a_run_is_logged_as_one_line(scenario, caplog):
    from scenarios.models import Scenario

    broken = Scenario.objects.create(
        design=scenario.design, name="broken", job={**scenario.job, "parallel": {"tp": 3, "pp": 1, "dp": 4}}
    )
    run = Run.objects.create(scenario=broken, kind="step")
    with caplog.at_level(logging.INFO, logger="scenarios.services.execution"):
        assert services.run_execute(run_id=run.pk) == "failed"
    run.refresh_from_db()
    assert run.error.startswith("job.parallel.tp: must divide heads (16) (got 3)")
    records = [r for r in caplog.records if r.name == "scenarios.services.execution"]
    assert len(records) == 1, [r.getMessage() for r in records]
    (record,) = records
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "\n" not in record.getMessage() and record.getMessage().startswith(
        f"run {run.pk} failed: job.parallel.tp"
    )


# --- what a run's tasks share in one worker process --------------------------------------------

#: 1,500 trials: three blocks of 500, so three chunk tasks.
FAILURES = {"trials": 1500, "window_days": 20, "spare_servers": 2, "seed": 3}
POWER = {"window_s": 4, "events": ["checkpoint"]}


def counted(monkeypatch, target: str) -> list:
    """Record every call of ``module.function`` (``target``), still calling it."""
    module_name, name = target.rsplit(".", 1)
    module = __import__(module_name, fromlist=[name])
    original, calls = getattr(module, name), []

    def counting(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


def test_an_unsplit_failure_run_and_a_power_run_check_their_scenario_once(scenario, monkeypatch):
    services.scenario_update(scenario=scenario, user=scenario.created_by, failures=FAILURES, power=POWER)
    failures = services.run_start(
        scenario=scenario, kind="failures", user=scenario.created_by, options={"chunks": 1}
    )
    power = services.run_start(scenario=scenario, kind="power", user=scenario.created_by)
    checks = counted(monkeypatch, "scenarios.sim.format.scenario.check_scenario")
    assert services.run_execute(run_id=failures.pk) == "succeeded"
    assert len(checks) == 1  # the predictions on the healthy and the degraded fabrics reuse it
    assert services.run_execute(run_id=power.pk) == "succeeded"
    assert len(checks) == 2  # the power run's own, once


def split_failures(scenario) -> Run:
    services.scenario_update(scenario=scenario, user=scenario.created_by, failures=FAILURES)
    run = services.run_start(
        scenario=scenario, kind="failures", user=scenario.created_by, options={"chunks": 3}
    )
    return run


def test_a_failure_run_checks_its_scenario_and_builds_its_study_once_per_worker(
    scenario, unread_queue, monkeypatch
):
    run = split_failures(scenario)
    checks = counted(monkeypatch, "scenarios.sim.format.scenario.check_scenario")
    studies = counted(monkeypatch, "scenarios.sim.studies.failure_study")
    assert services.run_execute(run_id=run.pk) == "split"
    assert run.chunks.count() == 3
    assert [services.run_chunk_compute(run_id=run.pk, index=i) for i in range(3)] == [
        "waiting",
        "waiting",
        "succeeded",
    ]
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and run.summary["trials"] == 1500
    # The split's task validates the scenario; its step predictions (healthy and degraded), the
    # three chunks and the merge reuse that validation and the study built at the split.
    assert len(checks) == 1
    assert len(studies) == 1


def test_a_chunk_after_a_scenario_change_builds_its_context_and_study_again(
    scenario, unread_queue, monkeypatch
):
    run = split_failures(scenario)
    studies = counted(monkeypatch, "scenarios.sim.studies.failure_study")
    services.run_execute(run_id=run.pk)
    services.run_chunk_compute(run_id=run.pk, index=0)
    assert len(studies) == 1
    changed = {**FAILURES, "spare_servers": 1}
    services.scenario_update(scenario=scenario, user=scenario.created_by, failures=changed)
    services.run_chunk_compute(run_id=run.pk, index=1)
    assert len(studies) == 2  # the cached context was keyed by the scenario as saved
