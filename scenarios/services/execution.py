"""Computing runs (what the Celery tasks call): mark running, compute in one piece or split into
chunks for other workers, merge, save results, fail with a readable message."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Least
from django.utils import timezone

from scenarios import broadcast, queue
from scenarios.choices import ACTIVE_STATUSES, RunStatus
from scenarios.kinds import RunContext, RunOutput, run_kind
from scenarios.models import Run, RunArray
from scenarios.services.runs import heartbeat_interval_s
from scenarios.storage import array_to_bytes
from topology.fabric.jsonsafe import json_safe

logger = logging.getLogger(__name__)


class RunCancelled(Exception):
    """Raised inside a computation when its run was cancelled; unwinds the core quietly."""


class DesignChangedMeanwhile(Exception):
    """A chunk found the design at another version than the one the run started on."""


class RunProgress:
    """The ``on_progress`` callback handed to the core for one run (or one chunk of it).

    Saves ``progress``/``stage`` at most twice a second, publishes through ``broadcast`` (which
    throttles to <= 10 messages/s per run), and raises :class:`RunCancelled` when the run was
    cancelled meanwhile. ``span`` maps the core's 0..1 onto a slice of the run's progress.
    """

    SAVE_INTERVAL_S = 0.5

    def __init__(self, run: Run, *, start: float = 0.0, span: float = 1.0):
        self.run = run
        self.start = start
        self.span = span
        self._last_save = 0.0

    def __call__(self, fraction: float, stage: str = "") -> None:
        progress = min(1.0, max(0.0, self.start + self.span * float(fraction)))
        now = time.monotonic()
        if now - self._last_save >= self.SAVE_INTERVAL_S or fraction >= 1.0:
            self._last_save = now
            updated = Run.objects.filter(pk=self.run.pk, status=RunStatus.RUNNING).update(
                progress=progress, stage=stage[:200], heartbeat=timezone.now()
            )
            if not updated:
                raise RunCancelled(self.run.pk)
        broadcast.publish_progress(self.run, progress, stage)

    def item_done(self, items_total: int, stage: str, partial: dict[str, Any] | None = None) -> None:
        """Count one finished item of ``items_total`` in the whole run and publish it.

        Adds ``1 / items_total`` in SQL (capped below 1 until the run finishes), so chunks on
        different workers add up; ``partial`` goes out as a partial message's summary.
        """
        updated = Run.objects.filter(pk=self.run.pk, status=RunStatus.RUNNING).update(
            progress=Least(F("progress") + 1.0 / max(items_total, 1), 0.99),
            stage=stage[:200],
            heartbeat=timezone.now(),
        )
        if not updated:
            raise RunCancelled(self.run.pk)
        progress = Run.objects.filter(pk=self.run.pk).values_list("progress", flat=True).first() or 0.0
        broadcast.publish_progress(self.run, progress, stage)
        if partial is not None:
            broadcast.publish_partial(self.run, metric=None, values=None, summary=partial)

    def check_cancelled(self) -> None:
        """Raise :class:`RunCancelled` if the run is no longer running."""
        if not Run.objects.filter(pk=self.run.pk, status=RunStatus.RUNNING).exists():
            raise RunCancelled(self.run.pk)


class Heartbeat:
    """A daemon thread refreshing ``Run.heartbeat`` every ``heartbeat_interval_s()`` while a task
    computes (the core may not call back for a long while on a big design)."""

    def __init__(self, run_id: int):
        self.run_id = run_id
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
                Run.objects.filter(pk=self.run_id, status=RunStatus.RUNNING).update(heartbeat=timezone.now())
        except Exception:
            logger.exception("heartbeat of run %s stopped", self.run_id)
        finally:
            connection.close()


def run_mark_running(*, run_id: int) -> Run | None:
    """Move a queued run to running (None if it is already final: cancelled, reaped, done)."""
    now = timezone.now()
    updated = Run.objects.filter(pk=run_id, status__in=ACTIVE_STATUSES).update(
        status=RunStatus.RUNNING, started=now, heartbeat=now, stage="starting", error=""
    )
    if not updated:
        return None
    run = Run.objects.select_related("scenario", "scenario__design").get(pk=run_id)
    broadcast.publish_status(run)
    return run


def _load(run: Run, *, pin: bool) -> RunContext:
    """The run's context; the first load records the design version the run simulates, later
    loads (chunks, merge) refuse a design that changed since (their results would not merge)."""
    context = RunContext.load(run)
    version = context.design.version
    if pin:
        Run.objects.filter(pk=run.pk).update(design_version=version)
        run.design_version = version
    elif version != run.design_version:
        raise DesignChangedMeanwhile(
            f"design: changed from version {run.design_version} to {version} while the run was "
            "computing; start the run again"
        )
    return context


def run_execute(*, run_id: int) -> str:
    """Run a queued run: compute it in this process, or split it into chunks for other workers.

    Returns what happened: ``"skipped"`` (already final), ``"split"`` (chunks dispatched; the
    merge task finishes the run), ``"succeeded"``, ``"failed"`` or ``"cancelled"``.
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
                Run.objects.filter(pk=run.pk).update(
                    stage=f"0/{len(chunks)} chunks", heartbeat=timezone.now()
                )
                queue.dispatch_chunks(run.pk, chunks)
                return "split"
            output = spec.execute(context, RunProgress(run))
            return run_finish(run=run, output=output)
    except RunCancelled:
        return "cancelled"
    except Exception as exc:
        _log_failure(run_id, exc)
        return run_fail(run=run, error=error_text(exc))


