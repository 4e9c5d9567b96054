"""The power: section of the scenario format and its checks (scenarios/sim/format/power.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scenarios.sim.format.power import check_power
from scenarios.sim.power import (
    PowerError,
    parse_power,
)

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
        defaults = parse_power(None)
        floor = replace(defaults, gpu=replace(defaults.gpu, floor_fraction=1.2))
        check_power(floor, tdp_w=700.0, idle_w=70.0)
    with pytest.raises(
        PowerError, match=r"floor_fraction x TDP \(0\.9 x 700 = 630 W\) must be at most cap_w \(500 W\)"
    ):
        check_power(parse_power({"gpu": {"floor_fraction": 0.9, "cap_w": 500}}), tdp_w=700.0, idle_w=70.0)
