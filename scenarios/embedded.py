"""The in-process Celery worker of embedded mode (no Redis): a thread in the web process that
consumes the in-memory broker, so `make run` needs nothing but Python.

The in-memory queue dies with the process, so at start-up every run (and design save) still
queued or running is failed with an explanation (nothing would ever finish it), and a reaper thread fails runs
whose heartbeat stops later on.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings

logger = logging.getLogger(__name__)
_worker_thread: threading.Thread | None = None


def _fail_orphaned_runs() -> None:
    from django.db import DatabaseError

    from scenarios.services import runs_fail_orphaned_on_start
    from topology.services import design_builds_fail_orphaned

    try:
        orphaned = runs_fail_orphaned_on_start()
        builds = design_builds_fail_orphaned()
    except DatabaseError:  # tables not migrated yet: nothing can be orphaned
        logger.info("embedded worker: runs table not ready, skipping the orphan check")
        return
    if orphaned:
        logger.warning("embedded worker: failed runs orphaned by the last shutdown: %s", orphaned)
    if builds:
        logger.warning("embedded worker: %d design saves were orphaned by the last shutdown", builds)


def start_embedded_worker() -> threading.Thread | None:
    """Start one solo-pool worker thread (plus the run reaper) if in embedded mode and none
    runs yet; returns the worker thread (None outside embedded mode)."""
    global _worker_thread
    if not settings.EMBEDDED_MODE or (_worker_thread and _worker_thread.is_alive()):
        return _worker_thread
    from celery import current_app  # the project's app (twin.celery)

    from scenarios.tasks import start_reaper

    _fail_orphaned_runs()
    # WorkController (not app.Worker) installs no signal handlers, so it may run off the main thread.
    worker = current_app.WorkController(
        pool_cls="solo",
        concurrency=1,
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
        hostname="embedded@localhost",
    )
    _worker_thread = threading.Thread(target=worker.start, name="embedded-celery-worker", daemon=True)
    _worker_thread.start()
    start_reaper()
    logger.info("embedded Celery worker started (in-memory broker)")
    return _worker_thread
