"""Benchmark the communication model: fabric build, routing of every group, collective costs.

Run: ``.venv/bin/python bench/network.py [--gpus 16384 131072]``. Prints wall time per stage
and the peak resident memory of the process; no assertion (speed figures live here, not in
the unit tests).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenarios.sim.step.layout import build_layout
from scenarios.sim.step.network import comm_model
from scenarios.sim.step.stragglers import straggler_effect
from topology.fabric.compiled import compile_plan
from topology.fabric.generators import generate
from topology.fabric.specs import load_catalog

#: Llama-3-405B-like layout per scale (tp8 pp16, dp fills the cluster; ep carved from dp).
LAYOUTS = {"dense": {"tp": 8, "pp": 16}, "moe": {"tp": 8, "pp": 8, "ep": 8}}


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


def bench_one(n_gpus: int, shape: str, ecmp: str) -> dict[str, float]:
    catalog = load_catalog()
    nodes = n_gpus // 8
    timings = {}
    start = time.perf_counter()
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=nodes)
    fabric = compile_plan(plan)
    timings["generate+compile_s"] = time.perf_counter() - start
    degrees = LAYOUTS[shape]
    dp = n_gpus // (degrees["tp"] * degrees["pp"])
    t0 = time.perf_counter()
    layout = build_layout(dp=dp, n_gpus=n_gpus, **degrees)
    model = comm_model(fabric, layout, ecmp=ecmp)
    timings["comm_model_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    sizes = np.logspace(3, 10, 1000)
    for kind in ("tp", "pp", "dp", "ep"):
        for op in ("all_reduce", "reduce_scatter", "all_to_all", "p2p"):
            model.time_s(kind, op, sizes)
    util = model.link_utilization({"dp": {"reduce_scatter": 1.6e9, "all_gather": 1.6e9}, "pp": 4e8}, 10.0)
    timings["time_s+utilization_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    straggler_effect(fabric.gpu_node, compute_time_s=10.0, spread=0.02, n_steps=64, rng=0)
    timings["stragglers_64_steps_s"] = time.perf_counter() - t0
    timings["total_s"] = time.perf_counter() - start
    timings["max_link_util"] = float(util.max())
    timings["dp_busbw_gbytes_per_s"] = model.bw_gbytes_per_s["dp"]
    timings["peak_rss_gib"] = _peak_rss_gib()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, nargs="+", default=[16_384, 131_072])
    parser.add_argument("--shape", choices=sorted(LAYOUTS), default="dense")
    parser.add_argument("--ecmp", choices=("hash", "spread"), default="hash")
    args = parser.parse_args()
    for n_gpus in args.gpus:
        result = bench_one(n_gpus, args.shape, args.ecmp)
        cells = "  ".join(f"{key}={value:.3f}" for key, value in result.items())
        print(f"{n_gpus:>7} GPUs {args.shape:5} {args.ecmp:6} {cells}")


if __name__ == "__main__":
    main()
