"""The only module that talks to Celery: enqueue a run, one chunk of it or its merge, revoke a
task. Tasks are addressed by name, so services never import the task layer (and the
task layer imports services without a cycle)."""

from __future__ import annotations

import json
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


def tasks_held() -> set[str] | None:
    """The ids of the tasks the broker still holds: waiting in the default queue, or delivered
    to a worker and not yet acknowledged (tasks are ``acks_late``, so that covers every task a
    worker reserved or is computing). ``None`` when the transport cannot tell (the in-memory
    broker of embedded mode, whose queue lives and dies with its only worker).

    Read from the Redis transport's own keys (kombu: one list per queue and priority step, the
    ``unacked`` hash of delivered messages). After a Redis restart without persistence both are
    empty, which is how the reconciliation (``services.runs_redispatch_unheld``) learns that the
    queued work in the database has no task left.
    """
    app = _app()
    with app.connection_for_read() as connection:
        if connection.transport.driver_type != "redis":
            return None
        channel = connection.default_channel
        queue_name = app.conf.task_default_queue
        pipe = channel.client.pipeline()
        for step in channel.priority_steps:
            pipe.lrange(channel._q_for_pri(queue_name, step), 0, -1)
        pipe.hvals(channel.unacked_key)
        *waiting, delivered = pipe.execute()
    held = {_message_task_id(raw) for batch in waiting for raw in batch}
    held |= {_message_task_id(raw, delivered=True) for raw in delivered}
    held.discard("")
    return held


def _message_task_id(raw: bytes | str, *, delivered: bool = False) -> str:
    """The task id in the headers of one stored kombu message ("" when it is not a task's)."""
    try:
        message = json.loads(raw)
        if delivered:  # the unacked hash stores [message, exchange, routing key]
            message = message[0]
        return str(message.get("headers", {}).get("id") or "")
    except (ValueError, TypeError, IndexError, AttributeError):
        return ""
