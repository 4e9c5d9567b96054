"""Writes and actions of the scenarios app: scenarios (create, update, duplicate, YAML) and the
life cycle of runs (start, execute, cancel, reap).

Scenario input is validated by the pure core (``scenarios.sim.scenario``) against the catalog in
the database; its errors become ``ValidationError({field path: message})`` where the field path
is the scenario file's dotted path (``"job.parallel.tp"``, ``"what_if.nic_gbps"``, ``"name"``) so
a form can show each message next to its field.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import yaml
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import close_old_connections, connection, transaction
from django.db.models import F
from django.db.models.functions import Least
from django.utils import timezone

from scenarios import broadcast
from scenarios.choices import ACTIVE_STATUSES, RunKind, RunStatus
from scenarios.models import Run, RunArray, Scenario
from scenarios.storage import array_to_bytes

logger = logging.getLogger(__name__)

#: Keys of a Scenario's ``what_if`` JSON that the web app adds to the file format's ``what_if``.
WEB_WHAT_IF_KEYS = ("nodes",)
#: Cluster keys a generated design's parameters carry into a scenario file's ``cluster:``.
CLUSTER_KEYS = ("server", "nodes", "nic_gbps", "oversubscription", "su_nodes", "tiers", "switch")


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


def heartbeat_interval_s() -> float:
    """How often a running task refreshes ``Run.heartbeat`` (``TWIN_RUN_HEARTBEAT_S``, 5 s)."""
    return _setting("TWIN_RUN_HEARTBEAT_S", 5.0)


def stale_after_s() -> float:
    """A running run whose heartbeat is older than this is reaped (``TWIN_RUN_STALE_S``, 60 s)."""
    return _setting("TWIN_RUN_STALE_S", 60.0)


# --- scenario <-> scenario file dict -------------------------------------------------------------


def design_cluster(*, design) -> dict[str, Any]:
    """The scenario file's ``cluster:`` mapping of a design.

    Generated designs give their generator and parameters; a manual design gives its server
    type and node count (the run then simulates the saved design itself).
    """
    from scenarios.sim.scenario import GENERATORS
    from topology.models import Node

    params = design.parameters or {}
    if design.generator in GENERATORS and params.get("server") and params.get("nodes"):
        cluster = {"generator": design.generator}
        cluster.update({k: params[k] for k in CLUSTER_KEYS if params.get(k) is not None})
        return cluster
    nodes = Node.objects.filter(rack__hall__design=design)
    server = nodes.values_list("server_type__slug", flat=True).first()
    return {"generator": "fat-tree", "server": server or "", "nodes": nodes.count()}


def _node_index_by_name(design) -> dict[str, int]:
    from topology.models import Node

    names = Node.objects.filter(rack__hall__design=design).order_by("pk").values_list("name", flat=True)
    return {name: i for i, name in enumerate(names)}


def _resolve_slow_nodes(design, slow_nodes: Any) -> Any:
    """Node names in ``what_if.slow_nodes`` -> node indices (ints pass through)."""
    if not isinstance(slow_nodes, list | tuple) or all(isinstance(n, int) for n in slow_nodes):
        return slow_nodes
    by_name = _node_index_by_name(design)
    resolved = []
    for entry in slow_nodes:
        if isinstance(entry, str) and not entry.isdigit():
            if entry not in by_name:
                raise ValidationError({"what_if.slow_nodes": f"unknown node {entry!r} in design {design}"})
            resolved.append(by_name[entry])
        else:
            resolved.append(int(entry) if isinstance(entry, str) else entry)
    return resolved


def scenario_dict(*, design, name: str, job: Any, what_if: Mapping[str, Any] | None) -> dict[str, Any]:
    """The scenario file dict (``version: 1``) of a design, a job and web what-if overrides.

    The web-only ``what_if.nodes`` becomes ``cluster.nodes``; node names in
    ``what_if.slow_nodes`` become indices.
    """
    from scenarios.sim.scenario import SCHEMA_VERSION

    cluster = design_cluster(design=design)
    overrides = dict(what_if or {})
    if overrides.get("nodes") is not None and overrides["nodes"] != cluster.get("nodes"):
        cluster["nodes"] = overrides["nodes"]
        for sized_for_the_design in ("tiers", "su_nodes", "switch"):
            cluster.pop(sized_for_the_design, None)
    file_what_if = {k: v for k, v in overrides.items() if k not in WEB_WHAT_IF_KEYS and v is not None}
    if "slow_nodes" in file_what_if:
        file_what_if["slow_nodes"] = _resolve_slow_nodes(design, file_what_if["slow_nodes"])
    out = {"version": SCHEMA_VERSION, "name": name, "cluster": cluster, "job": job}
    if file_what_if:
        out["what_if"] = file_what_if
    return out


def scenario_to_dict(*, scenario: Scenario) -> dict[str, Any]:
    """The scenario file dict of a saved scenario (what the core, the CLI and YAML export read)."""
    return scenario_dict(
        design=scenario.design, name=scenario.name, job=scenario.job, what_if=scenario.what_if
    )


def _field_of(message: str) -> str:
    """The dotted field path a ScenarioError message starts with (``"job.parallel.tp: ..."``)."""
    head, sep, _ = message.partition(":")
    if sep and head and " " not in head:
        return head
    return "__all__"


def _web_field(field: str, what_if: Mapping[str, Any]) -> str:
    # Cluster errors come from the web what-if overrides (the design itself is valid).
    if field == "cluster.nodes" and what_if.get("nodes") is not None:
        return "what_if.nodes"
    if field == "cluster.server" and what_if.get("server"):
        return "what_if.server"
    return field


def scenario_check(*, design, name: str, job: Any, what_if: Mapping[str, Any] | None, catalog=None):
    """Validate a design + job + overrides with the core's rules; return the core ``Scenario``.

    Raises
    ------
    ValidationError
        ``{field path: [message]}``, the path being the scenario file's (``job.parallel.tp``).
    """
    from scenarios.sim.scenario import ScenarioError, check_scenario, parse_scenario
    from topology.selectors import catalog_load

    what_if = dict(what_if or {})
    if not isinstance(name, str) or not name.strip():
        raise ValidationError({"name": "must be a non-empty name"})
    if what_if.get("nodes") is not None and (
        isinstance(what_if["nodes"], bool) or not isinstance(what_if["nodes"], int) or what_if["nodes"] < 1
    ):
        raise ValidationError({"what_if.nodes": f"must be an integer ≥ 1 (got {what_if['nodes']!r})"})
    data = scenario_dict(design=design, name=name, job=job, what_if=what_if)
    try:
        scenario = parse_scenario(data)
        check_scenario(scenario, catalog or catalog_load())
    except ScenarioError as exc:
        message = str(exc)
        raise ValidationError({_web_field(_field_of(message), what_if): message}) from None
    return scenario


def _check_visible(user, design) -> None:
    from topology.models import Design

    if user is None or not Design.objects.visible_to(user).filter(pk=design.pk).exists():
        raise PermissionDenied(f"design {design.pk}: not visible to this user")


def scenario_create(
    *, design, name: str, job: Any, what_if: Mapping[str, Any] | None = None, user, description: str = ""
) -> Scenario:
    """Validate and save a scenario on a design the user may see.

    Raises
    ------
    PermissionDenied
        The design is not visible to ``user``.
    ValidationError
        ``{field path: message}`` (see the module docstring).
    """
    _check_visible(user, design)
    scenario_check(design=design, name=name, job=job, what_if=what_if)
    scenario = Scenario(
        design=design,
        name=name.strip(),
        job=job,
        what_if=dict(what_if or {}),
        created_by=user,
        description=description,
    )
    scenario.full_clean()
    scenario.save()
    return scenario


def scenario_update(
    *,
    scenario: Scenario,
    user,
    name: str | None = None,
    job: Any = None,
    what_if: Mapping[str, Any] | None = None,
    description: str | None = None,
) -> Scenario:
    """Change a scenario's name, job, overrides or description (``None`` keeps a value) and
    re-validate. Existing runs keep the results they computed."""
    _check_visible(user, scenario.design)
    new_name = scenario.name if name is None else name
    new_job = scenario.job if job is None else job
    new_what_if = scenario.what_if if what_if is None else dict(what_if)
    scenario_check(design=scenario.design, name=new_name, job=new_job, what_if=new_what_if)
    scenario.name, scenario.job, scenario.what_if = new_name.strip(), new_job, new_what_if
    if description is not None:
        scenario.description = description
    scenario.full_clean()
    scenario.save()
    return scenario


def scenario_duplicate(
    *, scenario: Scenario, user, name: str | None = None, what_if: Mapping[str, Any] | None = None
) -> Scenario:
    """Copy a scenario as a what-if (default name "<name> (what-if)", or "... 2", "... 3")."""
    _check_visible(user, scenario.design)
    if name is None:
        base = f"{scenario.name} (what-if)"
        taken = set(Scenario.objects.filter(design=scenario.design).values_list("name", flat=True))
        name, n = base, 2
        while name in taken:
            name, n = f"{base} {n}", n + 1
    return scenario_create(
        design=scenario.design,
        name=name,
        job=scenario.job,
        what_if=scenario.what_if if what_if is None else what_if,
        user=user,
        description=scenario.description,
    )


def scenario_to_yaml(*, scenario: Scenario) -> str:
    """The scenario as a version-1 scenario file (``manage.py simulate`` runs it as is)."""
    data = scenario_to_dict(scenario=scenario)
    header = f"# Cluster Twin scenario exported from design {scenario.design.name!r}\n"
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def scenario_from_yaml(*, text: str, design=None, user) -> Scenario:
    """Import a scenario file.

    With ``design`` the file's job and what-if are saved on that design (its ``cluster:`` is
    replaced by the design's; a different ``cluster.nodes`` is kept as the ``nodes`` override).
    Without, the file's cluster is generated and saved as a new design of the user's first
    team, then the scenario is saved on it.

    Raises
    ------
    ValidationError
        ``{"yaml": ...}`` for unreadable text, else field paths as ``scenario_create``.
    """
    from scenarios.sim.scenario import ScenarioError, parse_scenario

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValidationError({"yaml": f"not valid YAML ({exc.__class__.__name__})"}) from None
    if isinstance(data, Mapping) and isinstance(data.get("scenarios"), list) and data["scenarios"]:
        data = data["scenarios"][0]
    try:
        parsed = parse_scenario(data)
    except ScenarioError as exc:
        raise ValidationError({_field_of(str(exc)): str(exc)}) from None
    what_if = dict(data.get("what_if") or {})
    if design is None:
        design = _design_for_cluster(data["cluster"], parsed, user)
    else:
        cluster_nodes = (data.get("cluster") or {}).get("nodes")
        if cluster_nodes is not None and cluster_nodes != design_cluster(design=design).get("nodes"):
            what_if["nodes"] = cluster_nodes
    return scenario_create(
        design=design,
        name=parsed.name,
        job=data["job"],
        what_if=what_if,
        user=user,
        description=str(data.get("description") or ""),
    )


def _design_for_cluster(cluster: Mapping[str, Any], parsed, user):
    from scenarios.sim.scenario import ScenarioError
    from scenarios.sim.step_time import cluster_plan
    from topology.models import Design
    from topology.selectors import catalog_load
    from topology.services import design_create_from_plan

    team = user.teams.order_by("pk").first() if user is not None and user.is_authenticated else None
    if team is None:
        raise ValidationError({"design": "choose a design (you belong to no team to create one in)"})
    try:
        plan = cluster_plan(parsed.cluster, catalog_load())
    except ScenarioError as exc:
        raise ValidationError({"cluster": str(exc)}) from None
    name, n = f"{parsed.name} cluster", 2
    while Design.objects.filter(team=team, name=name).exists():
        name, n = f"{parsed.name} cluster {n}", n + 1
    return design_create_from_plan(plan=plan, name=name, team=team, user=user)


# --- runs: start, cancel, reap -------------------------------------------------------------------


def run_start(
    *, scenario: Scenario, kind: str = RunKind.STEP, user, options: Mapping[str, Any] | None = None
) -> Run:
    """Queue a run of the scenario; the Celery task is enqueued after the transaction commits.

    ``options`` are the kind's parameters, normalized by ``scenarios.kinds`` (sweep:
    ``{"nodes": [int], "batch": "fixed"|"scaled", "chunk_size": int, "tokens": float}``; search:
    ``{"top": int, "chunk_size": int}``; step: none).

    Raises
    ------
    PermissionDenied, ValidationError (``{"kind": ...}``, ``{"options.<key>": ...}`` or the
    scenario's field paths when the catalog changed since it was saved).
    """
    from scenarios.kinds import run_kind

    _check_visible(user, scenario.design)
    spec = run_kind(kind)
    core = scenario_check(
        design=scenario.design, name=scenario.name, job=scenario.job, what_if=scenario.what_if
    )
    clean_options = spec.clean_options(core, dict(options or {}))
    run = Run.objects.create(
        scenario=scenario,
        kind=spec.kind,
        options=clean_options,
        created_by=user,
        task_id=str(uuid.uuid4()),
        design_version=scenario.design.version,
        stage="queued",
    )
    transaction.on_commit(lambda: _enqueue(run.pk, run.task_id))
    return run


def _enqueue(run_id: int, task_id: str) -> None:
    from scenarios.tasks import run_execute

    run_execute.apply_async(args=[run_id], task_id=task_id)


def run_cancel(*, run: Run, user) -> Run:
    """Cancel a queued or running run (a final run is returned unchanged).

    The status changes at once; the worker notices at its next progress step and stops, and a
    queued task that has not started is revoked.
    """
    _check_visible(user, run.scenario.design)
    now = timezone.now()
    changed = Run.objects.filter(pk=run.pk, status__in=ACTIVE_STATUSES).update(
        status=RunStatus.CANCELLED, finished=now, stage="cancelled"
    )
    run.refresh_from_db()
    if changed:
        _revoke(run.task_id)
        broadcast.publish_status(run)
    return run


def _revoke(task_id: str) -> None:
    if not task_id:
        return
    try:
        from twin.celery import app

        app.control.revoke(task_id)
    except Exception:  # a broker hiccup must not turn a cancel into an error page
        logger.warning("could not revoke task %s", task_id, exc_info=True)


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
    running = Run.objects.filter(status=RunStatus.RUNNING).filter(_stale_q(cutoff))
    ids = list(running.values_list("pk", flat=True))
    message = f"worker lost: no heartbeat for more than {stale_after:g} s (the worker was killed or stopped)"
    if queued_too:
        ids += list(
            Run.objects.filter(status=RunStatus.QUEUED, created__lt=cutoff).values_list("pk", flat=True)
        )
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


def _stale_q(cutoff):
    from django.db.models import Q

    return (
        Q(heartbeat__lt=cutoff)
        | Q(heartbeat__isnull=True, started__lt=cutoff)
        | Q(heartbeat__isnull=True, started__isnull=True, created__lt=cutoff)
    )


# --- runs: execution (called by the tasks) ---------------------------------------------------------


class RunCancelled(Exception):
    """Raised inside a computation when its run was cancelled; unwinds the core quietly."""


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
        import time

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


def run_execute(*, run_id: int) -> str:
    """Run a queued run: compute it in this process, or split it into chunks for other workers.

    Returns what happened: ``"skipped"`` (already final), ``"split"`` (chunks dispatched; the
    merge task finishes the run), ``"succeeded"``, ``"failed"`` or ``"cancelled"``.
    """
    from scenarios.kinds import RunContext, run_kind

    run = run_mark_running(run_id=run_id)
    if run is None:
        return "skipped"
    try:
        with Heartbeat(run.pk):
            context = RunContext.load(run)
            spec = run_kind(run.kind)
            chunks = spec.split(context) if spec.split else None
            if chunks is not None and len(chunks) > 1:
                _dispatch_chunks(run, chunks)
                return "split"
            progress = RunProgress(run)
            output = spec.execute(context, progress)
            return run_finish(run=run, output=output)
    except RunCancelled:
        return "cancelled"
    except Exception as exc:
        logger.exception("run %s failed", run_id)
        return run_fail(run=run, error=_error_text(exc))


def _dispatch_chunks(run: Run, chunks: list[dict[str, Any]]) -> None:
    from celery import chord

    from scenarios.tasks import run_chunk, run_merge

    Run.objects.filter(pk=run.pk).update(stage=f"0/{len(chunks)} chunks", heartbeat=timezone.now())
    header = [run_chunk.s(run.pk, i, len(chunks), chunk) for i, chunk in enumerate(chunks)]
    chord(header)(run_merge.s(run.pk))


def run_chunk_compute(*, run_id: int, index: int, total: int, chunk: dict[str, Any]) -> dict[str, Any]:
    """Compute one chunk of a split run; never raises (errors come back as ``{"error": ...}``).

    Returns
    -------
    dict
        The kind's JSON chunk result, or ``{"error": msg}`` / ``{"cancelled": True}``.
    """
    from scenarios.kinds import RunContext, run_kind

    run = Run.objects.select_related("scenario", "scenario__design").filter(pk=run_id).first()
    if run is None or run.status != RunStatus.RUNNING:
        return {"cancelled": True}
    try:
        with Heartbeat(run.pk):
            Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(heartbeat=timezone.now())
            context = RunContext.load(run)
            result = run_kind(run.kind).compute_chunk(context, chunk, RunProgress(run))
        return result
    except RunCancelled:
        return {"cancelled": True}
    except Exception as exc:
        logger.exception("run %s chunk %s failed", run_id, index)
        return {"error": _error_text(exc)}


def run_merge(*, run_id: int, results: list[dict[str, Any]]) -> str:
    """Merge the chunk results of a split run exactly and finish it (the chord's callback)."""
    from scenarios.kinds import RunContext, run_kind

    run = Run.objects.select_related("scenario", "scenario__design").filter(pk=run_id).first()
    if run is None or run.status != RunStatus.RUNNING:
        return "skipped"
    errors = [r["error"] for r in results if isinstance(r, dict) and r.get("error")]
    if errors:
        return run_fail(run=run, error=errors[0])
    if any(isinstance(r, dict) and r.get("cancelled") for r in results):
        return "cancelled"
    try:
        context = RunContext.load(run)
        output = run_kind(run.kind).merge(context, results)
        return run_finish(run=run, output=output)
    except Exception as exc:
        logger.exception("run %s merge failed", run_id)
        return run_fail(run=run, error=_error_text(exc))


def run_finish(*, run: Run, output) -> str:
    """Save a run's output (summary, arrays), mark it succeeded and publish partials + status.

    ``output`` is a ``scenarios.kinds.RunOutput``. A run cancelled meanwhile stays cancelled.
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


def json_safe(value: Any) -> Any:
    """Plain JSON: numpy scalars to Python, non-finite floats (NaN, inf) to None, tuples to lists."""
    import math

    import numpy as np

    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _error_text(exc: BaseException) -> str:
    """A one-line message for the page: the exception's own text, its type when it has none."""
    text = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc).strip()
    return text or exc.__class__.__name__


def runs_fail_orphaned_on_start() -> list[int]:
    """Embedded mode at start-up: the in-memory queue is new, so every active run is orphaned."""
    close_old_connections()
    return runs_reap_stale(stale_after=0.0, queued_too=True)
