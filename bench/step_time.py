"""Time one prediction on a Llama-3-405B-like job, fabric generation and routing included.

Usage: ``.venv/bin/python bench/step_time.py``. Targets (issue 11): 16,384 GPUs <= 0.25 s;
131,072 GPUs <= 1 s and <= 1 GiB peak RSS. Each size runs in a fresh process so the RSS figure is
its own. The modules a prediction imports lazily (fabric generators, compiler, routing, scipy)
are imported before the clock starts and their one-off cost per process is printed apart: a
worker pays it once, not per prediction. The prediction itself is timed twice, the first call
(cold caches) and the second (what a warm worker pays).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES_NODES = (2048, 16384)  # 16,384 and 131,072 GPUs of DGX H100


def llama_like(nodes: int) -> dict:
    """Llama 3 405B (Dubey et al. 2024) with tp 8, pp 16 and dp filling the cluster."""
    dp = nodes * 8 // (8 * 16)
    return {
        "version": 1,
        "name": f"llama3-405b-{nodes * 8}gpu",
        "cluster": {"generator": "rail-optimized", "server": "dgx-h100", "nodes": nodes},
        "job": {
            "model": {
                "layers": 126,
                "hidden": 16384,
                "ffn_hidden": 53248,
                "heads": 128,
                "kv_heads": 8,
                "vocab": 128256,
                "seq_len": 8192,
            },
            "global_batch": 16 * dp,
            "micro_batch": 1,
            "parallel": {"tp": 8, "pp": 16, "dp": dp, "vpp": 8},
            "recompute": "none",
            "precision": "bf16",
            "zero": 2,
            "tokens": 15.6e12,
        },
        "what_if": {"straggler_spread": 0.02, "steps": 16},
    }


def run_one(nodes: int) -> dict:
    from scenarios.sim import parse_scenario, predict
    from topology.fabric.specs import load_catalog

    catalog = load_catalog()
    scenario = parse_scenario(llama_like(nodes))
    start = time.perf_counter()
    import topology.fabric.compiled
    import topology.fabric.generators  # noqa: F401

    imports = time.perf_counter() - start
    start = time.perf_counter()
    result = predict(scenario, catalog=catalog)
    elapsed = time.perf_counter() - start
    start = time.perf_counter()
    predict(scenario, catalog=catalog)
    again = time.perf_counter() - start
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return {
        "gpus": result.gpus,
        "imports_s": imports,
        "again_s": again,
        "seconds": elapsed,
        "rss_gib": rss_gib,
        "step_time_s": result.step_time_s,
        "mfu": result.mfu,
        "links": int(result.link_utilization.size),
    }


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(run_one(int(sys.argv[2]))))
        return
    for nodes in SIZES_NODES:
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(nodes)], check=True, capture_output=True, text=True
        ).stdout
        row = json.loads(out.strip().splitlines()[-1])
        print(
            f"{row['gpus']:>8,} GPUs: predict (generate + compile + route + model) "
            f"{row['seconds']:.2f} s first, {row['again_s']:.2f} s again (imports once "
            f"{row['imports_s']:.2f} s), peak RSS {row['rss_gib']:.2f} GiB, {row['links']:,} links; "
            f"step {row['step_time_s']:.2f} s, MFU {row['mfu']:.1%}"
        )


if __name__ == "__main__":
    main()
