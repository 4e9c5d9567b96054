"""Builders shared by the power tests: hand-made timelines, phase levels, inputs and specs, and
a deliberately naive per-GPU reference."""

from __future__ import annotations

import math

import numpy as np

from scenarios.sim.format.power import PowerSpec
from scenarios.sim.power import (
    PowerInputs,
    parse_power,
)
from scenarios.sim.step.pipeline import PHASE_CODES, PHASE_KINDS, StageTimeline

# --- builders ---------------------------------------------------------------------------------


def timeline(stages: list[list[tuple[str, float]]], gpu_stage) -> StageTimeline:
    """A StageTimeline from (kind, seconds) phases per stage (they must sum to one step)."""
    width = max(len(p) for p in stages)
    kind = np.full((len(stages), width), -1, np.int8)
    start = np.zeros((len(stages), width))
    duration = np.zeros((len(stages), width))
    for s, phases in enumerate(stages):
        lengths = np.array([d for _, d in phases])
        kind[s, : len(phases)] = [PHASE_CODES[k] for k, _ in phases]
        duration[s, : len(phases)] = lengths
        start[s, : len(phases)] = np.cumsum(lengths) - lengths
    return StageTimeline(
        kind=kind,
        start_s=start,
        duration_s=duration,
        microbatch=np.full(kind.shape, -1, np.int32),
        chunk=np.full(kind.shape, -1, np.int32),
        n_phases=np.array([len(p) for p in stages]),
        step_time_s=float(duration[0].sum()),
        gpu_stage=np.asarray(gpu_stage, dtype=np.int64),
    )


def levels(**watts) -> np.ndarray:
    """Per-kind levels: every kind at ``rest`` W unless named."""
    out = np.full(len(PHASE_KINDS), float(watts.pop("rest", 100.0)))
    for name, value in watts.items():
        out[PHASE_CODES[name]] = value
    return out


def make_inputs(tl, gpu_rack, *, n_racks, **overrides) -> PowerInputs:
    """Hand-built inputs; by default one A and one B feed per rack, no losses, no overhead."""
    rack = np.arange(n_racks)
    values = {
        "timeline": tl,
        "gpu_rack": np.asarray(gpu_rack, dtype=np.int64),
        "tdp_w": 1000.0,
        "idle_w": 50.0,
        "level_w": levels(forward=600.0, backward=600.0, comm=300.0),
        "stall_w": 100.0,
        "ramp_s": 0.0,
        "server_busy_w": 0.0,
        "server_idle_w": 0.0,
        "psu_efficiency": 1.0,
        "rack_servers": np.zeros(n_racks, np.int64),
        "rack_static_w": np.zeros(n_racks),
        "rack_budget_kw": np.full(n_racks, 1e6),
        "feed_capacity_kw": np.full(2 * n_racks, 1e6),
        "feed_side": np.tile([0, 1], n_racks),
        "feed_panel": np.tile([0, 1], n_racks),
        "pair_feed": np.arange(2 * n_racks),
        "pair_rack": np.repeat(rack, 2),
        "panel_name": ("P-A", "P-B"),
    }
    values.update(overrides)
    return PowerInputs(**values)


def spec(**data) -> PowerSpec:
    data.setdefault("pue", 1.0)
    return parse_power(data)


# --- the naive reference ----------------------------------------------------------------------


def _naive(inputs: PowerInputs, levels_w, stall, dt, n, tau):
    """Per GPU, per sample: the bin-averaged target by interval overlaps, the ramp by recursion;
    then sums per rack and per feed with explicit loops."""
    tl = inputs.timeline
    period = tl.step_time_s
    warm = math.ceil(40 * tau / dt) if tau > 0 else 0
    a = math.exp(-dt / tau) if tau > 0 else 0.0
    gain = tau * (1 - a) / dt if tau > 0 else 0.0

    def overlap(lo, hi, a0, b0):
        return max(0.0, min(hi, b0) - max(lo, a0))

    def train_energy(stage, c0, c1):
        total = 0.0
        for turn in range(math.floor(c0 / period) - 1, math.floor(c1 / period) + 2):
            for k in range(int(tl.n_phases[stage])):
                lo = turn * period + tl.start_s[stage, k]
                total += levels_w[tl.kind[stage, k]] * overlap(c0, c1, lo, lo + tl.duration_s[stage, k])
        return total

    stall_lo, stall_hi = stall
    series = {}
    for stage in range(tl.n_stages):
        clock, x = -warm * dt, []
        for m in range(-warm, n):
            t0, t1 = m * dt, (m + 1) * dt
            f_stall = overlap(t0, t1, stall_lo, stall_hi) / dt
            f_train = 1 - f_stall
            x.append(train_energy(stage, clock, clock + f_train * dt) / dt + f_stall * inputs.stall_w)
            clock += f_train * dt
        p, out = x[0], []
        for value in x:
            out.append(value + (p - value) * gain)
            p = a * p + (1 - a) * value
        series[stage] = np.array(out[warm:])
    racks = np.zeros((inputs.n_racks, n))
    for g, (r, s) in enumerate(zip(inputs.gpu_rack, inputs.gpu_stage, strict=True)):  # per GPU
        racks[r] += series[s] if s >= 0 else inputs.idle_w
        del g
    for r in range(inputs.n_racks):
        racks[r] += inputs.rack_servers[r] * inputs.server_busy_w
    racks = racks / inputs.psu_efficiency + inputs.rack_static_w[:, None]
    n_r = np.bincount(inputs.pair_rack, minlength=inputs.n_racks)
    feeds = np.zeros((inputs.n_feeds, n))
    side_loss = np.zeros((inputs.n_feeds, n))
    for f, r in zip(inputs.pair_feed, inputs.pair_rack, strict=True):
        feeds[f] += racks[r] / n_r[r]
        same = np.sum((inputs.pair_rack == r) & (inputs.feed_side[inputs.pair_feed] == inputs.feed_side[f]))
        has_other = np.any(
            (inputs.pair_rack == r) & (inputs.feed_side[inputs.pair_feed] != inputs.feed_side[f])
        )
        side_loss[f] += racks[r] / (same if has_other else n_r[r])
    return racks, feeds, side_loss
