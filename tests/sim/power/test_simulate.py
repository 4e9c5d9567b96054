"""The power front: the vectorized series against a naive reference, the 16,384-GPU check and
the result (scenarios/sim/power/__init__.py, result.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scenarios.sim.power import (
    PowerDraw,
    parse_power,
    power_inputs,
    simulate_power,
)
from scenarios.sim.step.pipeline import StageTimeline
from tests.sim._fabrics import catalog
from tests.sim.power._helpers import (
    _naive,
    levels,
    make_inputs,
    spec,
    timeline,
)


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
    inputs = power_inputs(
        plan, fabric, tl, h100, draw=PowerDraw(compute_fraction=600 / 700, stall_fraction=100 / 700)
    )
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
