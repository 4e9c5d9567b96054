"""Busy queues and killed workers on REAL Celery worker processes (Redis broker, the test
PostgreSQL database), with a short stale limit so a wrong verdict shows up within seconds.

Held: a run is queued again only when the task computing it really stopped (its lease expired),
never because it waits behind other runs; a worker SIGKILLed mid-chunk loses no run.
"""

from __future__ import annotations

import time

import pytest
from django.db import transaction

from scenarios import services
from scenarios.choices import ChunkState, RunStatus
from scenarios.models import Run, RunChunk
from tests.scenarios.integration import Worker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

#: Short limits: a lease older than 5 s is lost; a worker renews it every second.
FAST_REAPER = {"TWIN_RUN_STALE_S": "5", "TWIN_RUN_HEARTBEAT_S": "1"}
#: 20 of each: step runs, sweeps in 5 chunks, searches in 3 chunks (on the 4-node design).
MIX = [
    ("step", None),
    ("sweep", {"nodes": [1, 2, 3, 4, 8], "chunk_size": 1}),
    ("search", {"chunks": 3, "top": 5}),
]


def worker(queue: str, name: str) -> Worker:
    return Worker(queues=queue, concurrency=1, name=name, env={**FAST_REAPER, "TWIN_CELERY_QUEUE": queue})


def start_all(scenario, user, kinds) -> list[Run]:
    with transaction.atomic():
        return [
            services.run_start(scenario=scenario, kind=kind, user=user, options=options)
            for kind, options in kinds
        ]


def wait_all_final(runs: list[Run], timeout_s: float, on_poll=None) -> list[Run]:
    ids = [r.pk for r in runs]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if on_poll is not None:
            on_poll()
        if not Run.objects.filter(pk__in=ids).active().exists():
            break
        time.sleep(0.2)
    return list(Run.objects.filter(pk__in=ids).order_by("pk"))


def test_sixty_runs_on_one_worker_with_a_short_stale_limit_all_succeed(design_scenario, user, own_queue):
    seen = {"queued": 0, "waiting_for_chunks": 0}

    def observe() -> None:
        active = Run.objects.filter(scenario=design_scenario).active()
        seen["queued"] += active.filter(status=RunStatus.QUEUED, stage="queued").count()
        seen["waiting_for_chunks"] += active.filter(stage__contains="waiting for").count()

    busy = worker(own_queue, "busy")
    try:
        runs = start_all(design_scenario, user, MIX * 20)
        runs = wait_all_final(runs, timeout_s=180, on_poll=observe)
    finally:
        busy.stop()
    failed = [(r.pk, r.kind, r.status, r.error) for r in runs if r.status != RunStatus.SUCCEEDED]
    assert not failed, failed
    assert all(r.attempts == 1 for r in runs), "a healthy run waiting in the queue was judged lost"
    assert seen["queued"] > 0 and seen["waiting_for_chunks"] > 0, seen
    chunks = RunChunk.objects.filter(run__in=runs)
    assert chunks.count() == 20 * 5 + 20 * 3 and not chunks.exclude(state=ChunkState.DONE).exists()


def test_worker_sigkilled_mid_chunk_loses_no_run(design_scenario, user, own_queue):
    slow_sweep = ("sweep", {"nodes": [4096, 8192, 16384], "chunk_size": 1, "batch": "scaled"})
    doomed = worker(own_queue, "doomed")
    try:
        runs = start_all(design_scenario, user, [slow_sweep, *MIX, slow_sweep])
        # Kill the moment a slow sweep's chunk (a 32k-GPU prediction or more: hundreds of ms)
        # is claimed, so the kill lands mid-chunk however fast the machine is.
        running = RunChunk.objects.filter(run__in=[runs[0], runs[-1]], state=ChunkState.RUNNING)
        deadline = time.monotonic() + 90
        while not (killed_chunks := list(running.all())):  # .all(): a fresh query each time
            assert time.monotonic() < deadline, "no chunk started"
            time.sleep(0.02)
        doomed.kill()
    finally:
        doomed.stop()
    assert killed_chunks
    killed_at = time.monotonic()
    rescuer = worker(own_queue, "rescuer")
    try:
        runs = wait_all_final(runs, timeout_s=150)
    finally:
        rescuer.stop()
    recovered_s = time.monotonic() - killed_at
    failed = [(r.pk, r.kind, r.status, r.error) for r in runs if r.status != RunStatus.SUCCEEDED]
    assert not failed, failed
    for chunk in killed_chunks:
        chunk.refresh_from_db()
        assert chunk.state == ChunkState.DONE and chunk.attempts == 2
    for run in runs:
        if run.kind == "sweep":
            assert len(run.summary["points"]) == len(run.options["nodes"])  # each chunk once
    assert recovered_s < 150
