"""Benchmark: generate, compile and route rail-optimized fabrics.

Prints, for 2,048 DGX H100 nodes (16,384 GPUs) and 16,384 nodes (131,072 GPUs): generate and
compile time, hash-ECMP routing of 1M random flows, spread-ECMP link loads of 1M flows (the
aggregated path), spread incidence of 10k flows, and the process's peak RSS.

    .venv/bin/python bench/fabric_compile.py [--flows 1000000] [--nodes 2048 16384]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from topology.fabric.compiled import compile_plan
from topology.fabric.generators import generate
from topology.fabric.specs import load_catalog


def _timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux reports KiB


def bench(nodes: int, n_flows: int, n_spread: int) -> None:
    catalog = load_catalog()
    plan, generate_s = _timed(generate, "rail-optimized", catalog=catalog, server="dgx-h100", nodes=nodes)
    fabric, compile_s = _timed(compile_plan, plan)
    summary = plan.summary()
    print(
        f"{nodes:>6} nodes {plan.n_gpus:>7} GPUs  switch {plan.params['switch']}, {summary['tiers']} tiers, "
        f"{sum(summary['switches'].values())} switches, {fabric.n_links} links"
    )
    print(f"  generate {generate_s * 1e3:8.1f} ms   compile {compile_s * 1e3:8.1f} ms")
    rng = np.random.default_rng(0)
    src = rng.integers(0, fabric.n_gpus, n_flows)
    dst = rng.integers(0, fabric.n_gpus, n_flows)
    routes, hash_s = _timed(fabric.route, src, dst, ecmp="hash")
    print(f"  route hash   {n_flows:>9,} flows {hash_s:7.3f} s   nnz {routes.incidence.nnz:,}")
    del routes
    _, load_s = _timed(fabric.link_load_gbps, src, dst, 1.0, ecmp="spread")
    print(f"  load spread  {n_flows:>9,} flows {load_s:7.3f} s   (aggregated, no incidence)")
    routes, spread_s = _timed(fabric.route, src[:n_spread], dst[:n_spread], ecmp="spread")
    print(f"  route spread {n_spread:>9,} flows {spread_s:7.3f} s   nnz {routes.incidence.nnz:,}")
    print(f"  peak RSS so far {_peak_rss_mib():.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=1_000_000)
    parser.add_argument("--spread-flows", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, nargs="+", default=[2048, 16384])
    args = parser.parse_args()
    for nodes in args.nodes:
        bench(nodes, args.flows, args.spread_flows)


if __name__ == "__main__":
    main()
