"""Time one prediction on a Llama-3-405B-like job, fabric generation and routing included.

Usage: ``.venv/bin/python bench/step_time.py``. Targets: 16,384 GPUs < 1 s; 131,072 GPUs
< 10 s and < 4 GiB peak RSS. Each size runs in a fresh process so the RSS figure is its own.
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
    result = predict(scenario, catalog=catalog)
    elapsed = time.perf_counter() - start
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return {
        "gpus": result.gpus,
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
            f"{row['seconds']:.2f} s, peak RSS {row['rss_gib']:.2f} GiB, {row['links']:,} links; "
            f"step {row['step_time_s']:.2f} s, MFU {row['mfu']:.1%}"
        )


if __name__ == "__main__":
    main()
