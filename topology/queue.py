"""The only module of the topology app that talks to Celery from the web side: queue a design
build. Tasks are addressed by name, so services never import the task layer."""

from __future__ import annotations

DESIGN_BUILD = "topology.design_build"


def enqueue_build(build_id: int, task_id: str) -> None:
    """Queue the save of a design build (called after the transaction that created it commits)."""
    from celery import current_app  # the project's app (twin.celery), without importing the glue

    current_app.send_task(DESIGN_BUILD, args=[build_id], task_id=task_id)
