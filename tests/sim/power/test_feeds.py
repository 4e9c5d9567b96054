"""Feed capacity, A/B loss and feed loads (scenarios/sim/power/feeds.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scenarios.sim.power import (
    feed_capacity_kw,
    feed_loads,
    feed_loads_kw,
    simulate_power,
)
from tests.sim._fabrics import catalog
from tests.sim.power._helpers import (
    make_inputs,
    spec,
    timeline,
)

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
