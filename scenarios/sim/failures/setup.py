"""Resolved inputs of a failure run: hazard-class tables, intervals, and the closed forms.

``resolve_run`` turns a ``FailureModel``, a ``FailureSpec`` and the caller's step times into the
engine's ``EngineConfig`` plus the figures every chunk of the run shares (its ``meta``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scenarios.sim.failures.engine import (
    BLOCK_TRIALS,
    DEGRADE,
    FEED,
    LEMON,
    PLANNED,
    STOP,
    STOP_REMOVE,
    EngineConfig,
)
from scenarios.sim.failures.job import CheckpointSize
from scenarios.sim.failures.model import CATEGORIES, DEGRADE_KINDS, SERVER_KINDS, FailureModel
from scenarios.sim.format.errors import ScenarioError
from scenarios.sim.format.failures import FailureSpec

__all__ = [
    "KIND_NAMES",
    "InjectedEvent",
    "RunSetup",
    "closed_form_etr",
    "injected_arrays",
    "optimal_interval_s",
    "resolve_run",
]

SECONDS_PER_YEAR = 365.0 * 86_400.0  # the AFR convention of the catalog derivation
#: Checkpoint intervals of the sweep, as multiples of the Young/Daly optimum.
SWEEP_FACTORS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0)
#: A trial still unfinished after this many failure-free job durations (ETTR < 10%) is reported
#: as unfinished at that wall time.
MAX_WALL_FACTOR = 10.0
KIND_NAMES = (
    "gpu",
    "hbm",
    "host",
    "nic",
    "psu",
    "nic_link",
    "leaf",
    "spine",
    "core",
    "fabric_link",
    "feed",
    "software",
    "maintenance",
    "planned",
    "lemon",
)
_EFFECT_CODES = {"stop_remove": STOP_REMOVE, "degrade": DEGRADE, "feed": FEED}


@dataclass(frozen=True)
class InjectedEvent:
    """A failure at a chosen time (tests, what-if schedules).

    ``kind`` is a ``HazardClass.kind``, "software", "maintenance" or "planned"; ``component``
    is the index in that kind's index space (a design node for host/psu/maintenance, a GPU for
    gpu/hbm, a NIC port, a link, a switch or a feed; ignored for software and planned).
    """

    time_s: float
    kind: str
    component: int = -1


# --- interval formulas -----------------------------------------------------------------------


def optimal_interval_s(mttf_s: float, save_s: float) -> float:
    """Checkpoint interval (compute seconds between checkpoints) minimising expected waste.

    Daly's higher-order estimate (Daly, "A higher order estimate of the optimum checkpoint
    interval for restart dumps", Future Generation Computer Systems 22(3), 2006): for ``C < 2M``,
    ``sqrt(2CM) * (1 + sqrt(C/2M)/3 + (C/2M)/9) - C``, else ``M``. Its first term is Young's
    (1974) ``sqrt(2CM)``.

    Parameters
    ----------
    mttf_s : float
        Mean time between job-stopping failures M (s).
    save_s : float
        Blocking checkpoint time C (s).
    """
    if not math.isfinite(mttf_s):
        return math.inf
    if save_s >= 2.0 * mttf_s:
        return mttf_s
    ratio = save_s / (2.0 * mttf_s)
    return math.sqrt(2.0 * save_s * mttf_s) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - save_s


def closed_form_etr(
    *,
    stop_rate_per_s: float,
    planned_rate_per_s: float,
    interval_s: float,
    save_s: float,
    async_save: bool,
    detection_s: float,
    restart_s: float,
    reload_s: float,
) -> float:
    """Expected ETTR of exponential failures with checkpoint/restart, in closed form.

    Daly's complete model (Daly, FGCS 22(3), 2006, eq. 20): with mean time between job-stopping
    failures ``M``, restart overhead ``R`` (detection, restart, reload) and a blocking save
    ``C``, a segment of ``tau`` work takes ``M e^{R/M} (e^{(tau + C)/M} - 1)`` on average,
    failures during the restart and the save included. To first order this is Kokolis et al.'s
    ``1 - (u0 + dt_cp / 2) / MTTF`` (HPCA 2025, Section V); unlike it, it stays right when the
    interval is not small against the MTTF (131k GPUs at a 30-minute interval: 0.38 against
    the first order's 0.07, the Monte Carlo 0.38). An asynchronous save pauses nothing but a
    failure loses ``tau / 2 + C`` on average: the exponent takes twice that loss, which is the
    blocking case's ``tau + C``. A planned stop costs a save, a restart and a reload (first
    order: they are rare). Spare waits and degraded bandwidth are outside the model (the
    simulation has them; a gap of more than a point is reported).

    Returns
    -------
    float in [0, 1]
    """
    u0 = detection_s + restart_s + reload_s
    if async_save:
        running, exposed = 1.0, interval_s + 2.0 * save_s
    else:
        running, exposed = interval_s / (interval_s + save_s), interval_s + save_s
    planned = 1.0 - planned_rate_per_s * (save_s + restart_s + reload_s)
    if stop_rate_per_s <= 0.0:
        return float(min(max(running * planned, 0.0), 1.0))
    x, r = exposed * stop_rate_per_s, u0 * stop_rate_per_s
    if x > 700.0 or r > 700.0:  # e^x overflows; the job does not progress
        return 0.0
    value = running * planned * x / (math.exp(r) * math.expm1(x)) if x > 0 else running * planned
    return float(min(max(value, 0.0), 1.0))


# --- inputs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSetup:
    """Resolved inputs of one run (identical for every chunk of it)."""

    config: EngineConfig
    interval_s: float
    optimal_s: float
    sweep_s: tuple[float, ...]
    stop_rate: float
    planned_rate: float
    meta: dict[str, Any] = field(default_factory=dict)


def resolve_run(
    model: FailureModel,
    spec: FailureSpec,
    *,
    step_time_s: float,
    degraded_step_time_s=None,
    job_work_s: float | None = None,
    steps: int | None = None,
    checkpoint: CheckpointSize | None = None,
) -> RunSetup:
    """The engine configuration and the checkpoint intervals of a run, from the failure model,
    the spec and the job's inputs (step times, length, checkpoint size)."""
    if not (isinstance(step_time_s, int | float) and math.isfinite(step_time_s) and step_time_s > 0):
        raise ScenarioError(f"step_time_s: must be a number above 0 (got {step_time_s!r})")
    rho = _progress_rates(step_time_s, degraded_step_time_s)
    work_s = _work(spec, job_work_s, steps, step_time_s)
    save_s, reload_s = _checkpoint_times(spec, checkpoint)
    spares = spec.spares(model.n_job_nodes)
    if spares + model.idle_nodes < 0:
        raise ScenarioError("failures.spare_servers: must be ≥ 0")
    tables = _class_tables(model, spec)
    stop_rate, planned_rate = tables.pop("stop_rate"), tables.pop("planned_rate")
    intervals = _Intervals.of(spec, stop_rate, save_s, step_time_s, work_s)
    horizon = spec.window_s if work_s is None else max(MAX_WALL_FACTOR * work_s, work_s + 30 * 86_400.0)
    config = EngineConfig(
        **tables,
        **_model_tables(model),
        feed_repair_s=spec.feed_repair_hours * 3600.0,
        spare_pool=spares + model.idle_nodes,
        **_lemon_setup(model, spec),
        server_repair_s=spec.repair_hours * 3600.0,
        detection_s=spec.detection_s,
        restart_s=spec.restart_min * 60.0,
        reload_s=reload_s,
        save_s=save_s,
        async_save=spec.checkpoint.async_save,
        rho_slot=rho,
        work_s=work_s,
        horizon_s=float(horizon),
        sweep_horizon_s=float(spec.window_s if work_s is None else work_s),
        weibull_shape=spec.weibull_shape,
    )
    meta = {
        "trials": spec.trials,
        "seed": spec.seed,
        "blocks": -(-spec.trials // BLOCK_TRIALS),
        "mode": "window" if work_s is None else "job",
        "window_days": spec.window_days,
        "job_work_s": work_s,
        "horizon_s": float(horizon),
        "step_time_s": float(step_time_s),
        "save_s": save_s,
        "reload_s": reload_s,
        "detection_s": spec.detection_s,
        "restart_s": spec.restart_min * 60.0,
        "async_save": spec.checkpoint.async_save,
        "interval_s": intervals.interval_s,
        "optimal_s": intervals.optimal_s,
        "sweep_s": list(intervals.sweep_s),
        "stop_rate_per_s": stop_rate,
        "planned_rate_per_s": planned_rate,
        "spare_pool": spares + model.idle_nodes,
        "n_racks": model.n_racks,
        "job_servers": model.n_job_nodes,
    }
    return RunSetup(
        config, intervals.interval_s, intervals.optimal_s, intervals.sweep_s, stop_rate, planned_rate, meta
    )


@dataclass(frozen=True)
class _Intervals:
    """The run's checkpoint interval, the optimal one, and the intervals of the sweep (s)."""

    interval_s: float
    optimal_s: float
    sweep_s: tuple[float, ...]

    @classmethod
    def of(cls, spec: FailureSpec, stop_rate: float, save_s: float, step_time_s: float, work_s) -> _Intervals:
        """Young/Daly's optimum for the stop rate (never below a step, nor with asynchronous
        saves below the save), the spec's interval when it names one, and the sweep around the
        optimum."""
        mttf = 1.0 / stop_rate if stop_rate > 0 else math.inf
        floor_s = max(step_time_s, save_s if spec.checkpoint.async_save else 0.0)
        reference = optimal_interval_s(mttf, save_s)
        optimal = floor_s if spec.checkpoint.async_save else max(reference, floor_s)
        if not math.isfinite(optimal):
            optimal = work_s if work_s is not None else spec.window_s
        interval = optimal if spec.checkpoint.interval_min is None else spec.checkpoint.interval_min * 60.0
        if spec.checkpoint.async_save and save_s > interval:
            raise ScenarioError(
                f"failures.checkpoint.interval_min: an asynchronous save of {save_s:g} s must fit in the "
                f"interval (got {interval / 60.0:g} min)"
            )
        base = reference if math.isfinite(reference) and reference > 0 else interval
        sweep = sorted({max(s, floor_s) for s in _sweep_intervals(base, interval)})
        return cls(interval_s=interval, optimal_s=optimal, sweep_s=tuple(sweep))


def _model_tables(model: FailureModel) -> dict[str, Any]:
    """The failure model's structure as the engine configuration's fields."""
    return {
        "kind_names": KIND_NAMES,
        "category_names": CATEGORIES,
        "job_nodes": model.job_nodes,
        "node_rack": model.node_rack,
        "gpus_per_server": model.gpus_per_server,
        "nics_per_server": model.nics_per_server,
        "feed_racks": model.feed_racks,
        "rack_n_feeds": model.rack_n_feeds,
        "rack_removes": model.rack_removes,
        "rack_degrades": model.rack_degrades,
        "n_racks": model.n_racks,
    }


def _progress_rates(step_time_s: float, degraded) -> np.ndarray:
    """Nominal / degraded step time per degrade kind (1 where nothing slows)."""
    if degraded is None:
        return np.ones(len(DEGRADE_KINDS))
    if isinstance(degraded, Mapping):
        unknown = set(degraded) - set(DEGRADE_KINDS)
        if unknown:
            raise ScenarioError(
                f"degraded_step_time_s: keys must be among {', '.join(DEGRADE_KINDS)} (got {sorted(unknown)})"
            )
        values = [degraded.get(kind, step_time_s) for kind in DEGRADE_KINDS]
    else:
        values = [degraded] * len(DEGRADE_KINDS)
    for value in values:
        if not (isinstance(value, int | float) and math.isfinite(value) and value >= step_time_s):
            raise ScenarioError(
                f"degraded_step_time_s: must be a number ≥ the step time ({step_time_s:g} s) (got {value!r})"
            )
    return np.array([step_time_s / v for v in values], dtype=float)


def _work(spec: FailureSpec, job_work_s, steps, step_time_s) -> float | None:
    if spec.window_days is not None:
        return None
    if job_work_s is None and steps is not None:
        job_work_s = steps * step_time_s
    if job_work_s is None and spec.steps is not None:
        job_work_s = spec.steps * step_time_s
    if job_work_s is None:
        raise ScenarioError("failures.steps: required when the job gives no tokens and no window_days is set")
    if not (math.isfinite(job_work_s) and job_work_s > 0):
        raise ScenarioError(f"job_work_s: must be a number above 0 (got {job_work_s!r})")
    return float(job_work_s)


def _checkpoint_times(spec: FailureSpec, checkpoint: CheckpointSize | None) -> tuple[float, float]:
    bandwidth = spec.storage_gbytes_per_s
    save_s = spec.checkpoint.save_s
    if save_s is None:
        if checkpoint is None:
            raise ScenarioError(
                "failures.checkpoint.save_s: required when the job's checkpoint size is unknown"
            )
        save_s = checkpoint.save_s(bandwidth)
    reload_s = spec.reload_s
    if reload_s is None:
        if checkpoint is None:
            raise ScenarioError("failures.reload_s: required when the job's checkpoint size is unknown")
        reload_s = checkpoint.reload_s(bandwidth)
    return float(save_s), float(reload_s)


def _class_tables(model: FailureModel, spec: FailureSpec) -> dict[str, Any]:
    """Engine class and member arrays: the model's hardware classes plus the per-job ones."""
    repair_s = {
        "server": spec.repair_hours * 3600.0,
        "switch": spec.switch_repair_hours * 3600.0,
        "link": spec.link_repair_hours * 3600.0,
        "feed": spec.feed_repair_hours * 3600.0,
    }
    scale = _server_scale(model, spec)
    rows = []
    for cls in model.classes:
        rate = cls.rate_per_year * (scale if cls.kind in SERVER_KINDS else 1.0) / SECONDS_PER_YEAR
        rows.append(
            (cls.kind, cls.category, _EFFECT_CODES[cls.effect], rate, cls.count, repair_s[cls.repair])
        )
    n = model.n_job_nodes
    day = 86_400.0
    extra = [
        ("software", "software", STOP, spec.rates.software_per_day / day, 1, 0.0),
        (
            "maintenance",
            "maintenance",
            STOP_REMOVE,
            spec.rates.maintenance_per_day / day / n,
            n,
            repair_s["server"],
        ),
        ("planned", "planned", PLANNED, spec.rates.planned_per_day / day, 1, 0.0),
    ]
    lemons = _lemon_count(model, spec)
    hazards = model.server_hazards_per_year()
    per_server = sum(hazards.values()) * scale / SECONDS_PER_YEAR
    if lemons:
        lemon_rate = (spec.lemons.factor - 1.0) * per_server
        extra.append(("lemon", "gpu", LEMON, lemon_rate, lemons, repair_s["server"]))
    rows += extra
    members = _members(model, lemons)
    keep = [i for i, row in enumerate(rows) if row[3] > 0 and row[4] > 0]
    offsets = np.concatenate([[0], np.cumsum([row[4] for row in rows])])[:-1]
    stop_rate = sum(r[3] * r[4] for r in rows if r[2] in (STOP, STOP_REMOVE, LEMON))
    stop_rate += _single_feed_rate(model, rows)
    planned_rate = spec.rates.planned_per_day / day
    pick = lambda column: np.array([rows[i][column] for i in keep])  # noqa: E731
    return {
        "class_rate": pick(3).astype(float) if keep else np.zeros(0),
        "class_count": pick(4).astype(np.int64) if keep else np.zeros(0, np.int64),
        "class_offset": offsets[keep].astype(np.int64),
        "class_effect": pick(2).astype(np.int64) if keep else np.zeros(0, np.int64),
        "class_kind": np.array([KIND_NAMES.index(rows[i][0]) for i in keep], np.int64),
        "class_category": np.array([CATEGORIES.index(rows[i][1]) for i in keep], np.int64),
        "class_repair_s": pick(5).astype(float) if keep else np.zeros(0),
        "class_degrade_slot": np.array(
            [DEGRADE_KINDS.index(rows[i][0]) if rows[i][0] in DEGRADE_KINDS else -1 for i in keep], np.int64
        ),
        "class_server_hw": np.array([rows[i][0] in SERVER_KINDS for i in keep], bool),
        **members,
        "stop_rate": stop_rate,
        "planned_rate": planned_rate,
    }


def _server_scale(model: FailureModel, spec: FailureSpec) -> float:
    """Factor on every server hardware hazard from ``rates.server_per_1000_node_days``."""
    override = spec.rates.server_per_1000_node_days
    if override is None:
        return 1.0
    per_year = sum(model.server_hazards_per_year().values())
    if per_year <= 0:
        raise ScenarioError(
            "failures.rates.server_per_1000_node_days: the catalog gives no server hazard to scale"
        )
    return override / 1000.0 * 365.0 / per_year


def _members(model: FailureModel, lemons: int) -> dict[str, np.ndarray]:
    """Member arrays: the model's, then software (1), maintenance (N), planned (1), lemons."""
    n = model.n_job_nodes
    one = np.full(1, -1, np.int64)
    lemon = np.full(lemons, -1, np.int64)
    slots = np.arange(n, dtype=np.int64)
    return {
        "member_component": np.concatenate([model.member_component, one, model.job_nodes, one, lemon]),
        "member_rack": np.concatenate([model.member_rack, one, model.node_rack, one, lemon]),
        "member_slot": np.concatenate([model.member_slot, one, slots, one, lemon]),
        "member_removes": np.concatenate(
            [model.member_removes, [0], np.ones(n, np.int64), [0], lemon * 0 + 1]
        ),
        "member_feed": np.concatenate([model.member_feed, one, np.full(n, -1), one, lemon]),
    }


def _single_feed_rate(model: FailureModel, rows) -> float:
    """Rate of feed faults that alone take a job rack down (racks with one feed)."""
    rate = 0.0
    for cls in model.classes:
        if cls.effect != "feed":
            continue
        feeds = model.member_feed[cls.offset : cls.offset + cls.count]
        racks = model.feed_racks[feeds]
        single = np.any((racks >= 0) & (model.rack_n_feeds[np.maximum(racks, 0)] == 1), axis=1)
        rate += cls.rate_per_year / SECONDS_PER_YEAR * int(np.count_nonzero(single))
    return rate


def _lemon_count(model: FailureModel, spec: FailureSpec) -> int:
    if spec.lemons.fraction <= 0 or spec.lemons.factor <= 1:
        return 0
    return min(round(spec.lemons.fraction * model.n_job_nodes), model.n_job_nodes)


def _lemon_setup(model: FailureModel, spec: FailureSpec) -> dict[str, Any]:
    lemons = _lemon_count(model, spec)
    hazards = model.server_hazards_per_year()
    rates = np.array([hazards[kind] for kind in SERVER_KINDS])
    category = [CATEGORIES.index("gpu" if kind in ("gpu", "hbm") else "host") for kind in SERVER_KINDS]
    return {
        "lemon_slots": lemons,
        "lemon_stride": max(model.n_job_nodes // max(lemons, 1), 1),
        "lemon_remove_after": spec.lemons.remove_after,
        "lemon_kind_cum": np.cumsum(rates if rates.sum() > 0 else np.ones(rates.size)),
        "lemon_kind_codes": np.array([KIND_NAMES.index(kind) for kind in SERVER_KINDS], np.int64),
        "lemon_kind_category": np.array(category, np.int64),
    }


def injected_arrays(model: FailureModel, config: EngineConfig, injected, n_trials: int):
    """(times, classes, members) of shape (K, T) from per-trial event lists."""
    schedules = list(injected)
    if not schedules or isinstance(schedules[0], InjectedEvent):
        schedules = [schedules] * n_trials  # one schedule for every trial
    if len(schedules) != n_trials:
        raise ScenarioError(f"events: need one schedule per trial ({n_trials}) (got {len(schedules)})")
    depth = max((len(s) for s in schedules), default=0)
    times = np.full((max(depth, 1), n_trials), np.inf)
    classes = np.full((max(depth, 1), n_trials), -1, np.int64)
    members = np.zeros((max(depth, 1), n_trials), np.int64)
    for trial, schedule in enumerate(schedules):  # test schedules only: a few events each
        for k, event in enumerate(sorted(schedule, key=lambda e: e.time_s)):
            times[k, trial] = event.time_s
            classes[k, trial], members[k, trial] = _class_of(model, config, event)
    return times, classes, members


def _class_of(model: FailureModel, config: EngineConfig, event: InjectedEvent) -> tuple[int, int]:
    kind = KIND_NAMES.index(event.kind) if event.kind in KIND_NAMES else -1
    matches = np.flatnonzero(config.class_kind == kind)
    if matches.size == 0:
        raise ScenarioError(f"events: the job has no {event.kind!r} hazard (or its rate is 0)")
    if event.kind in ("software", "planned"):
        return int(matches[0]), int(config.class_offset[matches[0]])
    if event.kind == "maintenance":
        component = event.component
        slot = np.flatnonzero(model.job_nodes == component)
        if slot.size == 0:
            raise ScenarioError(f"events: node {component} is not one of the job's")
        return int(matches[0]), int(config.class_offset[matches[0]] + slot[0])
    member = model.member_index(event.kind, event.component)
    for c in matches:
        if config.class_offset[c] <= member < config.class_offset[c] + config.class_count[c]:
            return int(c), member
    raise ScenarioError(f"events: {event.kind} {event.component} has no hazard (rate 0)")


def _sweep_intervals(base: float, interval: float) -> list[float]:
    """The checkpoint intervals swept: ``SWEEP_FACTORS`` around the Young/Daly ``base`` and,
    when the run's own ``interval`` lies outside that span, two points on the way to it, the
    interval itself and one beyond it, so the chart shows both on one curve."""
    points = [factor * base for factor in SWEEP_FACTORS]
    low, high = points[0], points[-1]
    if interval > high:
        points += [*np.geomspace(high, interval, 4)[1:3], interval, 2.0 * interval]
    elif interval < low:
        points += [*np.geomspace(low, interval, 4)[1:3], interval, 0.5 * interval]
    return points
