"""The failures: section of the scenario format (scenarios/sim/format/failures.py)."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from scenarios.sim.format.errors import ScenarioError
from scenarios.sim.format.failures import parse_failures

# --- parsing --------------------------------------------------------------------------------


def test_parse_failures_reads_the_documented_example():
    text = """
    failures:
      trials: 1000
      window_days: 54
      checkpoint: {interval_min: 30, save_s: 20, async: false}
      detection_s: 60
      restart_min: 10
      spare_servers: 16
      repair_hours: 48
      rates: {server_per_1000_node_days: 6.5}
      lemons: {fraction: 0.0, factor: 10, remove_after: 2}
      seed: 1
    """
    parsed = parse_failures(yaml.safe_load(textwrap.dedent(text))["failures"])
    assert parsed.trials == 1000 and parsed.window_days == 54 and parsed.seed == 1
    assert parsed.checkpoint.interval_min == 30 and parsed.checkpoint.save_s == 20
    assert parsed.rates.server_per_1000_node_days == 6.5
    assert parsed.rates.software_per_day == pytest.approx(63 / 54)
    assert parse_failures({"checkpoint": {"interval_min": "optimal"}}).checkpoint.interval_min is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"trials": 0}, "failures.trials: must be ≥ 1 (got 0)"),
        ({"trials": 100_001}, "failures.trials: must be ≤ 100,000 (got 100,001)"),
        ({"trials": 2.5}, "failures.trials: must be an integer (got 2.5)"),
        ({"spare_servers": 10**6}, "failures.spare_servers: must be ≤ 100,000"),
        ({"rates": {"software_per_day": -1}}, "failures.rates.software_per_day: must be ≥ 0"),
        ({"checkpoint": {"interval_min": 0}}, "failures.checkpoint.interval_min: must be > 0"),
        ({"checkpoint": {"async": "yes"}}, "failures.checkpoint.async: must be true or false"),
        ({"repair_hours": -2}, "failures.repair_hours: must be ≥ 0 (got -2)"),
        ({"window_days": 0}, "failures.window_days: must be > 0 (got 0)"),
        ({"lemons": {"fraction": 0.9}}, "failures.lemons.fraction: must be ≤ 0.5 (got 0.9)"),
        ({"weibull_shape": 0}, "failures.weibull_shape: must be ≥ 0.1 (got 0)"),
        ({"trails": 10}, "failures.trails: unknown field"),
        (
            {"checkpoint": {"interval_min": 1, "save_s": 120, "async": True}},
            "failures.checkpoint.save_s: an asynchronous save must fit in the interval",
        ),
    ],
)
def test_parse_failures_rejects_bad_input_naming_the_field_and_limit(data, message):
    with pytest.raises(ScenarioError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        parse_failures(data)
