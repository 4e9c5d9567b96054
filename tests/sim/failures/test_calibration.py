"""The failure model against published interruption counts (../shared/calibration)."""

from __future__ import annotations

import math

import pytest
import yaml

from scenarios.sim.calibration import fitted_dir
from scenarios.sim.failures import (
    failure_components,
    simulate_failures,
)
from scenarios.sim.format.failures import parse_failures
from tests.sim._calibration import need_calibration
from tests.sim.failures._helpers import (
    design,
    small_model,
)

pytestmark = pytest.mark.slow

# --- calibration ----------------------------------------------------------------------------


def test_calibration_llama3_interruptions_54_days_on_16384_h100():
    """Catalog rates derived from Dubey et al. 2024 Table 5 reproduce its counts."""
    path = fitted_dir() / "llama3-interruptions.yaml"
    need_calibration(path)
    from scipy.stats import chi2

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    plan, fabric, catalog = design(data["servers"], server="dgx-h100")
    assert plan.n_gpus == data["gpus"]
    model = failure_components(plan, fabric, None, catalog)
    failure_spec = parse_failures(
        {"trials": 400, "window_days": data["days"], "seed": 5, "checkpoint": {"save_s": 20}, "reload_s": 30}
    )
    result = simulate_failures(model, failure_spec, step_time_s=10.0)
    observed = data["unexpected_interruptions"]
    mean = result.interruptions["total"]
    assert abs(mean - observed) <= 2 * math.sqrt(observed)
    counts: dict[str, int] = {}
    for row in data["unexpected_by_component"]:
        counts[row["category"]] = counts.get(row["category"], 0) + row["count"]
    assert sum(counts.values()) == observed
    for category, count in counts.items():
        low, high = chi2.ppf(0.025, 2 * count) / 2, chi2.ppf(0.975, 2 * count + 2) / 2  # Garwood 95%
        assert low <= result.interruptions["by_category"][category] <= high, category


def test_the_sweep_reaches_a_fixed_interval_far_from_the_optimum():
    """A 6-hour interval against a Young/Daly optimum of minutes: the sweep still spans both, so
    the page draws the run's own interval on the curve."""
    model = small_model()
    spec = parse_failures(
        {"trials": 200, "window_days": 20, "checkpoint": {"interval_min": 360, "save_s": 5}}
        | {"rates": {"server_per_1000_node_days": 400}, "reload_s": 60}
    )
    result = simulate_failures(model, spec, step_time_s=5.0).to_dict()
    intervals = [row["interval_min"] for row in result["checkpoint_sweep"]]
    assert intervals == sorted(intervals)
    assert intervals[0] <= result["optimal_checkpoint_interval_min"] < 360
    assert 360 in [pytest.approx(v) for v in intervals] and intervals[-1] == pytest.approx(720)
