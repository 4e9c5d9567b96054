"""Power of a training job on a design: GPU -> server -> rack -> feed -> panel -> hall -> facility.

Model (``docs/power-model.md``): every GPU of pipeline stage ``s`` follows that stage's phases
(a power level per phase kind, a first-order ramp); GPUs outside the job idle. A server adds its
overhead, the supplies their losses, switches and optics a constant, the facility its PUE.
Job-level events (start ramps, checkpoint stalls, crashes) reshape the series. Racks and feeds
are never materialised as racks x samples: an entity's series is a combination of the per-row
GPU series and the per-server series, evaluated once per distinct combination (signature).
Mitigations (power floor, stagger groups, rack storage with a grid ramp limit, power cap) are
simulated each alone and together, each reported as swing reduction and cost.

Public API::

    inputs = power_inputs(plan, fabric, timeline, catalog.gpu("h100-sxm"))
    result = simulate_power(inputs, parse_power(data), events=job_events(log))
    result.to_dict()          # what ``simulate --power --json`` prints
    result.to_arrays()        # per-rack / per-feed / series arrays for the web app
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scenarios.sim.format.power import (
    EVENT_KINDS,
    OSCILLATION_HALF_WIDTH_HZ,
    OSCILLATIONS_HZ,
    JobEvents,
    PowerError,
    PowerSpec,
    check_power,
    job_events,
    parse_power,
    window_event_log,
)
from scenarios.sim.power.feeds import feed_capacity_kw, feed_loads, feed_loads_kw
from scenarios.sim.power.inputs import (
    PowerDraw,
    PowerInputs,
    check_power_inputs,
    phase_levels_w,
    power_inputs,
)
from scenarios.sim.power.result import PowerResult, entity_arrays, feeds_over_limit, racks_over_budget
from scenarios.sim.power.series import (
    JobStates,
    RowTimeline,
    band_share,
    band_shares,
    block_mean,
    capped_rows,
    first_order,
    gpu_targets_w,
    job_states,
    longest_low_run_s,
    minute_swing_mw,
    moving_average,
    row_energy_j,
    rows_from_stages,
    series_figures,
    staggered_rows,
)
from scenarios.sim.step.pipeline import PHASE_CODES

__all__ = [
    "PowerDraw",
    "PowerError",
    "PowerInputs",
    "PowerResult",
    "PowerSpec",
    "check_power",
    "feed_capacity_kw",
    "feed_loads",
    "feed_loads_kw",
    "job_events",
    "parse_power",
    "phase_levels_w",
    "power_inputs",
    "simulate_power",
]

#: Rows x samples of the per-row GPU series (float64: 320 MB), bounding memory; pp x stagger
#: groups x samples beyond it is refused with a message naming the fields.
MAX_ROW_SAMPLES = 40_000_000
#: Samples of the coarse event timeline (its resolution grows to stay within).
MAX_COARSE_SAMPLES = 200_000
#: Frames of the coarse per-rack series (the floor plan's replay slider).
REPLAY_FRAMES = 600
#: Largest slowdown the automatic stagger offset may cost. Assumed: 2 % of step time.
STAGGER_MAX_SLOWDOWN = 0.02
SECONDS_PER_DAY = 86_400.0
J_PER_MWH = 3.6e9


@dataclass(frozen=True, eq=False)
class _Variant:
    """One configuration of the mitigations: levels, rows (schedule) and storage on or off."""

    name: str
    level_w: np.ndarray
    stall_w: float
    rows: RowTimeline
    groups: int = 1
    offset_s: float = 0.0
    storage: bool = False
    extra: dict[str, float] = field(default_factory=dict)
    key: tuple[bool, ...] = ()  # (floor, cap, stagger): variants with equal keys share a series


@dataclass(frozen=True, eq=False)
class _Run:
    """A variant simulated on the fine window: base series, facility series, storage figures."""

    variant: _Variant
    counts: np.ndarray  # (R, W + 1): GPUs per row of every rack, then its servers
    idle_dc_w: np.ndarray  # (R,) constant DC draw: GPUs outside the job, servers without job GPUs
    series: np.ndarray  # (W + 1, T) W per GPU per row, then W per server (grid side with storage)
    facility_mw: np.ndarray  # (T,)
    figures: dict[str, float]
    storage: dict[str, Any] | None = None


# --- variants ----------------------------------------------------------------------------


def _row_counts(inputs: PowerInputs, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """GPUs of every row per rack, then the rack's job servers, (R, S*groups + 1); and each rack's
    constant DC draw (W): GPUs outside the job at idle, servers without a job GPU at idle overhead.

    A stagger group is a contiguous block of each stage's GPUs (in Megatron's rank order that is
    a set of whole data-parallel pipelines): GPU at position ``p`` of a stage of ``n`` GPUs is in
    group ``p * groups // n``.
    """
    stage = inputs.gpu_stage
    n_stages, n_racks = inputs.timeline.n_stages, inputs.n_racks
    in_job = stage >= 0
    job_stage, job_rack = stage[in_job], inputs.gpu_rack[in_job]
    group = np.zeros(job_stage.size, np.int64)
    if groups > 1:
        order = np.argsort(job_stage, kind="stable")
        size = np.bincount(job_stage, minlength=n_stages)
        position = np.empty(job_stage.size, np.int64)
        position[order] = np.arange(job_stage.size) - (np.cumsum(size) - size)[job_stage[order]]
        group = position * groups // np.maximum(size[job_stage], 1)
    n_rows = n_stages * groups
    flat = np.bincount(job_rack * n_rows + job_stage * groups + group, minlength=n_racks * n_rows)
    job_servers = inputs.job_servers
    counts = np.concatenate([flat.reshape(n_racks, n_rows), job_servers[:, None]], axis=1)
    idle_gpus = np.bincount(inputs.gpu_rack[~in_job], minlength=n_racks)
    idle_dc_w = idle_gpus * inputs.idle_w + (inputs.rack_servers - job_servers) * inputs.server_idle_w
    return counts.astype(float), idle_dc_w.astype(float)


def _job_pattern_w(rows: RowTimeline, level_w: np.ndarray, row_gpus: np.ndarray, dt_s: float) -> np.ndarray:
    """The job's total GPU power over one period at ``dt_s`` (at most 200,000 samples) (W)."""
    n = int(min(max(np.ceil(rows.period_s / dt_s), 1), 200_000))
    clock = np.linspace(0.0, rows.period_s, n + 1)
    energy = row_gpus @ row_energy_j(rows, level_w, clock)
    return np.diff(energy) / np.diff(clock)


