"""The only module that talks to Celery from the web side: enqueue a run, dispatch its chunks,
revoke a task. Tasks are addressed by name, so services never import the task layer (and the
task layer imports services without a cycle)."""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

RUN_EXECUTE = "scenarios.run_execute"
RUN_CHUNK = "scenarios.run_chunk"
RUN_MERGE = "scenarios.run_merge"


def _app():
    from twin.celery import app

    return app


def enqueue_run(run_id: int, task_id: str) -> None:
    """Queue the computation of a run (called after the transaction that saved it commits)."""
    _app().send_task(RUN_EXECUTE, args=[run_id], task_id=task_id)


def dispatch_chunks(run_id: int, chunks: list[dict[str, Any]]) -> None:
    """Queue one task per chunk and the merge that runs once every chunk has returned."""
    from celery import chord

    app = _app()
    header = [
        app.signature(RUN_CHUNK, args=(run_id, i, len(chunks), chunk)) for i, chunk in enumerate(chunks)
    ]
    chord(header)(app.signature(RUN_MERGE, kwargs={"run_id": run_id}))


def revoke(task_id: str) -> None:
    """Revoke a queued task (best effort: a broker hiccup must not turn a cancel into an error)."""
    if not task_id:
        return
    try:
        _app().control.revoke(task_id)
    except Exception:
        logger.warning("could not revoke task %s", task_id, exc_info=True)
