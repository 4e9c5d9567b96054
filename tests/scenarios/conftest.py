"""The scenarios tests' small generated design and the job that fits it (the fixtures built on
them live in tests/conftest.py, shared with the topology and twin tests)."""

from __future__ import annotations

import uuid

import pytest

#: A GPT-like 1.3B job for 4 DGX H100 nodes (32 GPUs): tp 8 within a server, dp 4.
SMALL_JOB = {
    "model": {"layers": 24, "hidden": 2048, "heads": 16, "vocab": 51200, "seq_len": 2048},
    "global_batch": 64,
    "micro_batch": 2,
    "parallel": {"tp": 8, "pp": 1, "dp": 4},
    "recompute": "selective",
    "precision": "bf16",
}


def make_design(*, team, user, name="H100 x4", nodes=4, server="dgx-h100", generator="rail-optimized"):
    from topology.fabric.generators import generate
    from topology.selectors import catalog_load
    from topology.services import design_create_from_plan

    plan = generate(generator, catalog=catalog_load(), server=server, nodes=nodes)
    return design_create_from_plan(plan=plan, name=name, team=team, user=user)


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker):
    """One real Celery worker for the session, consuming the default queue (Redis broker, the
    test PostgreSQL database)."""
    from tests.scenarios.integration import Worker, database_url_of_test_db, redis_url

    redis_url()
    with django_db_blocker.unblock():
        database_url_of_test_db()
        worker = Worker(name="tasks")
    yield worker
    worker.stop()


@pytest.fixture
def own_queue():
    """A queue of this test only (a session worker on the default queue never sees its tasks)."""
    from twin.celery import app

    name, default = f"reliability-{uuid.uuid4().hex[:8]}", app.conf.task_default_queue
    app.conf.task_default_queue = name
    yield name
    app.conf.task_default_queue = default
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(name)


@pytest.fixture
def design_scenario(transactional_db, catalog_db, team, user, job):
    from scenarios.services import scenario_create

    design = make_design(team=team, user=user)
    return scenario_create(design=design, name="queued work", job=job, what_if={}, user=user)
