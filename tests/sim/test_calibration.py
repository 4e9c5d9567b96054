"""The step-time model against every published measurement in the shared calibration set."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from scenarios.sim import parse_scenario, predict
from scenarios.sim.flops import model_flops_per_step

CALIBRATION_DIR = Path("/work/shared/calibration")
ENTRIES = [
    entry
    for path in sorted(CALIBRATION_DIR.glob("*.yaml"))
    for entry in (yaml.safe_load(path.read_text(encoding="utf-8")).get("scenarios") or [])
]
pytestmark = pytest.mark.skipif(not ENTRIES, reason="no calibration set at /work/shared")


def _measured_step_time_s(scenario, measured) -> float:
    if "step_time_s" in measured:
        return float(measured["step_time_s"])
    flops = float(model_flops_per_step(scenario.job.model, scenario.job.global_batch))
    return flops / (measured["model_tflops_per_gpu"] * 1e12 * scenario.job.parallel.gpus)


@pytest.fixture(scope="module")
def errors(catalog):
    out = {}
    for entry in ENTRIES:
        scenario = parse_scenario(entry)
        result = predict(scenario, catalog=catalog)
        measured = entry["measured"]
        out[scenario.name] = (
            result,
            result.step_time_s / _measured_step_time_s(scenario, measured) - 1.0,
            measured,
        )
    return out


def test_calibration_covers_every_published_row(errors):
    assert len(errors) == len(ENTRIES) >= 19


def test_calibration_step_time_median_within_10_and_max_within_20_percent(errors):
    absolute = np.abs([error for _, error, _ in errors.values()])
    table = ", ".join(f"{name} {error:+.1%}" for name, (_, error, _) in errors.items())
    assert np.median(absolute) <= 0.10, table
    assert absolute.max() <= 0.20, table


def test_calibration_mfu_where_published(errors):
    published = [(r, m) for r, _, m in errors.values() if "mfu" in m]
    assert published
    for result, measured in published:
        assert result.mfu == pytest.approx(measured["mfu"], rel=0.10)
