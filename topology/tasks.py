"""Celery tasks of the topology app: thin doors that take ids and call one service."""

from __future__ import annotations

from celery import shared_task

from topology import queue, services


@shared_task(name=queue.DESIGN_BUILD, acks_late=True)
def design_build(build_id: int) -> str:
    """Save a queued design build; see ``services.design_build_execute``."""
    return services.design_build_execute(build_id=build_id)
