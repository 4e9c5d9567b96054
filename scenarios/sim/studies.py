"""Failure and power studies of one scenario on one fabric: the few steps that turn a scenario into
the inputs of the failure and power cores, written once for the command line and the web app.

A failure study needs the failure-free step time, the step time with each kind of degraded part
(the step-time core on the degraded fabric: no constant slowdown), the job's servers and its
checkpoint size. A power study needs the step's per-stage phase timeline and, to show a job's
life (start, checkpoints, crashes, restarts), the events of a failure study's representative
trial.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scenarios.sim.failures import (
    FailureModel,
    FailureResult,
    FailureSpec,
    checkpoint_size,
    degraded_fabric,
    failure_components,
    job_work_seconds,
    parse_failures,
    simulate_failures,
)
from scenarios.sim.failures.model import DEGRADE_KINDS
from scenarios.sim.format.power import EVENT_CODES, JobEvents, PowerSpec, job_events, parse_power
from scenarios.sim.format.scenario import CheckedScenario, Scenario, checked_scenario
from scenarios.sim.placement import place_job
from scenarios.sim.power import PowerResult, power_inputs, simulate_power
from scenarios.sim.step.model import predict, scenario_gpu
from scenarios.sim.step.result import StepResult

#: Component kinds whose loss slows the job instead of stopping it, and the part of the fabric
#: ``degraded_fabric`` takes away for each.
DEGRADING = DEGRADE_KINDS


@dataclass(frozen=True)
class FailureStudy:
    """Everything a failure simulation of the scenario needs (JSON-able except the model).

    ``run_kwargs`` are the keyword arguments of ``simulate_failures`` / ``run_failure_chunk``.
    """

    model: FailureModel = field(repr=False)
    spec: FailureSpec
    run_kwargs: dict[str, Any]
    step: StepResult = field(repr=False)


def failure_study(
    scenario: Scenario | CheckedScenario,
    *,
    catalog,
    plan,
    fabric,
    step: StepResult | None = None,
    step_times=None,
) -> FailureStudy:
    """Build the failure study of ``scenario`` on its ``plan`` / ``fabric``.

    Parameters
    ----------
    scenario : Scenario or CheckedScenario
        Its ``failures`` section (defaults when absent) and job; validated against ``catalog``
        once (unless it is a ``CheckedScenario`` of it), its step predictions reuse that.
    catalog : Catalog
    plan, fabric : FabricPlan, CompiledFabric
        The cluster the job runs on (its idle servers are hot spares).
    step : StepResult, optional
        The failure-free prediction, when the caller has it.
    step_times : dict, optional
        ``{"step_time_s", "degraded_step_time_s": {kind: s}}`` computed earlier (a chunk of a
        split run gets them from the run's first task instead of predicting four times again).
    """
    checked = checked_scenario(scenario, catalog)
    scenario = checked.scenario
    spec = scenario.failures or parse_failures(None)
    model = failure_components(plan, fabric, place_job(fabric, scenario.job).nodes, catalog)
    if step_times is None:
        step = step or predict(checked, catalog=catalog, fabric=fabric)
        degraded = _degraded(checked, catalog, fabric, model)
        step_times = {"step_time_s": step.step_time_s, "degraded_step_time_s": degraded}
    run_kwargs = {
        "step_time_s": float(step_times["step_time_s"]),
        "degraded_step_time_s": dict(step_times["degraded_step_time_s"]),
        "job_work_s": job_work_seconds(spec, scenario.job, float(step_times["step_time_s"])),
        "checkpoint": checkpoint_size(scenario.job),
    }
    return FailureStudy(model=model, spec=spec, run_kwargs=run_kwargs, step=step)


def _degraded(checked: CheckedScenario, catalog, fabric, model: FailureModel) -> dict[str, float]:
    """Step time with one part of each degrading kind the job uses lost (the core on the
    degraded fabric)."""
    used = model.counts()
    return {
        kind: predict(checked, catalog=catalog, fabric=degraded_fabric(fabric, kind)).step_time_s
        for kind in DEGRADING
        if used.get(kind, 0) > 0
    }


def run_failure_study(study: FailureStudy, *, on_progress=None) -> FailureResult:
    """The whole Monte Carlo in this process (what a chunked run merges to)."""
    return simulate_failures(study.model, study.spec, on_progress=on_progress, **study.run_kwargs)


def power_events_from_failures(event_log: list[dict] | None, *, checkpoint_s: float = 0.0, interval_s=None):
    """The job-level power events of a failure trial: every stop is a crash lasting its
    downtime, then a restart; blocking checkpoint saves are stalls of ``checkpoint_s`` every
    ``interval_s`` (none when either is 0 or None).

    Parameters
    ----------
    event_log : list of dict or None
        ``FailureResult.event_log`` (time_s, effect, downtime_s...).
    checkpoint_s, interval_s : float

    Returns
    -------
    JobEvents (``format.power.job_events``), sorted by time.
    """
    stops = [e for e in event_log or () if e.get("effect") == "stop"]
    stop_t = np.array([float(e["time_s"]) for e in stops], dtype=float)
    down = np.array([float(e.get("downtime_s") or 0.0) for e in stops], dtype=float)
    times = [np.zeros(1), stop_t, stop_t + down]
    kinds = [np.full(1, EVENT_CODES["start"]), np.full(stop_t.size, EVENT_CODES["crash"])]
    kinds.append(np.full(stop_t.size, EVENT_CODES["restart"]))
    durations = [np.zeros(1), down, np.zeros(stop_t.size)]
    if checkpoint_s > 0 and interval_s:
        horizon = max(float((stop_t + down).max(initial=0.0)), 4.0 * float(interval_s))
        saves = np.arange(float(interval_s), horizon, float(interval_s))
        times.append(saves)
        kinds.append(np.full(saves.size, EVENT_CODES["checkpoint"]))
        durations.append(np.full(saves.size, float(checkpoint_s)))
    time_s = np.concatenate(times)
    order = np.argsort(time_s, kind="stable")
    return job_events(
        JobEvents(
            time_s=time_s[order],
            kind=np.concatenate(kinds).astype(np.int8)[order],
            duration_s=np.concatenate(durations)[order],
        )
    )


def power_study(
    scenario: Scenario | CheckedScenario,
    *,
    catalog,
    plan,
    fabric,
    step: StepResult | None = None,
    events=None,
    on_progress=None,
) -> PowerResult:
    """Simulate the cluster's power draw for ``scenario`` (its ``power`` section, defaults when
    absent) from the step's per-stage timeline; ``events`` (``job_events``) add the job's life.
    ``scenario`` is validated against ``catalog`` unless it is a ``CheckedScenario`` of it."""
    checked = checked_scenario(scenario, catalog)
    scenario = checked.scenario
    spec: PowerSpec = scenario.power or parse_power(None)
    step = step or predict(checked, catalog=catalog, fabric=fabric)
    inputs = power_inputs(plan, fabric, step.timeline, scenario_gpu(scenario, catalog))
    return simulate_power(inputs, spec, events=events, on_progress=on_progress)
