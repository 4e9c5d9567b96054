"""The only module that talks to Celery: enqueue a run, one chunk of it or its merge, revoke a
task. Tasks are addressed by name, so services never import the task layer (and the
task layer imports services without a cycle)."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

RUN_EXECUTE = "scenarios.run_execute"
RUN_CHUNK = "scenarios.run_chunk"
RUN_MERGE = "scenarios.run_merge"


def _app():
    # The project's Celery app (twin.celery) is the current one once Django loaded its settings;
    # reaching it through celery keeps the apps from importing the project glue.
    from celery import current_app

    return current_app


def enqueue_run(run_id: int, task_id: str) -> None:
    """Queue the computation of a run (called after the transaction that saved it commits)."""
    _app().send_task(RUN_EXECUTE, args=[run_id], task_id=task_id)


def enqueue_chunk(run_id: int, index: int, task_id: str) -> None:
    """Queue the computation of one chunk of a split run (its input is its ``RunChunk`` row)."""
    _app().send_task(RUN_CHUNK, args=[run_id, index], task_id=task_id)


def enqueue_merge(run_id: int) -> None:
    """Queue the merge of a split run whose chunks are all done (the reaper, after the worker
    that finished the last chunk was lost before merging)."""
    _app().send_task(RUN_MERGE, kwargs={"run_id": run_id})


def revoke(task_id: str) -> None:
    """Revoke a queued task (best effort: a broker hiccup must not turn a cancel into an error)."""
    if not task_id:
        return
    try:
        _app().control.revoke(task_id)
    except Exception:
        logger.warning("could not revoke task %s", task_id, exc_info=True)
