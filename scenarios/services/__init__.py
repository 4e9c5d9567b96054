"""Writes and actions of the scenarios app, by concern:

- ``scenarios``: validate, create, update, duplicate scenarios; the scenario file in and out;
- ``runs``: start, cancel and reap runs (what users and operators do);
- ``execution``: compute runs in workers (what the Celery tasks call).
"""

from __future__ import annotations

from scenarios.scenario_file import design_cluster, scenario_check, scenario_dict, scenario_to_dict
from scenarios.services.execution import (
    TRANSIENT_ERRORS,
    RunCancelled,
    RunProgress,
    error_text,
    run_chunk_compute,
    run_execute,
    run_fail,
    run_finish,
    run_mark_running,
    run_merge,
)
from scenarios.services.runs import (
    Reaped,
    Redispatched,
    heartbeat_interval_s,
    max_attempts,
    run_cancel,
    run_delete,
    run_rerun,
    run_start,
    runs_fail_orphaned_on_start,
    runs_reap_stale,
    runs_redispatch_unheld,
    scenario_require_revision,
    stale_after_s,
)
from scenarios.services.scenarios import (
    scenario_create,
    scenario_delete,
    scenario_duplicate,
    scenario_from_yaml,
    scenario_to_yaml,
    scenario_update,
)

__all__ = [
    "TRANSIENT_ERRORS",
    "Reaped",
    "Redispatched",
    "RunCancelled",
    "RunProgress",
    "design_cluster",
    "error_text",
    "heartbeat_interval_s",
    "max_attempts",
    "run_cancel",
    "run_chunk_compute",
    "run_delete",
    "run_execute",
    "run_fail",
    "run_finish",
    "run_mark_running",
    "run_merge",
    "run_rerun",
    "run_start",
    "runs_fail_orphaned_on_start",
    "runs_reap_stale",
    "runs_redispatch_unheld",
    "scenario_check",
    "scenario_create",
    "scenario_delete",
    "scenario_dict",
    "scenario_duplicate",
    "scenario_from_yaml",
    "scenario_require_revision",
    "scenario_to_dict",
    "scenario_to_yaml",
    "scenario_update",
    "stale_after_s",
]
