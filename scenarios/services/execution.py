"""Computing runs (what the Celery tasks call): claim, compute in one piece or split into chunks
for other workers, merge once every chunk is done, save results, fail with a readable message.
Every step claims its run or chunk with one conditional UPDATE first, so a redelivered task
does nothing twice."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
from dataclasses import replace
from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Least
from django.utils import timezone

from scenarios import broadcast, queue
from scenarios.choices import ChunkState, RunStatus
from scenarios.kinds import JobInfeasible, RunContext, RunOutput, run_kind
from scenarios.models import Run, RunArray, RunChunk
from scenarios.services.runs import MERGING, heartbeat_interval_s, stale_after_s
from scenarios.sim.format.errors import Cancelled
from scenarios.storage import array_to_bytes
from topology.caches import VersionedCache
from utilities.jsonsafe import json_safe

logger = logging.getLogger(__name__)


class RunCancelled(Cancelled):
    """Raised inside a computation when its run was cancelled; unwinds the core quietly (it is
    the core's ``Cancelled``, which every core lets through from its progress callback)."""


class DesignChangedMeanwhile(Exception):
    """A chunk found the design at another version than the one the run started on."""


class RunProgress:
    """The ``on_progress`` callback handed to the core for one run (or one chunk of it).

    Saves ``progress``/``stage`` at most twice a second, publishes through ``broadcast`` (which
    throttles to <= 10 messages/s per run), and raises :class:`RunCancelled` when the run was
    cancelled meanwhile: it looks at most every ``CHECK_INTERVAL_S`` (one indexed read), so a
    core calling back often stops within that of a cancel. ``span`` maps the core's 0..1 onto a
    slice of the run's progress.
    """

    SAVE_INTERVAL_S = 0.5
    CHECK_INTERVAL_S = 0.2

    def __init__(self, run: Run, *, start: float = 0.0, span: float = 1.0):
        self.run = run
        self.start = start
        self.span = span
        self._last_save = 0.0
        self._last_check = time.monotonic()

    def __call__(self, fraction: float, stage: str = "") -> None:
        progress = min(1.0, max(0.0, self.start + self.span * float(fraction)))
        now = time.monotonic()
        if now - self._last_save >= self.SAVE_INTERVAL_S or fraction >= 1.0:
            self._last_save = self._last_check = now
            updated = Run.objects.filter(pk=self.run.pk, status=RunStatus.RUNNING).update(
                progress=progress, stage=stage[:200], heartbeat=timezone.now()
            )
            if not updated:
                raise RunCancelled(self.run.pk)
        else:
            self.poll()
        broadcast.publish_progress(self.run, progress, stage)

    def poll(self, fraction: float = 0.0, stage: str = "") -> None:
        """The cancellation check alone, at most every ``CHECK_INTERVAL_S`` (a core callback of a
        chunk, whose share of the run's progress ``item_done`` counts); raises
        :class:`RunCancelled`. Takes and ignores the core's ``(fraction, stage)``."""
        if time.monotonic() - self._last_check >= self.CHECK_INTERVAL_S:
            self.check_cancelled()

    def item_done(self, items_total: int, stage: str, partial: dict[str, Any] | None = None) -> None:
        """Count one finished item of ``items_total`` in the whole run and publish it.

        Adds ``1 / items_total`` in SQL (capped below 1 until the run finishes), so chunks on
        different workers add up. ``partial`` (a sweep point, a slice's best layout, a block of
        trials) goes out as a partial message's summary and is folded into the run's stored
        partial result (``summary["partial"]``, the kind's ``merge_partial``), which a page
        opened mid-run reads from the run's state; the finished summary replaces it.
        """
        with transaction.atomic():
            running = Run.objects.select_for_update().filter(pk=self.run.pk, status=RunStatus.RUNNING)
            row = running.values_list("pk", "summary").first()
            if row is None:
                raise RunCancelled(self.run.pk)
            summary = row[1]
            changes: dict[str, Any] = {}
            merged: dict[str, Any] = {}
            if partial is not None:
                stored = (summary or {}).get("partial") or {}
                merged = json_safe(run_kind(self.run.kind).merge_partial(stored, json_safe(partial)))
                changes["summary"] = {**(summary or {}), "partial": merged}
            running.update(
                progress=Least(F("progress") + 1.0 / max(items_total, 1), 0.99),
                stage=stage[:200],
                heartbeat=timezone.now(),
                **changes,
            )
        self._last_check = time.monotonic()
        progress = Run.objects.filter(pk=self.run.pk).values_list("progress", flat=True).first() or 0.0
        broadcast.publish_progress(self.run, progress, stage)
        if partial is not None:
            figures = run_kind(self.run.kind).partial_figures(merged)
            broadcast.publish_partial(self.run, metric=None, values=None, summary=partial, figures=figures)

    def check_cancelled(self) -> None:
        """Raise :class:`RunCancelled` if the run is no longer running."""
        self._last_check = time.monotonic()
        if not Run.objects.filter(pk=self.run.pk, status=RunStatus.RUNNING).exists():
            raise RunCancelled(self.run.pk)


class Heartbeat:
    """A daemon thread refreshing ``Run.heartbeat`` (and the chunk's, when computing one) every
    ``heartbeat_interval_s()`` while a task computes: the lease the reaper judges, renewed only
    by a process that is really computing (the core may not call back for a long while)."""

    def __init__(self, run_id: int, chunk_id: int | None = None):
        self.run_id = run_id
        self.chunk_id = chunk_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"run-{run_id}-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _beat(self) -> None:
        interval = heartbeat_interval_s()
        try:
            while not self._stop.wait(interval):
                now = timezone.now()
                Run.objects.filter(pk=self.run_id, status=RunStatus.RUNNING).update(heartbeat=now)
                if self.chunk_id is not None:
                    RunChunk.objects.filter(pk=self.chunk_id, state=ChunkState.RUNNING).update(heartbeat=now)
        except Exception:
            logger.exception("heartbeat of run %s stopped", self.run_id)
        finally:
            connection.close()


#: Database errors a computation outlives (PostgreSQL restarting, a connection cut, a full pool):
#: they are not the run's fault, so they never fail it. They propagate to the task, which retries;
#: work already claimed waits for its lease to expire and the reaper to queue it again.
TRANSIENT_ERRORS = (OperationalError, InterfaceError)


def run_mark_running(*, run_id: int) -> Run | None:
    """Claim a queued run and move it to running (None if another delivery of its task already
    claimed it, or it is final: cancelled, failed, done)."""
    now = timezone.now()
    updated = Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(
        status=RunStatus.RUNNING,
        started=now,
        heartbeat=now,
        stage="starting",
        error="",
        attempts=F("attempts") + 1,
    )
    if not updated:
        return None
    run = Run.objects.select_related("scenario", "scenario__design").get(pk=run_id)
    broadcast.publish_status(run)
    return run


#: The contexts of the runs this process computed lately: a split run's chunks and its merge on
#: one worker share one, so its scenario is validated once and what the kind memoizes on it (the
#: fabric, a failure study) is built once. Keyed by the design's id and version and by
#: everything else a context is built from -- the run (its id, kind, options and stored inputs),
#: the saved scenario's sections and the catalog's content -- so a changed design, scenario or
#: catalog can never reuse a stale entry. A run with stored inputs computes from them
#: (``RunContext.load``: the document as it ran, its catalog snapshot), not from today's rows.
_CONTEXTS = VersionedCache("run-context", maxsize=2)


def _context(run: Run) -> RunContext:
    """The run's context, from this process's cache when its inputs are unchanged."""
    from topology.models import Design
    from topology.selectors import catalog_load

    catalog = catalog_load()
    design = Design.objects.get(pk=run.scenario.design_id)
    inputs = {k: v for k, v in (run.inputs or {}).items() if k != "design_version"}  # pinned later
    context = _CONTEXTS.get(
        design,
        lambda: RunContext.load(run, design=design, catalog=catalog),
        run.pk,
        run.kind,
        _digest({"options": run.options, "inputs": inputs, **_scenario_sections(run.scenario)}),
        _digest(repr(catalog)),
    )
    return replace(context, run=run)  # this task's row; the memo stays shared


def _scenario_sections(scenario) -> dict[str, Any]:
    keys = ("name", "job", "what_if", "failures", "power")
    return {"updated": str(scenario.updated), **{key: getattr(scenario, key) for key in keys}}


def _digest(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _load(run: Run, *, pin: bool) -> RunContext:
    """The run's context; the first load records the design version the run simulates, later
    loads (chunks, merge) refuse a design that changed since (their results would not merge)."""
    context = _context(run)
    version = context.design.version
    if pin:
        inputs = _pinned_inputs(run, context, version)
        Run.objects.filter(pk=run.pk).update(design_version=version, inputs=inputs)
        run.design_version, run.inputs = version, inputs
    elif version != run.design_version:
        raise DesignChangedMeanwhile(
            f"design: changed from version {run.design_version} to {version} while the run was "
            "computing; start the run again"
        )
    return context


def _pinned_inputs(run: Run, context: RunContext, version: int) -> dict[str, Any]:
    """The run's inputs with the design version it computes on; a run queued before inputs were
    kept records them now, from what its context was built of (the saved scenario, today's
    catalog)."""
    from scenarios.provenance import RunInputs
    from scenarios.scenario_file import scenario_to_dict

    inputs = RunInputs.of(run)
    if inputs is None:
        inputs = RunInputs.build(
            scenario_to_dict(scenario=run.scenario), design_version=version, catalog=context.catalog
        )
    return inputs.with_design_version(version).to_json()


def run_execute(*, run_id: int) -> str:
    """Run a queued run: compute it in this process, or split it into chunks for other workers.

    Returns what happened: ``"skipped"`` (claimed by another delivery, or final), ``"split"``
    (chunks queued; the worker saving the last one merges), ``"succeeded"``, ``"failed"`` or
    ``"cancelled"``.
    """
    run = run_mark_running(run_id=run_id)
    if run is None:
        return "skipped"
    try:
        with Heartbeat(run.pk):
            context = _load(run, pin=True)
            spec = run_kind(run.kind)
            chunks = spec.split(context)
            if chunks is not None and len(chunks) > 1:
                _dispatch_chunks(run, chunks)
                return "split"
            output = spec.execute(context, RunProgress(run))
            return run_finish(run=run, output=output)
    except JobInfeasible as exc:
        return run_finish(run=run, output=RunOutput(summary={}, infeasible=exc.reasons))
    except RunCancelled:
        return "cancelled"
    except TRANSIENT_ERRORS:
        raise
    except Exception as exc:
        _log_failure(run_id, exc)
        return run_fail(run=run, error=error_text(exc))


def _dispatch_chunks(run: Run, chunks: list[dict[str, Any]]) -> None:
    """Save one ``RunChunk`` row per chunk (their state is what the reaper judges), then queue
    one task each; the worker finishing the last chunk merges."""
    rows = RunChunk.objects.bulk_create(
        RunChunk(run=run, index=i, spec=chunk, task_id=str(uuid.uuid4())) for i, chunk in enumerate(chunks)
    )
    Run.objects.filter(pk=run.pk).update(stage=waiting_stage(0, len(rows)), heartbeat=timezone.now())
    for row in rows:
        queue.enqueue_chunk(run.pk, row.index, row.task_id)


def waiting_stage(done: int, total: int) -> str:
    """The stage of a split run between its chunks: how many are done, how many still wait."""
    return f"{done}/{total} chunks done, waiting for {total - done} (queued or computing)"


def _claim_chunk(run_id: int, index: int) -> RunChunk | None:
    """Take one chunk of a running run for this worker: a queued one, or one whose worker's
    lease expired. None when it is done or computing elsewhere (a redelivered duplicate)."""
    now = timezone.now()
    expired = now - timedelta(seconds=stale_after_s())
    claimed = (
        RunChunk.objects.filter(run_id=run_id, index=index, run__status=RunStatus.RUNNING)
        .filter(Q(state=ChunkState.QUEUED) | Q(state=ChunkState.RUNNING, heartbeat__lt=expired))
        .update(state=ChunkState.RUNNING, heartbeat=now, attempts=F("attempts") + 1)
    )
    return RunChunk.objects.get(run_id=run_id, index=index) if claimed else None


def run_chunk_compute(*, run_id: int, index: int) -> str:
    """Compute one chunk of a split run, save its result and merge if it was the last one.

    Returns ``"skipped"`` (done already, computing elsewhere, or the run is final), ``"waiting"``
    (saved; other chunks still to come), or what the merge returned. An error fails the run.
    """
    chunk = _claim_chunk(run_id, index)
    if chunk is None:
        return "skipped"
    run = Run.objects.select_related("scenario", "scenario__design").get(pk=run_id)
    try:
        with Heartbeat(run.pk, chunk.pk):
            context = _load(run, pin=False)
            result = run_kind(run.kind).compute_chunk(context, chunk.spec, RunProgress(run))
    except RunCancelled:
        return "cancelled"
    except TRANSIENT_ERRORS:
        raise
    except Exception as exc:
        _log_failure(run_id, exc, chunk=index)
        return run_fail(run=run, error=error_text(exc))
    # A chunk computed twice (its lease expired while it was still alive) counts once.
    RunChunk.objects.filter(pk=chunk.pk).exclude(state=ChunkState.DONE).update(
        state=ChunkState.DONE, result=json_safe(result), heartbeat=timezone.now()
    )
    return run_merge(run_id=run_id)


def _claim_merge(run_id: int) -> str:
    """``"claimed"`` when this process takes the merge: every chunk is done and nobody merges
    already (``stage`` is "merging" with a live heartbeat while someone does); ``"waiting"``
    while chunks are still to come; ``"skipped"`` when the run is final or merged elsewhere."""
    chunks = RunChunk.objects.filter(run_id=run_id)
    done = chunks.filter(state=ChunkState.DONE).count()
    total = chunks.count()
    if not total:  # not split (a merge message queued before an upgrade): nothing to merge
        return "skipped"
    if done < total:
        Run.objects.filter(pk=run_id, status=RunStatus.RUNNING).exclude(stage=MERGING).update(
            stage=waiting_stage(done, total)
        )
        return "waiting"
    now = timezone.now()
    expired = now - timedelta(seconds=stale_after_s())
    claimed = (
        Run.objects.filter(pk=run_id, status=RunStatus.RUNNING)
        .exclude(stage=MERGING, heartbeat__gte=expired)
        .update(stage=MERGING, heartbeat=now)
    )
    return "claimed" if claimed else "skipped"


def run_merge(*, run_id: int) -> str:
    """Merge the chunk results of a split run (in chunk order, exactly) and finish it once every
    chunk is done; ``"waiting"`` before that, ``"skipped"`` if it is final or merged elsewhere."""
    claim = _claim_merge(run_id)
    if claim != "claimed":
        return claim
    run = Run.objects.select_related("scenario", "scenario__design").get(pk=run_id)
    results = list(RunChunk.objects.filter(run_id=run_id).order_by("index").values_list("result", flat=True))
    try:
        with Heartbeat(run.pk):
            context = _load(run, pin=False)
            return run_finish(run=run, output=run_kind(run.kind).merge(context, results))
    except TRANSIENT_ERRORS:
        raise
    except Exception as exc:
        _log_failure(run_id, exc, chunk="merge")
        return run_fail(run=run, error=error_text(exc))


def run_finish(*, run: Run, output: RunOutput) -> str:
    """Save a run's output (summary, arrays), mark it succeeded -- or infeasible, with its
    reasons in ``summary["infeasible"]``, when the output says the job cannot run -- and publish
    partials + status. Returns the new status.

    A run cancelled meanwhile stays cancelled.
    """
    summary = dict(output.summary)
    status = RunStatus.SUCCEEDED
    if output.infeasible:
        status = RunStatus.INFEASIBLE
        summary["infeasible"] = list(output.infeasible)
    with transaction.atomic():
        locked = Run.objects.select_for_update().filter(pk=run.pk, status=RunStatus.RUNNING).first()
        if locked is None:
            return "cancelled"
        RunArray.objects.filter(run=run).delete()
        rows = []
        for name, values in output.arrays.items():
            data, dtype, shape = array_to_bytes(values)
            rows.append(RunArray(run=run, name=name, dtype=dtype, shape=shape, data=data))
        RunArray.objects.bulk_create(rows)
        Run.objects.filter(pk=run.pk).update(
            status=status,
            progress=1.0,
            stage="done" if status == RunStatus.SUCCEEDED else "infeasible",
            summary=json_safe(summary),
            finished=timezone.now(),
            heartbeat=timezone.now(),
        )
    run.refresh_from_db()
    for metric, values in output.rack_values.items():
        broadcast.publish_partial(run, metric=metric, values=values, summary=None, force=True)
    broadcast.publish_status(run)
    return str(status)


def run_fail(*, run: Run, error: str) -> str:
    """Mark a running run failed with its error text (shown on the page) and publish it."""
    updated = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
        status=RunStatus.FAILED, error=error[:4000], finished=timezone.now(), stage="failed"
    )
    if not updated:
        return "cancelled"
    run.refresh_from_db()
    broadcast.publish_status(run)
    return "failed"


def error_text(exc: BaseException) -> str:
    """A one-line message for the page: the exception's own text, its type when it has none."""
    text = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc).strip()
    return text or exc.__class__.__name__


def _input_errors() -> tuple[type[BaseException], ...]:
    """Errors of the user's input (a scenario the catalog no longer admits, a cluster that
    cannot be built, a design changed while computing): logged as one line, not a traceback."""
    from scenarios.sim.format.scenario import ScenarioError
    from topology.fabric.plan import FabricError
    from topology.fabric.specs import CatalogError

    return (ValidationError, ScenarioError, FabricError, CatalogError, DesignChangedMeanwhile)


def _log_failure(run_id: int, exc: BaseException, chunk: Any = None) -> None:
    where = f"run {run_id}" + (f" chunk {chunk}" if chunk is not None else "")
    if isinstance(exc, _input_errors()):
        logger.warning("%s failed: %s", where, error_text(exc).splitlines()[0][:500])
    else:
        logger.exception("%s failed", where)
