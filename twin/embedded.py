"""The in-process Celery worker of embedded mode (no Redis): a thread in the web process that
consumes the in-memory broker, so `make run` needs nothing but Python."""

from __future__ import annotations

import logging
import threading

from django.conf import settings

logger = logging.getLogger(__name__)
_worker_thread: threading.Thread | None = None


def start_embedded_worker() -> threading.Thread | None:
    """Start one solo-pool worker thread if in embedded mode and none runs yet."""
    global _worker_thread
    if not settings.EMBEDDED_MODE or (_worker_thread and _worker_thread.is_alive()):
        return _worker_thread
    from twin.celery import app

    # WorkController (not app.Worker) installs no signal handlers, so it may run off the main thread.
    worker = app.WorkController(
        pool_cls="solo",
        concurrency=1,
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
        hostname="embedded@localhost",
    )
    _worker_thread = threading.Thread(target=worker.start, name="embedded-celery-worker", daemon=True)
    _worker_thread.start()
    logger.info("embedded Celery worker started (in-memory broker)")
    return _worker_thread
