"""Compare the step-time model with every published measurement in the calibration set.

Usage: ``.venv/bin/python bench/calibration.py [--dir /work/shared/calibration]``

Prints one row per scenario (predicted vs measured step time, MFU where published) and the
median / maximum absolute step-time error. Rows publishing only throughput (Llama 3) are
compared through the step time implied by the measured model TFLOP/s per GPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenarios.sim import parse_scenario, predict
from scenarios.sim.flops import model_flops_per_step
from topology.fabric.specs import load_catalog

DEFAULT_DIR = Path("/work/shared/calibration")


def measured_step_time_s(scenario, measured: dict) -> float:
    """The measured step time, or the one implied by a published model TFLOP/s per GPU."""
    if "step_time_s" in measured:
        return float(measured["step_time_s"])
    flops = float(model_flops_per_step(scenario.job.model, scenario.job.global_batch))
    return flops / (measured["model_tflops_per_gpu"] * 1e12 * scenario.job.parallel.gpus)


def calibration_rows(directory: Path, catalog) -> list[dict]:
    """Predict every calibration scenario; one dict per row with the errors."""
    rows = []
    for path in sorted(directory.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for entry in data.get("scenarios") or []:
            scenario = parse_scenario(entry)
            measured = entry.get("measured") or {}
            result = predict(scenario, catalog=catalog)
            step = measured_step_time_s(scenario, measured)
            rows.append(
                {
                    "name": scenario.name,
                    "predicted_s": result.step_time_s,
                    "measured_s": step,
                    "error": result.step_time_s / step - 1.0,
                    "mfu": result.mfu,
                    "measured_mfu": measured.get("mfu"),
                    "result": result,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args()
    rows = calibration_rows(args.dir, load_catalog())
    print(
        f"{'scenario':30s} {'predicted s':>12s} {'measured s':>11s} {'error':>7s} "
        f"{'MFU':>6s} {'meas.':>6s}  largest terms"
    )
    for row in rows:
        mfu = f"{row['measured_mfu']:.3f}" if row["measured_mfu"] else "-"
        bd = row["result"].breakdown
        terms = sorted(bd, key=bd.get, reverse=True)[:3]
        share = ", ".join(f"{k} {bd[k] / row['predicted_s']:.0%}" for k in terms)
        print(
            f"{row['name']:30s} {row['predicted_s']:12.3f} {row['measured_s']:11.3f} "
            f"{row['error']:+7.1%} {row['mfu']:6.3f} {mfu:>6s}  {share}"
        )
    errors = np.abs([row["error"] for row in rows])
    print(
        f"\n{len(rows)} scenarios: median |error| {np.median(errors):.1%}, "
        f"max |error| {errors.max():.1%} (targets: median <= 10%, max <= 20%)"
    )


if __name__ == "__main__":
    main()
