"""The power core: hand-checked series, feed algebra, mitigations, a naive reference, scale check."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from scenarios.sim.format.power import CAP_EXPONENT, GpuKnobs, PowerSpec, check_power
from scenarios.sim.power import (
    PowerError,
    PowerInputs,
    feed_capacity_kw,
    feed_loads,
    feed_loads_kw,
    job_events,
    parse_power,
    phase_levels_w,
    power_inputs,
    simulate_power,
)
from scenarios.sim.power.series import band_share, cap_stretch
from scenarios.sim.step.pipeline import PHASE_CODES, PHASE_KINDS, StageTimeline
from tests.sim._fabrics import catalog

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


# --- hand-checked series ----------------------------------------------------------------------


def test_power_one_rack_known_phases_gives_exact_series():
    # One rack: 2 GPUs of stage 0 (forward 3 ms at 600 W, comm 2 ms at 300 W), 1 GPU outside the
    # job (idle 50 W), one server (200 W running), supplies 80 % efficient, switches 40 W, PUE 1.5.
    tl = timeline([[("forward", 0.003), ("comm", 0.002)]], gpu_stage=[0, 0, -1])
    inputs = make_inputs(
        tl,
        [0, 0, 0],
        n_racks=1,
        rack_servers=np.array([1]),
        server_busy_w=200.0,
        psu_efficiency=0.8,
        rack_static_w=np.array([40.0]),
    )
    result = simulate_power(inputs, spec(window_s=0.02, resolution_ms=1, store_ms=1, pue=1.5))
    # Forward samples: (2 x 600 + 50 + 200) / 0.8 + 40 = 1852.5 W; comm: (2 x 300 + 50 + 200) / 0.8 + 40
    # = 1102.5 W; the 5 ms step repeats 4 times in the 20 ms window.
    rack_w = np.tile([1852.5, 1852.5, 1852.5, 1102.5, 1102.5], 4)
    np.testing.assert_allclose(result.rack_series_kw[0], rack_w / 1000.0, rtol=1e-6)
    np.testing.assert_allclose(result.facility_mw, 1.5 * rack_w / 1e6, rtol=1e-12)
    assert result.rack_arrays["rack_peak_kw"][0] == pytest.approx(1.8525)
    assert result.rack_arrays["rack_mean_kw"][0] == pytest.approx((3 * 1.8525 + 2 * 1.1025) / 5)
    assert result.facility["swing_mw"] == pytest.approx(1.5 * 750e-6)
    # A 750 W x 1.5 change within one 1 ms sample: the largest ramp is 1.125 MW/s.
    assert result.facility["max_ramp_mw_per_s"] == pytest.approx(1.125)
    # Energy of a step: 1.5 x (3 ms x 1852.5 + 2 ms x 1102.5) J.
    assert result.facility["energy_per_step_mwh"] == pytest.approx(
        1.5 * (0.003 * 1852.5 + 0.002 * 1102.5) / 3.6e9
    )


def test_power_servers_without_job_gpus_stay_at_idle_overhead():
    # Rack 0 runs the job, rack 1's GPUs are outside it: its server draws the idle overhead (80 W)
    # and its GPUs idle (50 W), whatever the job does; rack 0's server the busy overhead (200 W).
    tl = timeline([[("forward", 0.005)]], gpu_stage=[0, 0, -1, -1])
    inputs = make_inputs(
        tl,
        [0, 0, 1, 1],
        n_racks=2,
        rack_servers=np.array([1, 1]),
        rack_job_servers=np.array([1, 0]),
        server_busy_w=200.0,
        server_idle_w=80.0,
    )
    result = simulate_power(inputs, spec(window_s=0.01, resolution_ms=1))
    np.testing.assert_allclose(
        result.rack_arrays["rack_peak_kw"], [(2 * 600 + 200) / 1000, (2 * 50 + 80) / 1000]
    )


def test_power_sub_sample_phases_are_bin_averaged():
    # forward 1.5 ms at 600 W, comm 1 ms at 300 W: samples [0,1) 600, [1,2) half/half 450,
    # [2,3) comm 2.0-2.5 + forward 2.5-3.0 450, [3,4) forward 600, [4,5) comm 300.
    tl = timeline([[("forward", 0.0015), ("comm", 0.001)]], gpu_stage=[0])
    result = simulate_power(make_inputs(tl, [0], n_racks=1), spec(window_s=0.01, resolution_ms=1))
    np.testing.assert_allclose(result.row_gpu_w[0], np.tile([600, 450, 450, 600, 300], 2), rtol=1e-6)


def test_power_first_order_ramp_matches_hand_formula():
    # Square wave: 50 ms at H = 600 W, 50 ms at L = 100 W; tau = 10 ms. In periodic steady state the
    # power at the start of the high half is p0 = (L + H q) / (1 + q), q = exp(-50/10); the mean of
    # sample n (1 ms) of the high half is H + (p0 - H) e^(-n dt/tau) tau (1 - e^(-dt/tau)) / dt.
    tl = timeline([[("forward", 0.05), ("bubble", 0.05)]], gpu_stage=[0])
    inputs = make_inputs(tl, [0], n_racks=1, level_w=levels(forward=600.0, rest=100.0), ramp_s=0.01)
    result = simulate_power(inputs, spec(window_s=0.1, resolution_ms=1))
    high, low, tau, dt = 600.0, 100.0, 0.01, 0.001
    q = math.exp(-0.05 / tau)
    p0 = (low + high * q) / (1 + q)
    p1 = (high + low * q) / (1 + q)  # start of the low half, by symmetry
    n = np.arange(50)
    gain = tau * (1 - math.exp(-dt / tau)) / dt
    expected = np.concatenate(
        [high + (p0 - high) * np.exp(-n * dt / tau) * gain, low + (p1 - low) * np.exp(-n * dt / tau) * gain]
    )
    np.testing.assert_allclose(result.row_gpu_w[0], expected, rtol=1e-6)


def test_power_stage_offsets_follow_the_schedule():
    # Stage 1 runs the same 4 ms forward as stage 0, 3 ms later (a pipeline offset).
    tl = timeline(
        [[("forward", 0.004), ("bubble", 0.006)], [("bubble", 0.003), ("forward", 0.004), ("bubble", 0.003)]],
        gpu_stage=[0, 1],
    )
    result = simulate_power(make_inputs(tl, [0, 0], n_racks=1), spec(window_s=0.02, resolution_ms=1))
    stage0, stage1 = result.row_gpu_w
    assert stage0[:4].tolist() == [600.0] * 4 and stage0[4] == 100.0
    np.testing.assert_array_equal(stage1, np.roll(stage0, 3))


def test_power_checkpoint_stall_stops_the_job_clock():
    # A 2 ms stall at t = 3 ms: the GPU draws stall_w, then resumes the step where it stopped.
    tl = timeline([[("forward", 0.004), ("comm", 0.001)]], gpu_stage=[0])
    result = simulate_power(
        make_inputs(tl, [0], n_racks=1),
        spec(
            window_s=0.01,
            resolution_ms=1,
            events=[{"kind": "checkpoint", "at_s": 0.003, "duration_s": 0.002}],
        ),
    )
    assert result.row_gpu_w[0].tolist() == [600, 600, 600, 100, 100, 600, 300, 600, 600, 600]


def test_power_start_event_keeps_the_job_down_until_it_starts():
    # The job starts at 4 ms: idle (50 W) before, then the step from its beginning.
    tl = timeline([[("forward", 0.003), ("comm", 0.002)]], gpu_stage=[0])
    result = simulate_power(
        make_inputs(tl, [0], n_racks=1),
        spec(window_s=0.01, resolution_ms=1, events=[{"kind": "start", "at_s": 0.004}]),
    )
    assert result.row_gpu_w[0].tolist() == [50, 50, 50, 50, 600, 600, 600, 300, 300, 600]


# --- feeds ------------------------------------------------------------------------------------


def test_feed_capacity_applies_sqrt3_power_factor_and_derating():
    # 415 V line-to-line, 125 A, three phase: sqrt(3) x 415 x 125 x 0.95 x 0.8 = 68.29 kW.
    assert float(feed_capacity_kw(415, 125, 3, 0.95, 0.8)) == pytest.approx(
        math.sqrt(3) * 415 * 125 * 0.95 * 0.8 / 1000
    )
    assert float(feed_capacity_kw(415, 125, 3, 0.95, 0.8)) == pytest.approx(68.2861, abs=1e-4)
    # Single phase has no sqrt(3): 230 V x 32 A x 1.0 x 0.8 = 5.888 kW.
    assert float(feed_capacity_kw(230, 32, 1, 1.0, 0.8)) == pytest.approx(5.888)
    for spec_ in catalog().feeds.values():
        got = float(
            feed_capacity_kw(spec_.volts, spec_.amps, spec_.phases, spec_.power_factor, spec_.derating)
        )
        assert got == pytest.approx(spec_.capacity_kw)


def test_feed_ab_loss_doubles_the_surviving_side():
    tl = timeline([[("forward", 0.005)]], gpu_stage=[0] * 10)
    inputs = make_inputs(tl, [0] * 10, n_racks=1, feed_capacity_kw=np.array([5.0, 5.0]))
    result = simulate_power(inputs, spec(window_s=0.01, resolution_ms=1))
    rack_kw = 10 * 0.6
    feed = result.feed_arrays
    np.testing.assert_allclose(feed["feed_peak_kw"], [rack_kw / 2] * 2)
    np.testing.assert_allclose(feed["feed_side_loss_peak_kw"], [rack_kw] * 2)
    np.testing.assert_allclose(feed["feed_loss_peak_kw"], [rack_kw] * 2)
    assert feed["feed_loss_lost_feed"].tolist() == [1, 0]
    # 6 kW on a 5 kW feed after the loss of the other side; 3 kW (60 %) normally.
    np.testing.assert_allclose(feed["feed_utilisation"], [0.6, 0.6])
    np.testing.assert_allclose(feed["feed_side_loss_utilisation"], [1.2, 1.2])
    cases = {(row["feed"], row["case"]) for row in result.feeds_over_limit}
    assert cases == {(0, "side_loss"), (1, "side_loss"), (0, "feed_loss"), (1, "feed_loss")}
    assert all(row["time_s"] == 0.0 for row in result.feeds_over_limit)


def test_feed_loads_of_a_rack_with_two_feeds_per_side():
    # 12 kW rack on A1, A2, B1, B2: 3 kW each; losing one feed moves its 3 kW onto the other
    # three (+1 kW each, 4 kW); losing side A moves A's 6 kW onto B1, B2 (6 kW each).
    pair_feed, pair_rack = np.arange(4), np.zeros(4, np.int64)
    normal, worst, lost = feed_loads_kw(np.array([12.0]), pair_feed, pair_rack, 4)
    np.testing.assert_allclose(normal, [3, 3, 3, 3])
    np.testing.assert_allclose(worst, [4, 4, 4, 4])
    assert (lost >= 0).all() and (lost != np.arange(4)).all()
    tl = timeline([[("forward", 0.005)]], gpu_stage=[0] * 20)
    inputs = make_inputs(
        tl,
        [0] * 20,
        n_racks=1,
        feed_capacity_kw=np.full(4, 10.0),
        feed_side=np.array([0, 0, 1, 1]),
        feed_panel=np.array([0, 0, 1, 1]),
        pair_feed=pair_feed,
        pair_rack=pair_rack,
    )
    result = simulate_power(inputs, spec(window_s=0.01, resolution_ms=1))
    np.testing.assert_allclose(result.feed_arrays["feed_peak_kw"], [3, 3, 3, 3])
    np.testing.assert_allclose(result.feed_arrays["feed_loss_peak_kw"], [4, 4, 4, 4])
    np.testing.assert_allclose(result.feed_arrays["feed_side_loss_peak_kw"], [6, 6, 6, 6])
    np.testing.assert_allclose(result.panel_arrays["panel_peak_kw"], [6, 6])


def test_feed_loads_matches_a_loop_over_lost_feeds():
    rng = np.random.default_rng(7)
    n_racks, n_feeds = 30, 24
    pair_rack = np.repeat(np.arange(n_racks), rng.integers(1, 4, n_racks))
    pair_feed = rng.integers(0, n_feeds, pair_rack.size)
    keep = np.unique(pair_rack * n_feeds + pair_feed, return_index=True)[1]  # no duplicate pairs
    pair_rack, pair_feed = pair_rack[keep], pair_feed[keep]
    rack_kw = rng.uniform(5, 40, n_racks)
    capacity = rng.uniform(20, 60, n_feeds)
    n_r = np.bincount(pair_rack, minlength=n_racks)
    normal_ref = np.zeros(n_feeds)
    for f, r in zip(pair_feed, pair_rack, strict=True):
        normal_ref[f] += rack_kw[r] / n_r[r]
    worst_ref = normal_ref.copy()
    for g in range(n_feeds):  # the naive reference: lose every feed in turn
        load = np.zeros(n_feeds)
        for f, r in zip(pair_feed, pair_rack, strict=True):
            if f == g:
                continue
            lost_here = np.any((pair_rack == r) & (pair_feed == g))
            load[f] += rack_kw[r] / (n_r[r] - 1 if lost_here else n_r[r])
        others = np.arange(n_feeds) != g
        worst_ref[others] = np.maximum(worst_ref[others], load[others])
    normal, worst = feed_loads(rack_kw, pair_feed, pair_rack, capacity)
    np.testing.assert_allclose(normal, normal_ref / capacity)
    np.testing.assert_allclose(worst, worst_ref / capacity)


# --- mitigations ------------------------------------------------------------------------------


def test_power_floor_bounds_the_swing():
    # N = 100 GPUs alternate between H = 700 W (compute) and L = 100 W (bubble); a floor of
    # f x TDP = 0.4 x 1000 W holds them at >= 400 W, so the GPU power lies in [400, 700] W and the
    # facility swing is at most N (H - f TDP) pue / eta = 100 x 300 W x 1.2 / 0.9 = 40 kW, reached
    # exactly here (tau = 0) against N (H - L) pue / eta = 80 kW without the floor.
    tl = timeline([[("forward", 0.004), ("bubble", 0.006)]], gpu_stage=[0] * 100)
    inputs = make_inputs(
        tl, [0] * 100, n_racks=1, level_w=levels(forward=700.0, rest=100.0), psu_efficiency=0.9
    )
    result = simulate_power(
        inputs, spec(window_s=0.05, resolution_ms=1, pue=1.2, gpu={"floor_fraction": 0.4})
    )
    assert result.baseline["swing_mw"] == pytest.approx(100 * 600 * 1.2 / 0.9 / 1e6)
    assert result.facility["swing_mw"] == pytest.approx(100 * 300 * 1.2 / 0.9 / 1e6)
    assert result.row_gpu_w.min() == pytest.approx(400.0)
    floor = result.mitigations["floor"]
    assert floor["swing_reduction"] == pytest.approx(0.5)
    assert floor["slowdown"] == 0.0
    # Extra energy: 300 W more for 6 ms of every 10 ms step on 100 GPUs, over one day.
    extra_j = 100 * 300.0 * 0.006 * 1.2 / 0.9 * (86_400 / 0.01)
    assert floor["extra_mwh_per_day"] == pytest.approx(extra_j / 3.6e9)


def test_power_cap_clips_levels_and_slows_compute_as_modelled():
    # Cap 500 W on a 700 W compute phase (idle 50 W): compute takes ((700-50)/(500-50))^(1/3) longer;
    # the 4 ms comm phase does not stretch.
    tl = timeline([[("forward", 0.006), ("comm", 0.004)]], gpu_stage=[0] * 8)
    inputs = make_inputs(tl, [0] * 8, n_racks=1, level_w=levels(forward=700.0, comm=300.0))
    result = simulate_power(inputs, spec(window_s=0.05, resolution_ms=1, gpu={"cap_w": 500}))
    stretch = ((700 - 50) / (500 - 50)) ** (1 / CAP_EXPONENT)
    assert float(cap_stretch(inputs.level_w, 500.0, 50.0)[PHASE_CODES["forward"]]) == pytest.approx(stretch)
    cap = result.mitigations["cap"]
    assert cap["slowdown"] == pytest.approx((0.006 * stretch + 0.004) / 0.01 - 1)
    assert result.row_gpu_w.max() == pytest.approx(500.0)


def test_power_stagger_interleaves_groups_and_costs_its_offset():
    # 2 ms of compute (700 W) in a 10 ms step: two groups offset by 2 ms never compute together, so the
    # peak is half the GPUs at 700 W and half at 100 W: the swing halves; each step waits 2 ms more.
    tl = timeline([[("forward", 0.002), ("bubble", 0.008)]], gpu_stage=[0] * 10)
    inputs = make_inputs(tl, [0] * 10, n_racks=1, level_w=levels(forward=700.0, rest=100.0))
    result = simulate_power(
        inputs, spec(window_s=0.06, resolution_ms=1, stagger_groups=2, stagger_offset_ms=2)
    )
    stagger = result.mitigations["stagger"]
    assert result.baseline["swing_mw"] == pytest.approx(10 * 600e-6)
    assert stagger["swing_mw"] == pytest.approx(5 * 600e-6)
    assert stagger["slowdown"] == pytest.approx(0.2)
    group0, group1 = result.row_gpu_w
    np.testing.assert_array_equal(group1, np.roll(group0, 2))


def test_power_storage_needs_dp_squared_over_twice_the_ramp():
    # A crash drops 1,000 GPUs from 1,000 W to idle 0 W: dP = 1 MW. With the grid ramp limited to
    # R = 0.5 MW/s the storage absorbs the triangle dP^2 / (2 R) = 1 MJ (1 kJ per GPU), and the
    # facility ramps at R. (Discrete: the 2,000-sample trailing mean gives dP dt (W - 1) / 2.)
    tl = timeline([[("forward", 0.01)]], gpu_stage=[0] * 1000)
    inputs = make_inputs(tl, [0] * 1000, n_racks=1, level_w=levels(forward=1000.0), idle_w=0.0)
    result = simulate_power(
        inputs,
        spec(
            window_s=5.0,
            resolution_ms=1,
            events=[{"kind": "crash", "at_s": 1.0, "duration_s": 100.0}],
            storage={"ramp_mw_per_s": 0.5},
        ),
    )
    storage = result.storage
    assert storage["window_s"] == pytest.approx(2.0)
    assert storage["needed_kj_per_rack_max"] == pytest.approx(1e6 * 0.001 * 1999 / 2 / 1000)
    assert storage["needed_kj_per_rack_max"] == pytest.approx(1000.0, rel=1e-3)
    assert storage["needed_j_per_gpu"] == pytest.approx(1000.0, rel=1e-3)
    assert result.facility["max_ramp_mw_per_s"] == pytest.approx(0.5)
    assert result.baseline["max_ramp_mw_per_s"] == pytest.approx(1000.0)


def test_power_storage_capacity_sets_the_window_when_no_ramp_is_given():
    tl = timeline([[("forward", 0.01)]], gpu_stage=[0] * 1000)
    inputs = make_inputs(tl, [0] * 1000, n_racks=1, level_w=levels(forward=1000.0), idle_w=0.0)
    events = [{"kind": "crash", "at_s": 1.0, "duration_s": 100.0}]
    result = simulate_power(inputs, spec(window_s=5.0, events=events, storage={"joules_per_gpu": 250.2}))
    # 250.2 J per GPU covers dP dt (W - 1) / 2 <= 250.2 kJ up to W = 501 samples: a 2 MW/s ramp.
    assert result.storage["window_s"] == pytest.approx(0.501)
    assert result.storage["needed_j_per_gpu"] == pytest.approx(250.0)
    assert result.facility["max_ramp_mw_per_s"] == pytest.approx(1.0 / 0.501)


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


def test_power_vectorized_matches_a_naive_per_gpu_reference():
    rng = np.random.default_rng(3)
    n_racks, n_gpus, n_stages, step = 6, 48, 3, 0.012
    stages = []
    for _ in range(n_stages):
        cuts = np.sort(rng.uniform(0, step, 5))
        lengths = np.diff(np.concatenate([[0.0], cuts, [step]]))
        kinds = rng.choice(["forward", "backward", "comm", "bubble", "pp_wait", "dp"], lengths.size)
        stages.append(list(zip(kinds.tolist(), lengths.tolist(), strict=True)))
    gpu_stage = rng.integers(-1, n_stages, n_gpus)
    gpu_rack = rng.integers(0, n_racks, n_gpus)
    tl = timeline(stages, gpu_stage)
    tl = StageTimeline(**{**tl.__dict__, "step_time_s": step})
    pair_rack = np.concatenate([np.repeat(np.arange(n_racks), 2), [0, 3]])
    pair_feed = np.arange(pair_rack.size)
    level_w = levels(forward=650.0, backward=700.0, comm=280.0, bubble=120.0, pp_wait=150.0, dp=260.0)
    inputs = make_inputs(
        tl,
        gpu_rack,
        n_racks=n_racks,
        level_w=level_w,
        ramp_s=0.003,
        rack_servers=rng.integers(0, 3, n_racks),
        server_busy_w=350.0,
        psu_efficiency=0.93,
        rack_static_w=rng.uniform(0, 200, n_racks),
        rack_budget_kw=np.full(n_racks, 3.0),
        feed_capacity_kw=np.full(pair_rack.size, 1.5),
        feed_side=np.concatenate([np.tile([0, 1], n_racks), [0, 1]]),
        feed_panel=np.zeros(pair_rack.size, np.int64),
        pair_feed=pair_feed,
        pair_rack=pair_rack,
        panel_name=("P",),
    )
    stall = (0.0104, 0.0191)
    result = simulate_power(
        inputs,
        spec(
            window_s=0.05,
            resolution_ms=1,
            store_ms=1,
            events=[{"kind": "checkpoint", "at_s": stall[0], "duration_s": stall[1] - stall[0]}],
        ),
    )
    racks, feeds, side_loss = _naive(inputs, level_w, stall, 0.001, 50, 0.003)
    np.testing.assert_allclose(result.rack_series_kw, racks / 1000, rtol=1e-5)
    np.testing.assert_allclose(result.rack_arrays["rack_peak_kw"], racks.max(axis=1) / 1000, rtol=1e-9)
    np.testing.assert_allclose(result.rack_arrays["rack_mean_kw"], racks.mean(axis=1) / 1000, rtol=1e-9)
    np.testing.assert_allclose(result.feed_arrays["feed_peak_kw"], feeds.max(axis=1) / 1000, rtol=1e-9)
    np.testing.assert_allclose(
        result.feed_arrays["feed_side_loss_peak_kw"], side_loss.max(axis=1) / 1000, rtol=1e-9
    )
    np.testing.assert_allclose(result.facility_mw, racks.sum(axis=0) / 1e6, rtol=1e-9)
    over = racks > 3000.0
    first = np.where(over.any(axis=1), over.argmax(axis=1) * 0.001, np.nan)
    np.testing.assert_allclose(result.rack_arrays["rack_over_time_s"], first, equal_nan=True)


def test_power_signature_aggregation_equals_a_per_rack_sum():
    # 8 racks of 4 GPUs; racks 0-3 hold stage 0, racks 4-7 stage 1 (4 signatures of GPU series, one
    # of the empty switch rack): the stored rack series, evaluated per signature, equal per-rack sums
    # of the per-stage GPU series, and the peaks equal the maxima of those sums.
    tl = timeline(
        [[("forward", 0.003), ("comm", 0.003)], [("comm", 0.003), ("forward", 0.003)]],
        gpu_stage=np.arange(32) // 16,
    )
    gpu_rack = np.arange(32) // 4
    n_racks = 9
    servers = np.array([1] * 8 + [0])
    inputs = make_inputs(
        tl,
        gpu_rack,
        n_racks=n_racks,
        rack_servers=servers,
        server_busy_w=500.0,
        rack_static_w=np.array([10.0] * 8 + [900.0]),
        psu_efficiency=0.95,
    )
    result = simulate_power(inputs, spec(window_s=0.03, resolution_ms=1, store_ms=1))
    row = result.row_gpu_w.astype(float)
    expected = np.zeros((n_racks, row.shape[1]))
    for r in range(n_racks):  # the per-rack sum, GPU by GPU
        for g in np.flatnonzero(gpu_rack == r):
            expected[r] += row[inputs.gpu_stage[g]]
        expected[r] = (expected[r] + servers[r] * 500.0) / 0.95 + inputs.rack_static_w[r]
    np.testing.assert_allclose(result.rack_series_kw, expected / 1000, rtol=1e-6)
    np.testing.assert_allclose(result.rack_arrays["rack_peak_kw"], expected.max(axis=1) / 1000, rtol=1e-9)
    assert result.counts["signatures"] < n_racks + result.counts["feeds"]


# --- job events and the coarse timeline ---------------------------------------------------------


def test_power_coarse_timeline_follows_a_crash_and_restart():
    # 100 GPUs: step 10 ms (forward 6 ms at 600 W, comm 4 ms at 300 W): mean 480 W. A crash at 100 s
    # for 50 s (idle 50 W), then a 10 s restart ramp from 150 s.
    tl = timeline([[("forward", 0.006), ("comm", 0.004)]], gpu_stage=[0] * 100)
    inputs = make_inputs(tl, [0] * 100, n_racks=1)
    log = job_events([(100.0, "crash", 50.0), (150.0, "restart", 10.0)])
    result = simulate_power(inputs, spec(window_s=0.05, coarse_resolution_s=1.0), events=log)
    series = result.coarse_facility_mw.astype(float) * 1e6
    assert series[50] == pytest.approx(100 * 480.0, rel=1e-6)
    assert series[120] == pytest.approx(100 * 50.0, rel=1e-6)
    assert series[155] == pytest.approx(100 * (50 + 0.55 * (480 - 50)), rel=1e-5)  # mid-ramp at 155.5 s
    assert series[165] == pytest.approx(100 * 480.0, rel=1e-6)
    assert result.coarse["down_fraction"] == pytest.approx(50.0 / result.coarse["horizon_s"])
    assert result.coarse_rack_kw.shape[0] == 1


def test_band_share_of_pure_tones():
    t = np.arange(60_000) * 0.001
    share, rms = band_share(3.0 + 2.0 * np.sin(2 * np.pi * 1.0 * t), dt_s=0.001, band_hz=(0.1, 20.0))
    assert share == pytest.approx(1.0) and rms == pytest.approx(2.0 / math.sqrt(2))
    share, rms = band_share(2.0 * np.sin(2 * np.pi * 50.0 * t), dt_s=0.001, band_hz=(0.1, 20.0))
    assert share == pytest.approx(0.0, abs=1e-12)
    assert band_share(np.ones(100), dt_s=0.001, band_hz=(0.1, 20.0)) == (0.0, 0.0)


# --- the 16,384-GPU check (docs/power-model.md) -------------------------------------------------


def test_power_16k_h100_checkpoint_swing_is_tens_of_megawatts():
    # 2,048 DGX H100 (16,384 GPUs), every GPU computing at ~600 W, then a synchronous checkpoint
    # stall at ~100 W: GPU-only swing 16,384 x 500 W = 8.19 MW; at the facility / 0.95 (PSU) x 1.2
    # (PUE) = 10.35 MW. Servers keep running through a stall (they write the checkpoint).
    from topology.fabric.compiled import compile_plan
    from topology.fabric.generators import generate

    plan = generate("rail-optimized", catalog=catalog(), server="dgx-h100", nodes=2048)
    fabric = compile_plan(plan)
    tl = timeline([[("forward", 10.0)]] * 16, gpu_stage=np.arange(fabric.n_gpus) // 1024)
    h100 = catalog().gpu("h100-sxm")
    inputs = power_inputs(plan, fabric, tl, h100, compute_fraction=600 / 700, stall_fraction=100 / 700)
    data = {
        "window_s": 30,
        "resolution_ms": 10,
        "events": [{"kind": "checkpoint", "at_s": 10, "duration_s": 10}],
    }
    result = simulate_power(inputs, parse_power(data))
    gpu_only_mw = 16_384 * (600 - 100) / 1e6
    assert gpu_only_mw == pytest.approx(8.192)
    assert result.facility["swing_mw"] == pytest.approx(gpu_only_mw / 0.95 * 1.2, rel=1e-6)
    assert 8.0 < result.facility["swing_mw"] < 15.0
    # A crash (GPUs to 70 W idle, servers to 45 % of 4.6 kW from 64 %) drops more: ~13 MW.
    crash = simulate_power(
        inputs, parse_power({**data, "events": [{"kind": "crash", "at_s": 10, "duration_s": 10}]})
    )
    servers_mw = 2048 * (0.64 - 0.45) * 4600 / 1e6
    expected = (16_384 * (600 - 70) / 1e6 + servers_mw) / 0.95 * 1.2
    assert crash.facility["swing_mw"] == pytest.approx(expected, rel=1e-6)


# --- parsing and validation -------------------------------------------------------------------


def test_parse_power_defaults_and_the_documented_example():
    default = parse_power(None)
    assert (default.window_s, default.resolution_ms, default.samples) == (60.0, 1.0, 60_000)
    assert default.pue == 1.2 and default.band_hz == (0.1, 20.0) and not default.storage.enabled
    example = parse_power(
        {
            "window_s": 60,
            "resolution_ms": 1,
            "events": ["checkpoint"],
            "gpu": {"floor_fraction": 0.0, "cap_w": None},
            "stagger_groups": 1,
            "storage": {"joules_per_gpu": 0, "ramp_mw_per_s": None},
            "pue": 1.2,
            "band_hz": [0.1, 20],
        }
    )
    assert example.events[0].kind == "checkpoint" and example.events[0].at_s == 20.0
    assert example.events[0].duration_s == 10.0
    assert parse_power(example.to_dict()) == example


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"window_s": 120, "resolution_ms": 0.1},
            "power.window_s: window_s x 1000 / resolution_ms must be at most 600,000 samples (got 1,200,000)",
        ),
        ({"pue": -1}, "power.pue: must be ≥ 1 (got -1)"),
        ({"gpu": {"floor_fraction": 1.2}}, "power.gpu.floor_fraction: must be ≤ 1 (got 1.2)"),
        ({"gpu": {"cap_w": -5}}, "power.gpu.cap_w: must be > 0 (got -5)"),
        ({"storage": {"joules_per_gpu": -1}}, "power.storage.joules_per_gpu: must be ≥ 0 (got -1)"),
        ({"events": ["reboot"]}, "power.events[0].kind: must be one of start, checkpoint, crash, restart"),
        ({"band_hz": [0.1, 900]}, "power.band_hz: the upper edge must be at most the Nyquist frequency"),
        ({"stagger_groups": 0}, "power.stagger_groups: must be ≥ 1 (got 0)"),
        ({"windows": 3}, "power.windows: unknown field"),
    ],
)
def test_parse_power_names_the_field_and_the_limit(data, message):
    with pytest.raises(PowerError) as error:
        parse_power(data)
    assert str(error.value).startswith(message)


def test_check_power_names_the_tdp():
    with pytest.raises(
        PowerError, match=r"power\.gpu\.cap_w: must be at most the GPU's TDP \(700 W\) \(got 800 W\)"
    ):
        check_power(parse_power({"gpu": {"cap_w": 800}}), tdp_w=700.0, idle_w=70.0)
    with pytest.raises(
        PowerError, match=r"power\.gpu\.floor_fraction: floor_fraction x TDP must lie in 0\.\.TDP \(700 W\)"
    ):
        check_power(PowerSpec(gpu=GpuKnobs(floor_fraction=1.2)), tdp_w=700.0, idle_w=70.0)
    with pytest.raises(
        PowerError, match=r"floor_fraction x TDP \(0\.9 x 700 = 630 W\) must be at most cap_w \(500 W\)"
    ):
        check_power(parse_power({"gpu": {"floor_fraction": 0.9, "cap_w": 500}}), tdp_w=700.0, idle_w=70.0)


def test_power_inputs_reject_negative_power_and_a_broken_timeline():
    tl = timeline([[("forward", 0.003), ("comm", 0.002)]], gpu_stage=[0])
    with pytest.raises(PowerError, match=r"inputs\.level_w\[2\]: must be a finite number ≥ 0 W \(got -5\)"):
        simulate_power(make_inputs(tl, [0], n_racks=1, level_w=levels(comm=-5.0)))
    gappy = StageTimeline(**{**tl.__dict__, "start_s": tl.start_s + np.array([[0.0, 0.001]])})
    with pytest.raises(PowerError, match=r"timeline\.start_s: phases must be contiguous"):
        simulate_power(make_inputs(gappy, [0], n_racks=1))
    negative = StageTimeline(**{**tl.__dict__, "duration_s": np.array([[0.006, -0.001]])})
    with pytest.raises(PowerError, match=r"timeline\.duration_s: must be finite and ≥ 0 s \(stage 0 phase 1"):
        simulate_power(make_inputs(negative, [0], n_racks=1))
    with pytest.raises(PowerError, match=r"events\[0\]\.kind"):
        job_events([(1.0, "reboot", 2.0)])


def test_phase_levels_follow_the_fractions_and_never_drop_below_idle():
    level = phase_levels_w(700.0, 70.0, compute_fraction=0.85, comm_fraction=0.05)
    assert level[PHASE_CODES["forward"]] == pytest.approx(595.0)
    assert level[PHASE_CODES["comm"]] == 70.0 and level[PHASE_CODES["idle"]] == 70.0


def test_power_result_is_json_ready():
    tl = timeline([[("forward", 0.003), ("comm", 0.002)]], gpu_stage=[0, 0])
    result = simulate_power(
        make_inputs(tl, [0, 0], n_racks=1), spec(window_s=0.02, gpu={"floor_fraction": 0.3})
    )
    out = json.loads(json.dumps(result.to_dict(arrays=True), allow_nan=False))
    for key in (
        "facility_peak_mw",
        "facility_trough_mw",
        "swing_mw",
        "max_ramp_mw_per_s",
        "band_energy_share",
    ):
        assert isinstance(out[key], float)
    assert isinstance(out["feeds_over_limit"], list) and isinstance(out["racks_over_budget"], list)
    assert "floor" in out["mitigations"] and len(out["rack_peak_kw"]) == 1
    assert set(result.to_arrays()) >= {"power_facility_mw", "power_rack_peak_kw", "power_feed_utilisation"}


def test_power_modules_are_pure():
    code = textwrap.dedent(
        """
        import sys
        import scenarios.sim.power
        banned = ("django", "celery", "channels", "plotly")
        print(",".join(sorted(m for m in sys.modules if m.split(".")[0] in banned)))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == ""
