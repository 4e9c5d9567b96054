from __future__ import annotations

import numpy as np
import pytest

from scenarios.sim.pipeline import bubble_fraction, phase_timeline, pipeline_time_s, stage_layers


def test_bubble_fraction_1f1b_and_interleaved():
    assert float(bubble_fraction(64, 1, 512)) == pytest.approx(63 / 512)
    assert float(bubble_fraction(8, 3, 64)) == pytest.approx(7 / 192)
    assert float(bubble_fraction(1, 1, 4)) == 0.0


def test_pipeline_time_is_busy_time_plus_bubble():
    assert float(pipeline_time_s(1.0, 2.0, 4, 1, 8)) == pytest.approx((8 + 3) * 3.0)
    assert float(pipeline_time_s(1.0, 2.0, 4, 2, 8)) == pytest.approx((8 + 1.5) * 3.0)


@pytest.mark.parametrize(
    ("layers", "pp", "inner", "last"),
    [(128, 64, 2, 2), (126, 16, 8, 7), (10, 4, 3, 2), (5, 4, 2, 1), (24, 1, 24, 24)],
)
def test_stage_layers_balances_and_lightens_the_last_stage(layers, pp, inner, last):
    got_inner, got_last = stage_layers(layers, pp)
    assert (float(got_inner), float(got_last)) == (inner, last)


def test_stage_layers_vectorized_matches_scalar():
    pps = np.array([1, 2, 3, 5, 7, 16])
    inner, last = stage_layers(126, pps)
    for i, p in enumerate(pps):
        assert (inner[i], last[i]) == tuple(float(x) for x in stage_layers(126, int(p)))


def test_phase_timeline_is_contiguous_and_sums_to_step():
    breakdown = {
        "compute": 5.0,
        "tp": 1.0,
        "bubble": 2.0,
        "dp": 0.5,
        "optimizer": 0.1,
        "straggler": 0.2,
        "pp": 0.3,
    }
    timeline = phase_timeline(breakdown)
    ends = timeline.start_s + timeline.duration_s
    assert np.allclose(timeline.start_s[1:], ends[:-1])
    assert ends[-1] == pytest.approx(sum(breakdown.values()))
    assert timeline.names[1] == "steady 1F1B"
