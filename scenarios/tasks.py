"""Celery tasks of runs: thin doors that take ids, call one service and let it record failure.

``acks_late`` with ``reject_on_worker_lost`` (settings) hands a task whose worker process died
back to the broker; the reaper (``runs_reap_stale``, run every ``REAP_INTERVAL_S`` by every
worker) fails runs whose worker stopped beating, and a redelivered task of a final run is a no-op.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown

from scenarios import queue, services

logger = logging.getLogger(__name__)

REAP_INTERVAL_S = 30.0


@shared_task(name=queue.RUN_EXECUTE, acks_late=True)
def run_execute(run_id: int) -> str:
    """Compute a run (or dispatch its chunks); see ``services.run_execute``."""
    return services.run_execute(run_id=run_id)


@shared_task(name=queue.RUN_CHUNK, acks_late=True)
def run_chunk(run_id: int, index: int, total: int, chunk: dict[str, Any]) -> dict[str, Any]:
    """Compute one chunk of a split run (JSON in, JSON out; never raises)."""
    return services.run_chunk_compute(run_id=run_id, index=index, total=total, chunk=chunk)


@shared_task(name=queue.RUN_MERGE, acks_late=True)
def run_merge(results: list[dict[str, Any]], run_id: int) -> str:
    """The chord callback: merge the chunk results and finish the run."""
    return services.run_merge(run_id=run_id, results=results)


@shared_task(name="scenarios.runs_reap_stale")
def runs_reap_stale() -> list[int]:
    """Fail runs whose worker stopped sending heartbeats."""
    return services.runs_reap_stale()


class _Reaper:
    """A daemon thread in each worker calling the reaper periodically (no beat needed)."""

    def __init__(self, interval_s: float = REAP_INTERVAL_S):
        self.interval_s = interval_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="run-reaper", daemon=True)

    def _loop(self) -> None:
        from django.db import close_old_connections

        while not self.stop.wait(self.interval_s):
            try:
                close_old_connections()
                services.runs_reap_stale()
            except Exception:
                logger.exception("run reaper failed")


_reaper: _Reaper | None = None


def start_reaper() -> None:
    """Start this process's reaper thread once (workers on ready; the embedded worker)."""
    global _reaper
    if _reaper is None:
        _reaper = _Reaper()
        _reaper.thread.start()


@worker_ready.connect
def _start_reaper(**kwargs) -> None:
    start_reaper()


@worker_shutdown.connect
def _stop_reaper(**kwargs) -> None:
    if _reaper is not None:
        _reaper.stop.set()
