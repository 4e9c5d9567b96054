"""Compare the step-time model with every published measurement in the calibration set.

Usage: ``.venv/bin/python bench/calibration.py [--dir ../shared/calibration] [--no-loso]``

Prints one row per scenario (predicted vs measured step time, MFU where published) and the
median / maximum absolute step-time error, for the fitted set (the shared calibration
directory and ``docs/calibration/fitted``: rows for GPUs the shared set has none of) and the
held-out rows in ``docs/calibration`` (never used to fit the constants).
Rows publishing only throughput are compared through the step time implied by the measured
model TFLOP/s per GPU (or by tokens/s, derived in their file). Then **leave one source out**:
for each source family (the file a row comes from, ``-table*`` / ``-more`` suffixes folded),
the catalog's one fitted constant per GPU type (``gemm_max``) is refitted without that family's
rows and the family's median error is reported; a GPU type left with no fitted row takes the
refitted value of its sibling (``SIBLINGS``, the catalog's own carry-over rule for GPUs without a
measurement), else the mean of the refitted values.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenarios.sim import build_fabric, predict
from scenarios.sim.calibration import FITTED_EXTRA_DIR, HELD_OUT_DIR, fitted_dir, load_cases
from topology.fabric.specs import load_catalog

#: Search interval of ``gemm_max`` for the leave-one-source-out refits.
GEMM_MAX_RANGE = (0.40, 0.90)
#: The GPU whose constant a GPU without a measurement carries over (the catalog's
#: ``sources.efficiency``: same compute die, or the same Blackwell GPU in another system).
SIBLINGS = {"b200": "gb200", "gb200": "b200", "h200-sxm": "h100-sxm", "mi300x": "h100-sxm"}


def family(case) -> str:
    """Source family of a row: its file name without the table / continuation suffix."""
    stem = Path(case.source_file).stem
    return stem.split("-table")[0].removesuffix("-more")


def gpu_of(case, catalog) -> str:
    return case.scenario.what_if.gpu or catalog.server(case.scenario.effective_cluster().server).gpu


def with_gemm_max(catalog, values: dict[str, float]):
    """The catalog with the given GPUs' ``gemm_max`` replaced."""
    gpus = dict(catalog.gpus)
    for slug, value in values.items():
        gpus[slug] = dataclasses.replace(gpus[slug], efficiency={**gpus[slug].efficiency, "gemm_max": value})
    return dataclasses.replace(catalog, gpus=gpus)


class Rows:
    """Calibration cases with their fabrics built once (refits re-predict them many times)."""

    def __init__(self, cases, catalog):
        self.cases = list(cases)
        self.fabrics = [build_fabric(case.scenario, catalog) for case in self.cases]

    def errors(self, catalog, indices=None) -> np.ndarray:
        picked = range(len(self.cases)) if indices is None else indices
        return np.array(
            [
                predict(self.cases[i].scenario, catalog=catalog, fabric=self.fabrics[i]).step_time_s
                / self.cases[i].measured_step_time_s
                - 1.0
                for i in picked
            ]
        )


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


def refit_gemm_max(rows: Rows, indices, catalog, slug: str) -> float:
    """``gemm_max`` of one GPU type minimizing median + max/2 of |error| over the given rows
    (golden-section search; the error is monotone in the constant, the objective unimodal)."""

    def objective(value):
        errors = np.abs(rows.errors(with_gemm_max(catalog, {slug: value}), indices))
        return float(np.median(errors) + errors.max() / 2.0)

    lo, hi = GEMM_MAX_RANGE
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = objective(a), objective(b)
    for _ in range(14):
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = objective(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = objective(b)
    return round((lo + hi) / 2.0, 4)


def leave_one_source_out(catalog, fitted_cases, held_out_cases) -> dict[str, float]:
    """Median |error| of each source family when it is left out of the ``gemm_max`` fit."""
    cases = fitted_cases + held_out_cases
    rows = Rows(cases, catalog)
    n_fitted = len(fitted_cases)
    gpus = [gpu_of(case, catalog) for case in cases]
    out = {}
    for name in sorted({family(case) for case in cases}):
        train = [i for i in range(n_fitted) if family(cases[i]) != name]
        fitted = {}
        for slug in sorted({gpus[i] for i in train}):
            fitted[slug] = refit_gemm_max(rows, [i for i in train if gpus[i] == slug], catalog, slug)
        test = [i for i, case in enumerate(cases) if family(case) == name]
        orphans = {gpus[i] for i in test} - set(fitted)
        mean = float(np.mean(list(fitted.values())))
        carried = {slug: fitted.get(SIBLINGS.get(slug), mean) for slug in orphans}
        refitted = with_gemm_max(catalog, {**fitted, **carried})
        errors = np.abs(rows.errors(refitted, test))
        kind = "held out" if all(i >= n_fitted for i in test) else "fitted"
        print(
            f"  {name:24s} ({kind}, {len(test)} rows): median |error| {np.median(errors):6.1%}, "
            f"max {errors.max():6.1%}; gemm_max refitted without it: "
            + ", ".join(f"{k} {v:.3f}" for k, v in {**fitted, **carried}.items())
        )
        out[name] = float(np.median(errors))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=fitted_dir(), help="the fitted calibration set")
    parser.add_argument("--no-loso", action="store_true", help="skip leave-one-source-out (slow)")
    args = parser.parse_args()
    catalog = load_catalog()
    fitted_rows = calibration_rows(args.dir, catalog) + calibration_rows(FITTED_EXTRA_DIR, catalog)
    print_table(f"fitted set ({args.dir} + {FITTED_EXTRA_DIR})", fitted_rows)
    print_table(f"held out ({HELD_OUT_DIR})", calibration_rows(HELD_OUT_DIR, catalog))
    if not args.no_loso:
        print("== leave one source out (goal: no family worse than 8 % median)")
        fitted = load_cases(args.dir) + load_cases(FITTED_EXTRA_DIR)
        worst = leave_one_source_out(catalog, fitted, load_cases(HELD_OUT_DIR))
        by_family = defaultdict(float, worst)
        name = max(by_family, key=by_family.get)
        print(f"worst family: {name} {by_family[name]:.1%}")


if __name__ == "__main__":
    main()
