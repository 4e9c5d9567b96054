"""Published measurements to check the step-time model against (pure; used by the calibration
test and ``bench/calibration.py``).

A calibration file is a scenario list in the scenario format, each entry with a ``measured``
block: ``step_time_s``, or ``model_tflops_per_gpu`` (then the step time it implies is compared)
and optionally ``mfu``. The fitted set is ``shared/calibration`` beside the repository (see
``fitted_dir``); held-out rows the constants were not fitted to live in
``docs/calibration``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from scenarios.sim.format.scenario import Scenario, parse_scenario
from scenarios.sim.step.flops import model_flops_per_step

REPO_ROOT = Path(__file__).resolve().parents[2]
HELD_OUT_DIR = REPO_ROOT / "docs" / "calibration"
#: Fitted rows the project adds for GPU types the shared set has no row of (B200).
FITTED_EXTRA_DIR = HELD_OUT_DIR / "fitted"
#: The step-time model's stated uncertainty: the largest held-out step-time error
#: ``bench/calibration.py`` prints (10.7 %, the NeMo 405B fp8 row on 1,024 H100), rounded up. A
#: layout the search prefers by less than this, without a saving the breakdown shows, is not a
#: finding.
STATED_UNCERTAINTY = 0.11


def fitted_dir() -> Path:
    """The shared calibration set: ``TWIN_CALIBRATION_DIR`` when set, else ``shared/calibration``
    beside the repository (how the team's machines lay it out)."""
    configured = os.environ.get("TWIN_CALIBRATION_DIR")
    if configured:
        return Path(configured)
    return REPO_ROOT.parent / "shared" / "calibration"


@dataclass(frozen=True)
class CalibrationCase:
    """One published run: the scenario and what was measured."""

    scenario: Scenario
    measured: dict[str, Any]
    source_file: str

    @property
    def measured_step_time_s(self) -> float:
        """The measured step time, or the one implied by a published model TFLOP/s per GPU."""
        if "step_time_s" in self.measured:
            return float(self.measured["step_time_s"])
        job = self.scenario.job
        flops = float(model_flops_per_step(job.model, job.global_batch))
        return flops / (self.measured["model_tflops_per_gpu"] * 1e12 * job.parallel.gpus)


def load_cases(directory: Path) -> list[CalibrationCase]:
    """Every scenario with a ``measured`` block in the directory's YAML files (sorted by file)."""
    cases = []
    for path in sorted(Path(directory).glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for entry in data.get("scenarios") or []:
            cases.append(CalibrationCase(parse_scenario(entry), dict(entry["measured"]), path.name))
    return cases