def _auto_offset_s(rows: RowTimeline, level_w: np.ndarray, row_gpus: np.ndarray, groups: int) -> float:
    """The stagger offset that most reduces the job's power fluctuation within a slowdown budget.

    Candidates: ``period / (groups * 2^j)`` for j = 0..11 and the longest low stretch of the
    step (:func:`longest_low_run_s`). Each is scored by the standard deviation of the job's GPU
    power over one staggered period (baseline levels); the best one whose slowdown
    ``(groups - 1) * offset / period`` stays within ``STAGGER_MAX_SLOWDOWN`` wins (the smallest
    candidate when none reduces the fluctuation). Group ``g`` runs ``[wait g*d][step][wait
    (groups-1-g)*d]``, i.e. the step followed by ``(groups-1)*d`` of waiting, rotated by ``g*d``.
    """
    period = rows.period_s
    samples = 20_000
    dt_s = period / samples
    pattern = _job_pattern_w(rows, level_w, row_gpus, dt_s)
    wait_w = float(row_gpus.sum() * level_w[PHASE_CODES["straggler"]])
    candidates = np.append(period / (groups * 2.0 ** np.arange(12)), longest_low_run_s(pattern, dt_s))
    candidates = candidates[(groups - 1) * candidates / period <= STAGGER_MAX_SLOWDOWN]
    if candidates.size == 0:
        return 0.0
    scores = []
    for offset in candidates:  # a dozen candidates; groups rotations of one 1-D pattern each
        shift = max(round(offset / dt_s), 1)
        extended = np.concatenate([pattern, np.full((groups - 1) * shift, wait_w)])
        total = sum(np.roll(extended, g * shift) for g in range(groups)) / groups
        scores.append(float(total.std()))
    best = int(np.argmin(scores))
    return float(candidates[best] if scores[best] < pattern.std() else candidates.min())


