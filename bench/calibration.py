"""Compare the step-time model with every published measurement in the calibration set.

Usage: ``.venv/bin/python bench/calibration.py [--dir ../shared/calibration]``

Prints one row per scenario (predicted vs measured step time, MFU where published) and the
median / maximum absolute step-time error. Rows publishing only throughput (Llama 3) are
compared through the step time implied by the measured model TFLOP/s per GPU. The held-out
rows in ``docs/calibration`` (not used to fit the constants) are printed as a second table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenarios.sim import predict
from scenarios.sim.calibration import HELD_OUT_DIR, fitted_dir, load_cases
from topology.fabric.specs import load_catalog


def calibration_rows(directory: Path, catalog) -> list[dict]:
    """Predict every calibration scenario of a directory; one dict per row with the errors."""
    rows = []
    for case in load_cases(directory):
        result = predict(case.scenario, catalog=catalog)
        step = case.measured_step_time_s
        rows.append(
            {
                "name": case.scenario.name,
                "predicted_s": result.step_time_s,
                "measured_s": step,
                "error": result.step_time_s / step - 1.0,
                "mfu": result.mfu,
                "measured_mfu": case.measured.get("mfu"),
                "result": result,
            }
        )
    return rows


def print_table(title: str, rows: list[dict]) -> None:
    """One row per scenario, then the median / max absolute step-time error."""
    print(f"== {title}")
    print(
        f"{'scenario':32s} {'predicted s':>12s} {'measured s':>11s} {'error':>7s} "
        f"{'MFU':>6s} {'meas.':>6s}  largest terms"
    )
    for row in rows:
        mfu = f"{row['measured_mfu']:.3f}" if row["measured_mfu"] else "-"
        bd = row["result"].breakdown
        terms = sorted(bd, key=bd.get, reverse=True)[:3]
        share = ", ".join(f"{k} {bd[k] / row['predicted_s']:.0%}" for k in terms)
        print(
            f"{row['name']:32s} {row['predicted_s']:12.3f} {row['measured_s']:11.3f} "
            f"{row['error']:+7.1%} {row['mfu']:6.3f} {mfu:>6s}  {share}"
        )
    errors = np.abs([row["error"] for row in rows])
    print(
        f"{len(rows)} scenarios: median |error| {np.median(errors):.1%}, "
        f"max |error| {errors.max():.1%} (targets: median <= 10%, max <= 20%)\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=fitted_dir(), help="the fitted calibration set")
    args = parser.parse_args()
    catalog = load_catalog()
    print_table(f"fitted set ({args.dir})", calibration_rows(args.dir, catalog))
    print_table(f"held out ({HELD_OUT_DIR})", calibration_rows(HELD_OUT_DIR, catalog))


if __name__ == "__main__":
    main()
