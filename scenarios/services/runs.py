"""The life cycle of runs as users and operators drive it: start, cancel, and reap the runs
whose worker died."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import Q
from django.utils import timezone

from scenarios import broadcast, queue
from scenarios.choices import ACTIVE_STATUSES, RunStatus
from scenarios.kinds import run_kind
from scenarios.models import Run, Scenario
from scenarios.scenario_file import saved_scenario_check
from twin.permissions import CHANGE, RUN, require

logger = logging.getLogger(__name__)


def heartbeat_interval_s() -> float:
    """How often a running task refreshes ``Run.heartbeat`` (``TWIN_RUN_HEARTBEAT_S``, 5 s)."""
    return float(getattr(settings, "TWIN_RUN_HEARTBEAT_S", 5.0))


def stale_after_s() -> float:
    """A running run whose heartbeat is older than this is reaped (``TWIN_RUN_STALE_S``, 60 s)."""
    return float(getattr(settings, "TWIN_RUN_STALE_S", 60.0))


def run_start(
    *, scenario: Scenario, kind: str = "step", user, options: Mapping[str, Any] | None = None
) -> Run:
    """Queue a run of the scenario; its task is enqueued after the transaction commits.

    ``options`` are the kind's parameters, normalized by the kind (``scenarios.kinds``).

    Raises
    ------
    NotFound, Forbidden (``twin.permissions``), ValidationError (``{"kind": ...}``,
    ``{"options.<key>": ...}`` or the scenario's field paths when the catalog changed since it
    was saved).
    """
    require(scenario, user, RUN)
    spec = run_kind(kind)
    core = saved_scenario_check(scenario)
    clean_options = spec.clean_options(core, dict(options or {}), design=scenario.design)
    run = Run.objects.create(
        scenario=scenario,
        kind=spec.name,
        options=clean_options,
        created_by=user,
        task_id=str(uuid.uuid4()),
        design_version=scenario.design.version,
        stage="queued",
    )
    transaction.on_commit(lambda: queue.enqueue_run(run.pk, run.task_id))
    return run


def run_cancel(*, run: Run, user) -> Run:
    """Cancel a queued or running run (a final run is returned unchanged).

    The status changes at once; the worker notices at its next progress step and stops, and a
    queued task that has not started is revoked.
    """
    require(run, user, RUN)
    now = timezone.now()
    changed = Run.objects.filter(pk=run.pk, status__in=ACTIVE_STATUSES).update(
        status=RunStatus.CANCELLED, finished=now, stage="cancelled"
    )
    run.refresh_from_db()
    if changed:
        queue.revoke(run.task_id)
        broadcast.publish_status(run)
    return run


def runs_reap_stale(*, stale_after: float | None = None, now=None, queued_too: bool = False) -> list[int]:
    """Fail running runs whose worker stopped sending heartbeats; return their ids.

    A worker killed mid-run (OOM, SIGKILL, a lost host) stops refreshing ``Run.heartbeat``; a
    run whose heartbeat (or start, if it never beat) is older than ``stale_after`` seconds
    (default ``stale_after_s()``) is marked failed with an explanation, and its page is told.
    With ``queued_too`` queued runs created before that moment fail too (embedded mode after a
    restart: the in-memory queue that held them is gone). A redelivered task of a reaped run
    finds it final and does nothing.
    """
    stale_after = stale_after_s() if stale_after is None else stale_after
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=stale_after)
    stale = (
        Q(heartbeat__lt=cutoff)
        | Q(heartbeat__isnull=True, started__lt=cutoff)
        | Q(heartbeat__isnull=True, started__isnull=True, created__lt=cutoff)
    )
    ids = list(Run.objects.filter(status=RunStatus.RUNNING).filter(stale).values_list("pk", flat=True))
    if queued_too:
        ids += list(
            Run.objects.filter(status=RunStatus.QUEUED, created__lt=cutoff).values_list("pk", flat=True)
        )
    message = f"worker lost: no heartbeat for more than {stale_after:g} s (the worker was killed or stopped)"
    reaped = []
    for run_id in ids:
        done = Run.objects.filter(pk=run_id, status__in=ACTIVE_STATUSES).update(
            status=RunStatus.FAILED, error=message, finished=now, stage="failed"
        )
        if done:
            reaped.append(run_id)
            broadcast.publish_status(Run.objects.select_related("scenario").get(pk=run_id))
    if reaped:
        logger.warning("reaped stale runs %s", reaped)
    return reaped


def runs_fail_orphaned_on_start() -> list[int]:
    """Embedded mode at start-up: the in-memory queue is new, so every active run is orphaned."""
    close_old_connections()
    return runs_reap_stale(stale_after=0.0, queued_too=True)


def run_delete(*, run: Run, user) -> None:
    """Delete a run and its results; a run still queued or running is cancelled first."""
    require(run, user, CHANGE)
    if run.is_active:
        run_cancel(run=run, user=user)
    run.delete()