def _variants(inputs: PowerInputs, spec: PowerSpec, dt_s: float) -> list[_Variant]:
    """Baseline, each configured mitigation alone, and all configured ones together."""
    base_rows = rows_from_stages(inputs.timeline)
    level, stall, idle = inputs.level_w, inputs.stall_w, inputs.idle_w
    job_kinds = np.arange(level.size) != PHASE_CODES["idle"]
    floor_w = spec.gpu.floor_fraction * inputs.tdp_w
    cap_w = spec.gpu.cap_w

    def levels(floor: bool, cap: bool) -> tuple[np.ndarray, float]:
        out, out_stall = level.copy(), stall
        if floor:
            out[job_kinds] = np.maximum(out[job_kinds], floor_w)
            out_stall = max(out_stall, floor_w)
        if cap:
            out, out_stall = np.minimum(out, cap_w), min(out_stall, cap_w)
        return out, out_stall

    def build(name: str, floor: bool, cap: bool, stagger: bool, storage: bool) -> _Variant:
        lv, st = levels(floor, cap)
        rows = capped_rows(base_rows, levels(floor, False)[0], cap_w, idle) if cap else base_rows
        groups, offset, extra = 1, 0.0, {}
        if stagger:
            groups = spec.stagger_groups
            if spec.stagger_offset_ms is not None:
                offset = spec.stagger_offset_ms / 1000.0
            else:
                row_gpus = _row_counts(inputs, 1)[0][:, :-1].sum(axis=0)
                offset = _auto_offset_s(rows, level, row_gpus, groups)
            rows = staggered_rows(rows, groups, offset)
            extra = {"stagger_groups": groups, "offset_ms": offset * 1000.0}
        if floor:
            extra["floor_w"] = floor_w
        if cap:
            extra["cap_w"] = cap_w
        return _Variant(name, lv, st, rows, groups, offset, storage, extra, (floor, cap, stagger))

    wanted = {
        "floor": spec.gpu.floor_fraction > 0,
        "cap": cap_w is not None,
        "stagger": spec.stagger_groups > 1,
        "storage": spec.storage.enabled,
    }
    out = [build("baseline", False, False, False, False)]
    for name, on in wanted.items():
        if on:
            out.append(build(name, *(key == name for key in wanted)))
    if sum(wanted.values()) > 1:
        out.append(build("combined", *wanted.values()))
    return out


# --- the fine window -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Window:
    dt_s: float
    n: int
    warmup: int
    states: JobStates  # on the extended grid (warm-up samples first)


def _window(inputs: PowerInputs, spec: PowerSpec, events: JobEvents) -> _Window:
    dt_s, n = spec.resolution_ms / 1000.0, spec.samples
    warmup = int(min(np.ceil(40.0 * inputs.ramp_s / dt_s), 100_000)) if inputs.ramp_s > 0 else 0
    states = job_states(events, t0_s=-warmup * dt_s, dt_s=dt_s, n=n + warmup)
    return _Window(dt_s=dt_s, n=n, warmup=warmup, states=states)


def _base_series(
    inputs: PowerInputs, variant: _Variant, states: JobStates, dt_s: float, warmup: int
) -> np.ndarray:
    """Per-row GPU power (after the ramp) and per-server power, (W + 1, T) in W."""
    targets = gpu_targets_w(
        variant.rows, variant.level_w, stall_w=variant.stall_w, idle_w=inputs.idle_w, states=states, dt_s=dt_s
    )
    gpu = first_order(targets, dt_s=dt_s, tau_s=inputs.ramp_s, warmup=warmup)
    busy = (states.ramp * states.train + states.stall)[warmup:]
    server = inputs.server_idle_w + (inputs.server_busy_w - inputs.server_idle_w) * busy
    return np.vstack([gpu, server[None, :]])


def _it_w(inputs: PowerInputs, counts: np.ndarray, idle_dc_w: np.ndarray, series: np.ndarray) -> np.ndarray:
    """Total IT power at the feeds (W), shape (T,)."""
    dc = counts.sum(axis=0) @ series + idle_dc_w.sum()
    return dc / inputs.psu_efficiency + inputs.rack_static_w.sum()


