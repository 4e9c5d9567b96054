"""Tasks on a REAL Celery worker process (Redis broker, the test PostgreSQL database).

Covers: a run started through the service completes; a sweep split across chunks on the
worker equals the unsplit sweep; cancel stops the work; a task exception's message is saved; a
worker SIGKILLed mid-run leaves the run to the reaper, which queues it again for another worker.
"""

from __future__ import annotations

import time
import uuid

import pytest
from django.db import transaction

from scenarios import queue, services
from scenarios.choices import RunStatus
from scenarios.models import Run
from tests.scenarios.integration import Worker
from utilities.jsonsafe import json_safe

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

#: A sweep that keeps one worker busy for a few seconds (generating clusters up to 16,384 nodes).
SLOW_SWEEP = {"nodes": [2048, 3072, 4096, 6144, 8192, 12288, 16384], "batch": "scaled", "chunk_size": 64}


@pytest.fixture
def worker_scenario(transactional_db, catalog_db, team, user, job, celery_worker_process):
    from scenarios.services import scenario_create
    from tests.scenarios.conftest import make_design

    design = make_design(team=team, user=user)
    return scenario_create(design=design, name="on worker", job=job, what_if={}, user=user)


def wait_for(run: Run, statuses, timeout_s: float = 90.0, *, progress_above: float | None = None) -> Run:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in statuses and (progress_above is None or run.progress > progress_above):
            return run
        time.sleep(0.05)
    raise AssertionError(
        f"run {run.pk} still {run.status} ({run.progress:.2f}, {run.stage!r}) after {timeout_s} s"
    )


def start(scenario, user, kind="step", options=None) -> Run:
    with transaction.atomic():
        return services.run_start(scenario=scenario, kind=kind, user=user, options=options)


def test_worker_completes_a_step_run(worker_scenario, user):
    run = wait_for(start(worker_scenario, user), {RunStatus.SUCCEEDED, RunStatus.FAILED})
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.progress == 1.0 and run.summary["step_time_s"] > 0
    assert run.started and run.finished and run.heartbeat
    assert set(run.arrays.values_list("name", flat=True)) >= {"link_utilization", "rack_link_utilization"}


def test_worker_sweep_split_across_chunks_equals_the_unsplit_sweep(worker_scenario, user):
    from scenarios.kinds import RunContext, run_kind

    run = start(worker_scenario, user, "sweep", {"nodes": [1, 2, 3, 4, 8], "chunk_size": 1})
    run = wait_for(run, {RunStatus.SUCCEEDED, RunStatus.FAILED})
    assert run.status == RunStatus.SUCCEEDED, run.error
    reference = Run.objects.create(
        scenario=worker_scenario, kind="sweep", options=run.options, status="running"
    )
    unsplit = run_kind("sweep").execute(RunContext.load(reference), services.RunProgress(reference))
    assert run.summary == json_safe(unsplit.summary)
    assert len(run.summary["points"]) == 5


def test_worker_search_split_across_chunks_equals_the_unsplit_search(worker_scenario, user):
    from scenarios.kinds import RunContext, run_kind

    run = wait_for(start(worker_scenario, user, "search", {"chunks": 3, "top": 5}), {"succeeded", "failed"})
    assert run.status == RunStatus.SUCCEEDED, run.error
    reference = Run.objects.create(
        scenario=worker_scenario, kind="search", options=run.options, status="running"
    )
    unsplit = run_kind("search").execute(RunContext.load(reference), services.RunProgress(reference))
    assert run.summary == json_safe(unsplit.summary)


def test_worker_cancel_stops_the_work(worker_scenario, user):
    from celery.result import AsyncResult

    run = start(worker_scenario, user, "sweep", SLOW_SWEEP)
    wait_for(run, {RunStatus.RUNNING}, progress_above=0.0)
    services.run_cancel(run=run, user=user)
    outcome = AsyncResult(run.task_id).get(timeout=60)
    run.refresh_from_db()
    assert outcome == "cancelled"
    assert run.status == RunStatus.CANCELLED and run.summary == {}
    assert run.progress < 1.0 and not run.arrays.exists()


def test_worker_saves_the_message_of_a_task_exception(worker_scenario, user):
    from scenarios.models import Scenario

    broken = Scenario.objects.create(
        design=worker_scenario.design,
        name="broken",
        job={**worker_scenario.job, "parallel": {"tp": 3, "pp": 1, "dp": 4}},
    )
    run = Run.objects.create(scenario=broken, kind="step", task_id=str(uuid.uuid4()))
    queue.enqueue_run(run.pk, run.task_id)
    run = wait_for(run, {RunStatus.FAILED, RunStatus.SUCCEEDED})
    assert run.status == RunStatus.FAILED
    assert run.error.startswith("job.parallel.tp: must divide heads (16) (got 3)")


def test_killed_worker_run_is_queued_again_and_finishes_on_another_worker(worker_scenario, user):
    from scenarios.tasks import run_execute

    queue = f"kill-{uuid.uuid4().hex[:8]}"
    doomed = Worker(queues=queue, concurrency=1, name="doomed")
    try:
        run = Run.objects.create(
            scenario=worker_scenario,
            kind="sweep",
            task_id=str(uuid.uuid4()),
            options={**SLOW_SWEEP, "tokens": 1e12, "nodes": SLOW_SWEEP["nodes"]},
        )
        run_execute.apply_async(args=[run.pk], task_id=run.task_id, queue=queue)
        wait_for(run, {RunStatus.RUNNING}, progress_above=0.0)
        doomed.kill()
    finally:
        doomed.stop()
    time.sleep(1.5)
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING  # nobody finishes it by itself
    assert services.runs_reap_stale(stale_after=1.0).requeued == [run.pk]
    run = wait_for(run, {RunStatus.SUCCEEDED, RunStatus.FAILED}, timeout_s=120)  # the session worker
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.attempts == 2 and len(run.summary["points"]) == len(SLOW_SWEEP["nodes"])
    from twin.celery import app

    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(queue)