def run_chunk_compute(*, run_id: int, index: int, total: int, chunk: dict[str, Any]) -> dict[str, Any]:
    """Compute one chunk of a split run; never raises (errors come back as ``{"error": ...}``).

    Returns
    -------
    dict
        The kind's JSON chunk result, or ``{"error": msg}`` / ``{"cancelled": True}``.
    """
    run = Run.objects.select_related("scenario", "scenario__design").filter(pk=run_id).first()
    if run is None or run.status != RunStatus.RUNNING:
        return {"cancelled": True}
    try:
        with Heartbeat(run.pk):
            Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(heartbeat=timezone.now())
            context = _load(run, pin=False)
            return run_kind(run.kind).compute_chunk(context, chunk, RunProgress(run))
    except RunCancelled:
        return {"cancelled": True}
    except Exception as exc:
        _log_failure(run_id, exc, chunk=index)
        return {"error": error_text(exc)}


def run_merge(*, run_id: int, results: list[dict[str, Any]]) -> str:
    """Merge the chunk results of a split run exactly and finish it (the chord's callback)."""
    run = Run.objects.select_related("scenario", "scenario__design").filter(pk=run_id).first()
    if run is None or run.status != RunStatus.RUNNING:
        return "skipped"
    errors = [r["error"] for r in results if isinstance(r, dict) and r.get("error")]
    if errors:
        return run_fail(run=run, error=errors[0])
    if any(isinstance(r, dict) and r.get("cancelled") for r in results):
        return "cancelled"
    try:
        context = _load(run, pin=False)
        return run_finish(run=run, output=run_kind(run.kind).merge(context, results))
    except Exception as exc:
        _log_failure(run_id, exc, chunk="merge")
        return run_fail(run=run, error=error_text(exc))


def run_finish(*, run: Run, output: RunOutput) -> str:
    """Save a run's output (summary, arrays), mark it succeeded and publish partials + status.

    A run cancelled meanwhile stays cancelled.
    """
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
            status=RunStatus.SUCCEEDED,
            progress=1.0,
            stage="done",
            summary=json_safe(output.summary),
            finished=timezone.now(),
            heartbeat=timezone.now(),
        )
    run.refresh_from_db()
    for metric, values in output.rack_values.items():
        broadcast.publish_partial(run, metric=metric, values=values, summary=None, force=True)
    broadcast.publish_status(run)
    return "succeeded"


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
    from scenarios.sim.scenario import ScenarioError
    from topology.fabric.plan import FabricError
    from topology.fabric.specs import CatalogError

    return (ValidationError, ScenarioError, FabricError, CatalogError, DesignChangedMeanwhile)


def _log_failure(run_id: int, exc: BaseException, chunk: Any = None) -> None:
    where = f"run {run_id}" + (f" chunk {chunk}" if chunk is not None else "")
    if isinstance(exc, _input_errors()):
        logger.warning("%s failed: %s", where, error_text(exc).splitlines()[0][:500])
    else:
        logger.exception("%s failed", where)