def _storage_need_j(unique_counts: np.ndarray, difference: np.ndarray, dt_s: float, eta: float):
    """Energy range and discharged energy of each rack signature's storage (J, AC side)."""
    chunk = max(1, 8_000_000 // max(difference.shape[1], 1))
    need = np.empty(unique_counts.shape[0])
    discharged = np.empty(unique_counts.shape[0])
    for lo in range(0, unique_counts.shape[0], chunk):  # chunks of signatures, not racks
        flow = unique_counts[lo : lo + chunk] @ difference / eta  # demand - grid (W)
        charge = np.cumsum(flow, axis=1) * dt_s
        need[lo : lo + chunk] = np.maximum(charge.max(axis=1), 0.0) - np.minimum(charge.min(axis=1), 0.0)
        discharged[lo : lo + chunk] = np.maximum(flow, 0.0).sum(axis=1) * dt_s
    return need, discharged


def _storage(
    inputs: PowerInputs, spec: PowerSpec, counts: np.ndarray, series: np.ndarray, swing_mw: float, dt_s: float
):
    """Grid-side series of ramp-limited rack storage and its figures.

    The grid side of every rack is the trailing mean of its demand over ``window`` samples: a
    step ``dP`` then ramps at ``dP / window`` and the storage covers the triangle
    ``dP^2 / (2 R)``. With ``ramp_mw_per_s`` the window is the facility swing over that ramp;
    with ``joules_per_gpu`` it is at most the longest window the smallest storage can serve
    (bisection). Both given and the storage too small for the ramp: the grid side is the one the
    configured storage can deliver (its charge stays within its capacity; what it cannot cover
    passes through, so the facility ramps faster than the limit), and the figures say the limit
    is not met and what the ramp would need.
    """
    gpus = counts[:, :-1].sum(axis=1)
    unique, inverse = np.unique(counts, axis=0, return_inverse=True)
    unique_gpus = unique[:, :-1].sum(axis=1)
    eta = inputs.psu_efficiency

    def need_for(window: int):
        grid = moving_average(series, window)
        need, out = _storage_need_j(unique, series - grid, dt_s, eta)
        return grid, need, out

    def worst_j_per_gpu(need: np.ndarray) -> float:
        return float((need / np.maximum(unique_gpus, 1)).max(initial=0.0))

    def per_gpu(rack_j: np.ndarray) -> np.ndarray:
        return np.divide(rack_j, gpus, out=np.zeros_like(rack_j), where=gpus > 0)

    ramp = spec.storage.ramp_mw_per_s
    configured = spec.storage.joules_per_gpu
    longest = series.shape[1]
    asked = None  # the ramp limit's window and its storage need, when a limit is given
    if ramp is not None:
        longest = max(int(np.ceil(swing_mw / ramp / dt_s - 1e-9)), 1)  # float noise of an exact ratio
        asked = need_for(longest)
    window = longest
    if configured > 0 and (asked is None or worst_j_per_gpu(asked[1]) > configured):
        lo, hi = 1, longest
        while lo < hi:  # bisection over the window length (~20 steps), each vectorized
            mid = (lo + hi + 1) // 2
            if worst_j_per_gpu(need_for(mid)[1]) <= configured:
                lo = mid
            else:
                hi = mid - 1
        window = lo
    grid, need, discharged = asked if asked is not None and window == longest else need_for(window)
    rack_need = (need if asked is None else asked[1])[inverse.ravel()]
    per_gpu_need = per_gpu(rack_need)
    per_gpu_used = per_gpu(need[inverse.ravel()])
    rt = spec.storage.round_trip_efficiency
    loss_w = discharged[inverse.ravel()].sum() * (1.0 - rt) / rt / (series.shape[1] * dt_s)
    figures = {
        "window_s": window * dt_s,
        "needed_j_per_gpu": float(per_gpu_need.max(initial=0.0)),
        "needed_kj_per_rack_max": float(rack_need.max(initial=0.0) / 1000.0),
        "used_j_per_gpu": float(per_gpu_used.max(initial=0.0)),
        "configured_j_per_gpu": configured,
        "short_racks": int(np.sum(per_gpu_need > configured)) if configured > 0 else 0,
        "ramp_limit_met": None if ramp is None else bool(window >= longest),
        "loss_kw": loss_w / 1000.0,
        "rack_needed_kj": rack_need / 1000.0,
    }
    return grid, figures


def _grid_check(spec: PowerSpec, run: _Run, dt_s: float, coarse, coarse_mw) -> dict[str, Any]:
    """The utility's requirement against the facility draw: the largest swing within a minute
    against the ramp limit (over the job's life when an event log ran, else the window), the
    band's variance share against its cap, and the variance near each reported oscillation."""
    swing = minute_swing_mw(run.facility_mw, dt_s=dt_s)
    over = "window"
    if coarse_mw is not None and coarse_mw.size:
        life = minute_swing_mw(coarse_mw, dt_s=float(coarse["resolution_s"]))
        swing, over = (life, "job's life") if life > swing else (swing, over)
    limit, share = spec.grid_ramp_mw_per_min, float(run.figures["band_energy_share"])
    bands = [(hz - OSCILLATION_HALF_WIDTH_HZ, hz + OSCILLATION_HALF_WIDTH_HZ) for hz, _ in OSCILLATIONS_HZ]
    shares = band_shares(run.facility_mw, dt_s=dt_s, bands_hz=bands)
    near = []
    for (hz, source), band, (part, rms) in zip(OSCILLATIONS_HZ, bands, shares, strict=True):
        if band[1] > 0.5 / dt_s:  # above the Nyquist frequency of the window: not resolved
            part = rms = None
        near.append({"hz": hz, "share": part, "rms_mw": rms, "source": source})
    return {
        "ramp_limit_mw_per_min": limit,
        "minute_swing_mw": swing,
        "minute_swing_over": over,
        "ramp_ok": None if limit is None else bool(swing <= limit),
        "band_share_max": spec.band_share_max,
        "band_share": share,
        "band_ok": bool(share <= spec.band_share_max),
        "oscillations": near,
    }


def _energy_per_step_j(
    inputs: PowerInputs, spec: PowerSpec, run_variant: _Variant, counts, idle_dc_w, loss_w
):
    """Facility energy of one step of training (the variant's period) from the timeline (J)."""
    rows = run_variant.rows
    per_row = np.diff(row_energy_j(rows, run_variant.level_w, np.array([0.0, rows.period_s])), axis=1).ravel()
    totals = counts.sum(axis=0)
    dc = totals[:-1] @ per_row + (idle_dc_w.sum() + totals[-1] * inputs.server_busy_w) * rows.period_s
    ac = dc / inputs.psu_efficiency + inputs.rack_static_w.sum() * rows.period_s + loss_w * rows.period_s
    return spec.pue * ac


def _simulate_variant(
    inputs: PowerInputs, spec: PowerSpec, window: _Window, variant: _Variant, done: dict[tuple, _Run]
) -> _Run:
    """Simulate one variant; a variant that only adds storage starts from the demand series of
    the one without it (``done``, keyed by floor/cap/stagger)."""
    if variant.key in done:
        counts, idle_dc_w, series = (
            done[variant.key].counts,
            done[variant.key].idle_dc_w,
            done[variant.key].series,
        )
    else:
        counts, idle_dc_w = _row_counts(inputs, variant.groups)
        if (counts.shape[1] - 1) * window.n > MAX_ROW_SAMPLES:
            raise PowerError(
                f"power.stagger_groups: pipeline stages x stagger_groups x samples must be at most "
                f"{MAX_ROW_SAMPLES:,} (got {counts.shape[1] - 1} x {window.n:,})"
            )
        series = _base_series(inputs, variant, window.states, window.dt_s, window.warmup)
    facility = spec.pue * _it_w(inputs, counts, idle_dc_w, series) / 1e6
    storage = None
    if variant.storage:
        swing = float(np.ptp(facility))
        series, storage = _storage(inputs, spec, counts, series, swing, window.dt_s)
        facility = spec.pue * _it_w(inputs, counts, idle_dc_w, series) / 1e6
    figures = series_figures(facility, dt_s=window.dt_s)
    share, rms = band_share(facility, dt_s=window.dt_s, band_hz=spec.band_hz)
    loss_w = storage["loss_kw"] * 1000.0 if storage else 0.0
    step_j = _energy_per_step_j(inputs, spec, variant, counts, idle_dc_w, loss_w)
    period = variant.rows.period_s
    figures.update(
        band_energy_share=share,
        band_rms_mw=rms,
        energy_per_step_mwh=step_j / J_PER_MWH,
        energy_per_day_mwh=step_j / J_PER_MWH * SECONDS_PER_DAY / period,
        window_energy_mwh=float(facility.sum()) * window.dt_s / 3600.0,
        step_time_s=period,
    )
    return _Run(variant, counts, idle_dc_w, series, facility, figures, storage)


def _mitigation_report(run: _Run, base: _Run) -> dict[str, Any]:
    f, b = run.figures, base.figures
    base_step = b["step_time_s"]
    report = {
        key: f[key]
        for key in (
            "swing_mw",
            "peak_mw",
            "trough_mw",
            "max_ramp_mw_per_s",
            "band_energy_share",
            "band_rms_mw",
            "energy_per_step_mwh",
            "step_time_s",
        )
    }
    report["swing_reduction"] = 1.0 - f["swing_mw"] / b["swing_mw"] if b["swing_mw"] > 0 else 0.0
    report["slowdown"] = f["step_time_s"] / base_step - 1.0
    # Extra energy to do one baseline day of training work (same steps), over the baseline's.
    report["extra_mwh_per_day"] = (
        (f["energy_per_step_mwh"] - b["energy_per_step_mwh"]) * SECONDS_PER_DAY / base_step
    )
    report.update(run.variant.extra)
    if run.storage:
        report.update({k: v for k, v in run.storage.items() if k != "rack_needed_kj"})
    return report


# --- the coarse event timeline ------------------------------------------------------------------


def _coarse(
    inputs: PowerInputs, spec: PowerSpec, run: _Run, events: JobEvents
) -> tuple[dict, np.ndarray, np.ndarray]:
    """The configured variant over the whole event log, at a resolution that keeps it bounded."""
    period = run.variant.rows.period_s
    horizon = max(events.end_s * 1.05, events.end_s + 2.0 * period, 10.0 * spec.coarse_resolution_s)
    dt_s = max(spec.coarse_resolution_s, horizon / MAX_COARSE_SAMPLES)
    n = int(np.ceil(horizon / dt_s))
    states = job_states(events, t0_s=0.0, dt_s=dt_s, n=n)
    series = _base_series(inputs, run.variant, states, dt_s, 0)
    if run.storage:
        series = moving_average(series, max(round(run.storage["window_s"] / dt_s), 1))
    facility = spec.pue * _it_w(inputs, run.counts, run.idle_dc_w, series) / 1e6
    frames = block_mean(series, max(int(np.ceil(n / REPLAY_FRAMES)), 1))
    eta = inputs.psu_efficiency
    rack_kw = (run.counts / eta @ frames + (run.idle_dc_w / eta + inputs.rack_static_w)[:, None]) / 1000.0
    figures = series_figures(facility, dt_s=dt_s)
    figures.update(
        resolution_s=dt_s,
        horizon_s=n * dt_s,
        replay_frame_s=max(int(np.ceil(n / REPLAY_FRAMES)), 1) * dt_s,
        energy_mwh=float(facility.sum()) * dt_s / 3600.0,
        energy_per_day_mwh=float(facility.mean()) * 24.0,
        down_fraction=float(states.down.mean()),
        stall_fraction=float(states.stall.mean()),
        events={kind: int(np.sum(events.kind == code)) for code, kind in enumerate(EVENT_KINDS)},
    )
    return figures, facility.astype(np.float32), rack_kw.astype(np.float32)


def simulate_power(
    inputs: PowerInputs,
    spec: PowerSpec | None = None,
    *,
    events: JobEvents | None = None,
    on_progress: Callable[[float, str], None] | None = None,
) -> PowerResult:
    """Simulate the power of a design running a job, with and without each mitigation.

    Parameters
    ----------
    inputs : PowerInputs
        From :func:`power_inputs` (or built by hand).
    spec : PowerSpec, optional
        Window, resolution, window events, mitigations (default ``parse_power(None)``).
    events : JobEvents, optional
        A job-level event log (e.g. a failure simulation's representative trial, via
        :func:`job_events`) for the coarse timeline.
    on_progress : callable(fraction, message), optional

    Returns
    -------
    PowerResult

    Raises
    ------
    PowerError
        Bad inputs or spec, one line naming the field and the limit.
    """
    spec = spec or parse_power(None)
    check_power_inputs(inputs)
    check_power(spec, tdp_w=inputs.tdp_w, idle_w=inputs.idle_w)
    progress = on_progress or (lambda fraction, message: None)
    window = _window(inputs, spec, window_event_log(spec))
    variants = _variants(inputs, spec, window.dt_s)
    runs = _simulate_variants(inputs, spec, window, variants, progress)
    base = runs["baseline"]
    configured = runs[variants[-1].name]
    entities = entity_arrays(
        inputs,
        configured.counts,
        configured.idle_dc_w,
        configured.series,
        dt_s=window.dt_s,
        block=spec.store_block,
        rack_storage_kj=configured.storage["rack_needed_kj"] if configured.storage else None,
    )
    progress(0.85, "racks and feeds")
    coarse = coarse_facility = coarse_rack = None
    if events is not None:
        coarse, coarse_facility, coarse_rack = _coarse(inputs, spec, configured, job_events(events))
    progress(1.0, "done")
    grid = _grid_check(spec, configured, window.dt_s, coarse, coarse_facility)
    storage = None
    if configured.storage:
        storage = {k: v for k, v in configured.storage.items() if k != "rack_needed_kj"}
    return PowerResult(
        spec=spec,
        dt_s=window.dt_s,
        store_dt_s=spec.store_block * window.dt_s,
        facility=dict(configured.figures),
        baseline=dict(base.figures),
        mitigations={name: _mitigation_report(run, base) for name, run in runs.items() if name != "baseline"},
        storage=storage,
        grid=grid,
        feeds_over_limit=feeds_over_limit(inputs, entities["feed"]),
        racks_over_budget=racks_over_budget(inputs, entities["rack"]),
        counts=_counts(inputs, configured, entities),
        facility_mw=configured.facility_mw,
        hall_mw=_hall_mw(inputs, configured),
        row_gpu_w=configured.series[:-1].astype(np.float32),
        rack_arrays=entities["rack"],
        feed_arrays=entities["feed"],
        panel_arrays=entities["panel"],
        rack_series_kw=entities["rack_series_kw"],
        feed_series_kw=entities["feed_series_kw"],
        coarse=coarse,
        coarse_facility_mw=coarse_facility,
        coarse_rack_kw=coarse_rack,
    )


def _simulate_variants(inputs, spec, window: _Window, variants: list[_Variant], progress) -> dict[str, _Run]:
    """Every variant on the fine window; a storage variant reuses the demand series of the
    variant without storage that has its (floor, cap, stagger)."""
    runs: dict[str, _Run] = {}
    demand: dict[tuple, _Run] = {}  # runs without storage, by (floor, cap, stagger)
    for i, variant in enumerate(variants):  # at most six configurations
        run = _simulate_variant(inputs, spec, window, variant, demand)
        runs[variant.name] = run
        if not variant.storage:
            demand[variant.key] = run
        progress(0.6 * (i + 1) / len(variants), f"simulated {variant.name}")
    return runs


def _hall_mw(inputs: PowerInputs, configured: _Run) -> np.ndarray:
    """Each hall's draw on the grid side of its supplies (MW), shape (halls, T)."""
    eta = inputs.psu_efficiency
    hall = inputs.hall
    n_halls = int(hall.max(initial=0)) + 1
    hall_counts = np.zeros((n_halls, configured.counts.shape[1]))
    np.add.at(hall_counts, hall, configured.counts)
    hall_const = np.bincount(
        hall, weights=configured.idle_dc_w / eta + inputs.rack_static_w, minlength=n_halls
    )
    return (hall_counts / eta @ configured.series + hall_const[:, None]) / 1e6


def _counts(inputs: PowerInputs, configured: _Run, entities: dict) -> dict[str, int]:
    """What the result covers and how much of it is over its limit."""
    feed = entities["feed"]
    return {
        "gpus": inputs.n_gpus,
        "job_gpus": int(np.sum(inputs.gpu_stage >= 0)),
        "racks": inputs.n_racks,
        "feeds": inputs.n_feeds,
        "panels": int(entities["panel"]["panel_peak_kw"].size),
        "rows": int(configured.counts.shape[1] - 1),
        "signatures": int(entities["signatures"]),
        "racks_over_budget": int(np.sum(entities["rack"]["rack_peak_kw"] > inputs.rack_budget_kw)),
        "feeds_over_limit": int(np.sum(feed["feed_utilisation"] > 1)),
        "feeds_over_limit_side_loss": int(np.sum(feed["feed_side_loss_utilisation"] > 1)),
        "feeds_over_limit_feed_loss": int(np.sum(feed["feed_loss_utilisation"] > 1)),
    }
