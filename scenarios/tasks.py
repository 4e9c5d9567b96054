"""Celery tasks of runs: thin doors that take ids, call one service and let it record failure.

Tasks are ``acks_late`` with ``reject_on_worker_lost`` (settings): a message leaves the broker
only once its task has returned, so one held by a worker that dies goes back to the queue (at
once when only a pool process died, after the broker's visibility timeout when the whole worker
did). Each task first *claims* its run or chunk in the database, so a redelivered copy of a task
that is done or computing elsewhere does nothing. A task that meets a database outage retries
with backoff (the same task id) instead of being acknowledged and lost. The reaper (run every
``reap_interval_s()`` by every worker) queues again the started work whose lease expired
(``runs_reap_stale``) and the queued work no task holds any more (``runs_redispatch_unheld``:
a broker restarted without persistence, a send that failed).
"""

from __future__ import annotations

import logging
import threading

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown
from kombu.exceptions import OperationalError as KombuOperationalError
from redis.exceptions import RedisError

from scenarios import queue, services

logger = logging.getLogger(__name__)


#: A task meeting a database outage (``services.TRANSIENT_ERRORS``) is retried -- sent again
#: under its id -- with exponential backoff up to half a minute, about ten minutes in all.
TRANSIENT_ERRORS = services.TRANSIENT_ERRORS
#: What a broker outage raises from the reaper's probe and sends (redis-py, kombu).
BROKER_ERRORS = (ConnectionError, TimeoutError, KombuOperationalError, RedisError)
RETRY = {
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_backoff": 1,
    "retry_backoff_max": 30,
    "retry_jitter": True,
    "max_retries": 20,
}


def reap_interval_s() -> float:
    """How often each worker looks for lost work: half the stale limit, at most 30 s, so lost
    work is queued again within 1.5 x ``TWIN_RUN_STALE_S``."""
    return max(0.5, min(30.0, services.stale_after_s() / 2))


@shared_task(name=queue.RUN_EXECUTE, acks_late=True, **RETRY)
def run_execute(run_id: int) -> str:
    """Compute a run (or dispatch its chunks); see ``services.run_execute``."""
    return services.run_execute(run_id=run_id)


@shared_task(name=queue.RUN_CHUNK, acks_late=True, **RETRY)
def run_chunk(run_id: int, index: int, *legacy) -> str:
    """Compute one chunk of a split run (its input is in the database) and merge after the last
    one. ``legacy`` swallows the (total, chunk) arguments of messages queued before an upgrade."""
    return services.run_chunk_compute(run_id=run_id, index=index)


@shared_task(name=queue.RUN_MERGE, acks_late=True, **RETRY)
def run_merge(*legacy, run_id: int) -> str:
    """Merge a split run whose chunks are all done (queued by the reaper when the worker that
    finished the last chunk was lost before merging)."""
    return services.run_merge(run_id=run_id)


@shared_task(name="scenarios.runs_reap_stale")
def runs_reap_stale() -> list[int]:
    """Queue again the work of lost workers; return the runs failed after too many attempts."""
    return services.runs_reap_stale().failed


class _Reaper:
    """A daemon thread in each worker calling the reaper periodically (no beat needed)."""

    def __init__(self, interval_s: float | None = None):
        self.interval_s = reap_interval_s() if interval_s is None else interval_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="run-reaper", daemon=True)
        self.unheld: frozenset = frozenset()  # queued work no task held at the last pass

    def _loop(self) -> None:
        while not self.stop.wait(self.interval_s):
            self.reap_once()

    def reap_once(self) -> None:
        """One pass; an outage of the database or the broker is one log line, and the next pass
        tries again."""
        from django.db import close_old_connections

        try:
            close_old_connections()
            services.runs_reap_stale()
            self.unheld = services.runs_redispatch_unheld(unheld_before=self.unheld).unheld
        except (*TRANSIENT_ERRORS, *BROKER_ERRORS) as exc:
            name = type(exc).__name__
            logger.warning("run reaper: %s: %s (next pass in %.0f s)", name, exc, self.interval_s)
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
