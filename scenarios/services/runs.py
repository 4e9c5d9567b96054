"""The life cycle of runs as users and operators drive it: start, cancel, and give the work of a
worker that died to another one."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import close_old_connections, transaction
from django.db.models import Q
from django.utils import timezone

from scenarios import broadcast, queue
from scenarios.choices import ACTIVE_STATUSES, ChunkState, RunStatus
from scenarios.kinds import run_kind
from scenarios.models import Run, RunChunk, Scenario
from scenarios.provenance import RERUN_WITHOUT_INPUTS, RunInputs
from scenarios.scenario_file import saved_scenario_check, scenario_revision, scenario_to_dict
from scenarios.selectors import design_changes_since
from teams.permissions import CHANGE, RUN, require

logger = logging.getLogger(__name__)

#: Stages that are also states of a split run's merge (see ``execution.run_merge``).
MERGING = "merging"
MERGE_QUEUED = "merge queued (its worker was lost)"
#: The stage of a run queued again because the worker computing it was lost.
REQUEUED = "queued again: its worker was lost"
NOT_DONE = (ChunkState.QUEUED, ChunkState.RUNNING)


def heartbeat_interval_s() -> float:
    """How often a running task refreshes ``Run.heartbeat`` (setting ``TWIN_RUN_HEARTBEAT_S``)."""
    return settings.TWIN_RUN_HEARTBEAT_S


def stale_after_s() -> float:
    """A running run whose heartbeat is older than this is reaped (setting ``TWIN_RUN_STALE_S``)."""
    return settings.TWIN_RUN_STALE_S


def max_attempts() -> int:
    """How many times a run or one chunk may be started before its run fails as "worker lost"
    (setting ``TWIN_RUN_MAX_ATTEMPTS``)."""
    return settings.TWIN_RUN_MAX_ATTEMPTS


#: What a run start answers when the scenario is no longer the one the page (or client) showed.
STALE_SCENARIO = "the scenario changed since this page loaded; reload"


def scenario_require_revision(*, scenario: Scenario, seen_revision: str | None) -> None:
    """Refuse (``ValidationError`` code ``conflict``: the API's 409) when the saved scenario is no
    longer the ``scenario_revision`` a page or client showed; ``None`` checks nothing."""
    if seen_revision is not None and seen_revision != scenario_revision(scenario):
        raise ValidationError(STALE_SCENARIO, code="conflict")


def run_start(
    *,
    scenario: Scenario,
    kind: str = "step",
    user,
    options: Mapping[str, Any] | None = None,
    seen_revision: str | None = None,
) -> Run:
    """Queue a run of the scenario; its task is enqueued after the transaction commits.

    ``options`` are the kind's parameters, normalized by the kind (``scenarios.kinds``).
    ``seen_revision`` is the ``scenario_revision`` the caller showed: a run starts only if the
    saved scenario is still that one (nothing but what was on screen runs).

    Raises
    ------
    NotFound, Forbidden (``teams.permissions``), ValidationError (``{"kind": ...}``,
    ``{"options.<key>": ...}`` or the scenario's field paths when the catalog changed since it
    was saved; code ``conflict`` when ``seen_revision`` is stale).
    """
    from topology.selectors import catalog_load

    require(scenario, user, RUN)
    scenario_require_revision(scenario=scenario, seen_revision=seen_revision)
    spec = run_kind(kind)
    catalog = catalog_load()
    core = saved_scenario_check(scenario, catalog=catalog)
    clean_options = spec.clean_options(core, dict(options or {}), design=scenario.design)
    inputs = RunInputs.build(
        scenario_to_dict(scenario=scenario), design_version=scenario.design.version, catalog=catalog
    )
    return _queue(scenario=scenario, kind=spec.name, options=clean_options, user=user, inputs=inputs)


def _queue(*, scenario: Scenario, kind: str, options: dict[str, Any], user, inputs: RunInputs) -> Run:
    run = Run.objects.create(
        scenario=scenario,
        kind=kind,
        options=options,
        created_by=user,
        task_id=str(uuid.uuid4()),
        design_version=inputs.design_version,
        inputs=inputs.to_json(),
        stage="queued",
    )
    transaction.on_commit(lambda: queue.enqueue_run(run.pk, run.task_id))
    return run


def run_rerun(*, run: Run, user) -> Run:
    """Queue a new run of ``run``'s kind and options from its stored inputs (the scenario
    document, the catalog snapshot): the run "as it ran", whatever changed since.

    Raises
    ------
    NotFound, Forbidden (``teams.permissions``: the role that starts a run), ValidationError
    ``{"inputs": ...}`` when the run kept no inputs, ``{"design": ...}`` when the design's racks,
    nodes or links changed since (the twin keeps no old versions of them; only catalog edits,
    which the snapshot undoes, may lie between).
    """
    require(run, user, RUN)
    inputs = RunInputs.of(run)
    if inputs is None:
        raise ValidationError({"inputs": RERUN_WITHOUT_INPUTS})
    changes = design_changes_since(run.scenario.design, inputs.design_version)
    if changes.structural:
        raise ValidationError(
            {
                "design": f"design: changed since this run (version {inputs.design_version} → "
                f"{changes.version_now}: {changes.structural[0]}); the twin keeps no older racks, "
                "nodes or links, so it cannot run it again as it ran: run it with today's inputs"
            }
        )
    return _queue(
        scenario=run.scenario,
        kind=run.kind,
        options=dict(run.options or {}),
        user=user,
        inputs=inputs.rerun(run.pk),
    )


def run_cancel(*, run: Run, user) -> Run:
    """Cancel a queued or running run (a final run is returned unchanged).

    The status changes at once; the worker notices at its next progress step (at most ~0.2 s
    later: the cores call back in their hot loops) and stops, and a queued task that has not
    started is revoked. A cancelled run keeps no result, not even its partial one.
    """
    require(run, user, RUN)
    now = timezone.now()
    changed = Run.objects.filter(pk=run.pk, status__in=ACTIVE_STATUSES).update(
        status=RunStatus.CANCELLED, finished=now, stage="cancelled", summary={}
    )
    run.refresh_from_db()
    if changed:
        queue.revoke(run.task_id)
        broadcast.publish_status(run)
    return run


@dataclass(frozen=True)
class Reaped:
    """What one pass of the reaper did: runs queued again, chunks queued again, merges queued
    (their worker was lost), and runs failed (their work was lost too often)."""

    requeued: list[int] = field(default_factory=list)
    chunks_requeued: list[tuple[int, int]] = field(default_factory=list)
    merges_queued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)


def runs_reap_stale(*, stale_after: float | None = None, now=None) -> Reaped:
    """Give the work of a lost worker to another one, judged by the state of each run's tasks.

    A task that is computing refreshes its lease (``Run.heartbeat``, and ``RunChunk.heartbeat``
    for a chunk) every ``heartbeat_interval_s()``; only a *started* task whose lease is older
    than ``stale_after`` (default ``stale_after_s()``) is lost. Queued runs and queued chunks
    wait for a worker however long the queue is; they are never judged by age (queued work no task
    holds any more is ``runs_redispatch_unheld``'s). A lost run or chunk is
    queued again (a redelivered copy of its old task finds it claimed or done and does nothing),
    at most ``max_attempts()`` starts in all, then its run fails ("worker lost"). A split run
    whose chunks are all done but whose merge was lost gets its merge queued.
    """
    stale_after = stale_after_s() if stale_after is None else stale_after
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=stale_after)
    lost = Q(heartbeat__lt=cutoff) | Q(heartbeat__isnull=True, started__lt=cutoff)
    report = Reaped()
    running = Run.objects.filter(status=RunStatus.RUNNING)
    for run in running.filter(lost).filter(chunks__isnull=True):
        _requeue_run(run, cutoff, report)
    for chunk in RunChunk.objects.filter(
        run__status=RunStatus.RUNNING, state=ChunkState.RUNNING, heartbeat__lt=cutoff
    ).select_related("run"):
        _requeue_chunk(chunk, cutoff, report)
    merge_lost = running.filter(lost, chunks__isnull=False).exclude(chunks__state__in=NOT_DONE)
    for run_id in merge_lost.exclude(stage=MERGE_QUEUED).values_list("pk", flat=True).distinct():
        if Run.objects.filter(pk=run_id, status=RunStatus.RUNNING).filter(lost).update(stage=MERGE_QUEUED):
            queue.enqueue_merge(run_id)
            report.merges_queued.append(run_id)
    if report.requeued or report.chunks_requeued or report.merges_queued or report.failed:
        logger.warning("reaper: work of lost workers %s", report)
    return report


@dataclass
class Redispatched:
    """What one reconciliation of queued work did; ``unheld`` is what to look at next time."""

    runs: list[int] = field(default_factory=list)
    chunks: list[tuple[int, int]] = field(default_factory=list)
    unheld: frozenset = frozenset()


def runs_redispatch_unheld(*, unheld_before: frozenset = frozenset()) -> Redispatched:
    """Queue again the queued work no task holds any more: the database is the truth.

    A run or chunk is queued in the database when its task was sent; a broker restarted without
    persistence, a send that failed after the commit, or a task thrown away on a database error
    leaves it queued with nothing to compute it, for ever. Each pass asks the broker which tasks
    it holds (``queue.tasks_held``: waiting or delivered and unacknowledged); queued work whose
    task was missing in this pass *and* the previous one (``unheld_before``, a reaper interval
    ago: a task in flight between the commit and the broker is not missing) is sent again under
    a new task id. The task id is the claim: of several reapers only the one that changes it
    sends. Nothing happens when the transport cannot tell (embedded mode).
    """
    held = queue.tasks_held()
    report = Redispatched()
    if held is None:
        return report
    unheld = {
        ("run", pk, task_id)
        for pk, task_id in Run.objects.filter(status=RunStatus.QUEUED).values_list("pk", "task_id")
        if task_id not in held
    }
    chunks = RunChunk.objects.filter(state=ChunkState.QUEUED, run__status=RunStatus.RUNNING)
    unheld |= {
        ("chunk", (run_id, index), task_id)
        for run_id, index, task_id in chunks.values_list("run_id", "index", "task_id")
        if task_id not in held
    }
    for item in unheld & unheld_before:
        _redispatch(item, report)
    report.unheld = frozenset(unheld - unheld_before)
    if report.runs or report.chunks:
        logger.warning("reconciliation: queued work no task held, sent again: %s", report)
    return report


def _redispatch(item: tuple, report: Redispatched) -> None:
    what, key, old_task_id = item
    task_id = str(uuid.uuid4())
    if what == "run":
        if Run.objects.filter(pk=key, status=RunStatus.QUEUED, task_id=old_task_id).update(task_id=task_id):
            queue.enqueue_run(key, task_id)
            report.runs.append(key)
        return
    run_id, index = key
    claimed = RunChunk.objects.filter(
        run_id=run_id, index=index, state=ChunkState.QUEUED, task_id=old_task_id
    ).update(task_id=task_id)
    if claimed:
        queue.enqueue_chunk(run_id, index, task_id)
        report.chunks.append(key)


def _requeue_run(run: Run, cutoff, report: Reaped) -> None:
    """Queue a lost run again under a new task id, or fail it after ``max_attempts()``."""
    claim = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).filter(
        Q(heartbeat__lt=cutoff) | Q(heartbeat__isnull=True)
    )
    if run.attempts >= max_attempts():
        _fail_lost(run.pk, run.attempts, report)
        return
    task_id = str(uuid.uuid4())
    if claim.update(status=RunStatus.QUEUED, stage=REQUEUED, heartbeat=None, task_id=task_id):
        queue.enqueue_run(run.pk, task_id)
        report.requeued.append(run.pk)
        _publish(run.pk)


def _requeue_chunk(chunk: RunChunk, cutoff, report: Reaped) -> None:
    """Queue a lost chunk again under a new task id, or fail its run after ``max_attempts()``."""
    claim = RunChunk.objects.filter(pk=chunk.pk, state=ChunkState.RUNNING, heartbeat__lt=cutoff)
    if chunk.attempts >= max_attempts():
        _fail_lost(chunk.run_id, chunk.attempts, report)
        return
    task_id = str(uuid.uuid4())
    if claim.update(state=ChunkState.QUEUED, heartbeat=None, task_id=task_id):
        queue.enqueue_chunk(chunk.run_id, chunk.index, task_id)
        report.chunks_requeued.append((chunk.run_id, chunk.index))


def _fail_lost(run_id: int, attempts: int, report: Reaped) -> None:
    """Fail a run whose work was lost ``attempts`` times (a chunk that kills its worker each
    time, e.g. out of memory, must not go round forever)."""
    message = (
        f"worker lost: the worker computing it stopped {attempts} times "
        "(killed, out of memory, or shut down); start the run again"
    )
    if Run.objects.filter(pk=run_id, status=RunStatus.RUNNING).update(
        status=RunStatus.FAILED, error=message, finished=timezone.now(), stage="failed"
    ):
        report.failed.append(run_id)
        _publish(run_id)


def _publish(run_id: int) -> None:
    broadcast.publish_status(Run.objects.select_related("scenario").get(pk=run_id))


def runs_fail_orphaned_on_start() -> list[int]:
    """Embedded mode at start-up: the in-memory queue is new, so every active run is orphaned
    (nothing will ever compute it); fail them all with an explanation."""
    close_old_connections()
    ids = list(Run.objects.active().values_list("pk", flat=True))
    message = "worker lost: the server restarted while it was queued or running; start the run again"
    Run.objects.filter(pk__in=ids, status__in=ACTIVE_STATUSES).update(
        status=RunStatus.FAILED, error=message, finished=timezone.now(), stage="failed"
    )
    return ids


def run_delete(*, run: Run, user) -> None:
    """Delete a run and its results; a run still queued or running is cancelled first."""
    require(run, user, CHANGE)
    if run.is_active:
        run_cancel(run=run, user=user)
    run.delete()
