"""Power inputs from a design and a timeline (scenarios/sim/power/inputs.py)."""

from __future__ import annotations

import numpy as np
import pytest

from scenarios.sim.power import (
    PowerError,
    job_events,
    phase_levels_w,
    simulate_power,
)
from scenarios.sim.step.pipeline import PHASE_CODES, StageTimeline
from tests.sim.power._helpers import (
    levels,
    make_inputs,
    timeline,
)


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
