"""Outages that used to strand runs: the broker losing its queue (Redis restarted without
persistence) and the database failing under a task. The database is the truth: queued work that
no task holds any more is sent again, and a task that meets a database error retries instead of
being acknowledged and lost (tasks.py, services.runs_redispatch_unheld).

The broker-side tests run on the real Redis broker (REDIS_URL) and real worker processes; a
purge of the test's own queue is what a restart without persistence does to it.
"""

from __future__ import annotations

import uuid

import pytest
from django.db import OperationalError, transaction

from scenarios import queue, services
from scenarios.choices import ChunkState, RunStatus
from scenarios.models import Run, RunChunk
from tests.scenarios.integration import redis_url
from tests.scenarios.test_queue_reliability import start_all, wait_all_final, worker


@pytest.fixture
def broker_queue(own_queue):
    """The test's own queue on the real Redis broker (skipped, or failed in CI, without one)."""
    redis_url()
    return own_queue


def lose_the_queue(name: str) -> None:
    """What a Redis restart without persistence does to the queue: every waiting message gone."""
    from twin.celery import app

    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(name)


def two_passes() -> services.Redispatched:
    """Two reconciliation passes a reaper interval apart, as a worker's reaper makes them."""
    first = services.runs_redispatch_unheld()
    return services.runs_redispatch_unheld(unheld_before=first.unheld)


@pytest.mark.integration
def test_queued_runs_whose_messages_are_lost_all_succeed(design_scenario, user, broker_queue):
    failures = {"trials": 200, "window_days": 5, "seed": 1}
    services.scenario_update(scenario=design_scenario, user=user, failures=failures, power={"window_s": 2})
    kinds = [("step", None), ("failures", None), ("power", None), ("sweep", {"nodes": [1, 2, 4]})]
    runs = start_all(design_scenario, user, kinds * 2)
    assert queue.tasks_held() >= {run.task_id for run in runs}  # sent, waiting for a worker
    lose_the_queue(broker_queue)
    assert not queue.tasks_held() & {run.task_id for run in runs}
    rescuer = worker(broker_queue, "after-restart")
    try:
        runs = wait_all_final(runs, timeout_s=90)
    finally:
        rescuer.stop()
    assert [(r.kind, r.status, r.error) for r in runs if r.status != RunStatus.SUCCEEDED] == []


@pytest.mark.integration
def test_queued_work_the_broker_holds_is_never_sent_twice(design_scenario, user, broker_queue):
    """A busy queue is not an outage: work waiting behind other work keeps its one task."""
    runs = start_all(design_scenario, user, [("step", None)] * 3)
    report = two_passes()
    assert report.runs == [] and report.chunks == []
    assert {r.task_id for r in Run.objects.filter(pk__in=[r.pk for r in runs])} == {r.task_id for r in runs}


@pytest.mark.integration
def test_a_lost_chunk_and_a_run_that_was_never_sent_are_sent_again_once(design_scenario, user, broker_queue):
    never_sent = Run.objects.create(scenario=design_scenario, kind="step", task_id="", created_by=user)
    split = Run.objects.create(scenario=design_scenario, kind="sweep", status=RunStatus.RUNNING, task_id="x")
    chunk = RunChunk.objects.create(run=split, index=0, spec={}, task_id=str(uuid.uuid4()))
    first = services.runs_redispatch_unheld()
    assert first.runs == [] and first.chunks == []  # missing once may be a send in flight
    report = services.runs_redispatch_unheld(unheld_before=first.unheld)
    assert report.runs == [never_sent.pk] and report.chunks == [(split.pk, 0)]
    never_sent.refresh_from_db()
    chunk.refresh_from_db()
    assert {never_sent.task_id, chunk.task_id} <= queue.tasks_held()
    assert chunk.state == ChunkState.QUEUED
    # A second reaper that saw the same old state finds the task ids changed and sends nothing.
    again = services.runs_redispatch_unheld(unheld_before=first.unheld)
    assert again.runs == [] and again.chunks == []


def test_the_embedded_broker_cannot_tell_and_nothing_is_sent(scenario, settings):
    if not settings.EMBEDDED_MODE:
        pytest.skip("the in-memory broker of embedded mode")
    assert queue.tasks_held() is None
    assert two_passes() == services.Redispatched()


def test_a_database_error_while_computing_does_not_fail_the_run(scenario, user, monkeypatch):
    """Not the run's fault: it propagates to the task (which retries); the run is not failed."""
    from scenarios.kinds.step import KIND

    with transaction.atomic():
        run = services.run_start(scenario=scenario, kind="step", user=user)

    def outage(self, context, progress):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(type(KIND), "execute", outage)
    with pytest.raises(OperationalError):
        services.run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.error == ""


def test_a_task_that_meets_a_database_outage_retries_and_succeeds(scenario, user, monkeypatch):
    from scenarios import tasks

    with transaction.atomic():
        run = services.run_start(scenario=scenario, kind="step", user=user)
    real, calls = services.run_execute, []

    def flaky(*, run_id):
        calls.append(run_id)
        if len(calls) < 3:
            raise OperationalError("could not connect to server: Connection refused")
        return real(run_id=run_id)

    monkeypatch.setattr(services, "run_execute", flaky)
    result = tasks.run_execute.apply(args=[run.pk], retries=0, throw=False)
    assert result.get(propagate=False) == "succeeded" and len(calls) == 3
    assert Run.objects.get(pk=run.pk).status == RunStatus.SUCCEEDED
