"""Per-GPU power series checked by hand: phases, ramps, stage offsets, stalls and events, the
mitigations, the coarse timeline and the band share (scenarios/sim/power/series.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scenarios.sim.format.power import CAP_EXPONENT
from scenarios.sim.power import (
    job_events,
    simulate_power,
)
from scenarios.sim.power.series import band_share, cap_stretch, minute_swing_mw
from scenarios.sim.step.pipeline import PHASE_CODES
from tests.sim.power._helpers import (
    levels,
    make_inputs,
    spec,
    timeline,
)

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


def test_power_storage_too_small_for_the_ramp_limit_delivers_what_it_holds():
    # The crash above (dP = 1 MW over 1,000 GPUs) under a 0.5 MW/s limit needs 999.5 J per GPU.
    # With 250.2 J the storage can hold the grid to a 501-sample mean (250 J used, hand-computed
    # as in the test above): the rest passes through, so the facility ramps at 1 / 0.501 MW/s,
    # not at the limit, and the figures say the limit is not met and what it would need.
    tl = timeline([[("forward", 0.01)]], gpu_stage=[0] * 1000)
    inputs = make_inputs(tl, [0] * 1000, n_racks=1, level_w=levels(forward=1000.0), idle_w=0.0)
    events = [{"kind": "crash", "at_s": 1.0, "duration_s": 100.0}]

    def run(joules):
        return simulate_power(
            inputs,
            spec(window_s=5.0, events=events, storage={"ramp_mw_per_s": 0.5, "joules_per_gpu": joules}),
        )

    small = run(250.2)
    assert small.storage["needed_j_per_gpu"] == pytest.approx(999.5)
    assert small.storage["used_j_per_gpu"] == pytest.approx(250.0)
    assert small.storage["used_j_per_gpu"] <= small.storage["configured_j_per_gpu"]
    assert small.storage["short_racks"] == 1 and small.storage["ramp_limit_met"] is False
    assert small.storage["window_s"] == pytest.approx(0.501)
    assert small.facility["max_ramp_mw_per_s"] == pytest.approx(1.0 / 0.501)
    enough = run(1000.0)
    assert enough.storage["ramp_limit_met"] is True and enough.storage["short_racks"] == 0
    assert enough.storage["used_j_per_gpu"] == pytest.approx(999.5)
    assert enough.facility["max_ramp_mw_per_s"] == pytest.approx(0.5)


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


def test_minute_swing_is_the_largest_rise_within_a_minute_of_one_second_means():
    # A 10 MW step: 10 MW within the minute around it. A ramp of 0.1 MW/s for 10 minutes:
    # 6 MW in any minute. Step-scale ripple (+-5 MW at 50 Hz) averages out in the 1-s means.
    step = np.r_[np.full(30_000, 10.0), np.full(30_000, 20.0)]
    assert minute_swing_mw(step, dt_s=0.001) == pytest.approx(10.0)
    assert minute_swing_mw(np.arange(600) * 0.1, dt_s=1.0) == pytest.approx(6.0)
    t = np.arange(120_000) * 0.001
    assert minute_swing_mw(100.0 + 5.0 * np.sin(2 * np.pi * 50.0 * t), dt_s=0.001) == pytest.approx(
        0.0, abs=1e-9
    )


def test_power_run_checks_the_utility_requirement_and_marks_reported_oscillations():
    # 1,000 GPUs stepping every 1/23 s (23 Hz, ERCOT's reported mode) between 1,000 W and 200 W:
    # nearly all the variance sits near 23 Hz, none near 14.7 Hz, none in the 0.1-20 Hz band,
    # and the band cap passes; a crash at 1 s drops ~0.6 MW x PUE within the minute, over a
    # 0.5 MW/min limit.
    period = 1.0 / 23.0
    tl = timeline([[("forward", period / 2), ("comm", period / 2)]], gpu_stage=[0] * 1000)
    inputs = make_inputs(tl, [0] * 1000, n_racks=1, level_w=levels(forward=1000.0, comm=200.0), idle_w=0.0)
    steady = simulate_power(inputs, spec(window_s=4.0, grid_ramp_mw_per_min=0.5))
    near = {o["hz"]: o for o in steady.grid["oscillations"]}
    assert near[23.0]["share"] > 0.5 and near[14.7]["share"] < 0.01
    assert "ERCOT" in near[23.0]["source"] and "Dominion" in near[14.7]["source"]
    assert steady.grid["band_ok"] is True and steady.grid["band_share_max"] == pytest.approx(0.2)
    assert steady.grid["ramp_ok"] is True
    crash = simulate_power(
        inputs,
        spec(
            window_s=4.0,
            grid_ramp_mw_per_min=0.5,
            events=[{"kind": "crash", "at_s": 1.0, "duration_s": 100.0}],
        ),
    )
    assert crash.grid["minute_swing_mw"] > 0.5 and crash.grid["ramp_ok"] is False
    assert simulate_power(inputs, spec(window_s=4.0)).grid["ramp_ok"] is None  # no limit, no verdict
    assert steady.to_dict()["grid"]["oscillations"][1]["hz"] == 23.0
