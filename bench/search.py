"""Layout-search throughput (candidates per second), fabric prebuilt.

Usage: ``.venv/bin/python bench/search.py``. Target (issue 11): >= 150,000 candidates/s on the
8,192-GPU case.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from step_time import llama_like  # noqa: E402  (bench/ is on sys.path when run as a script)

from scenarios.sim import build_fabric, load_scenarios, parse_scenario, search_layouts  # noqa: E402
from scenarios.sim.calibration import fitted_dir  # noqa: E402
from topology.fabric.specs import load_catalog  # noqa: E402


def cases():
    yield parse_scenario(llama_like(256))  # 2,048 H100
    yield parse_scenario(llama_like(1024))  # 8,192 H100 (the Llama 3 Table 4 cluster)
    table1 = fitted_dir() / "megatron-sc21-table1.yaml"
    if table1.exists():
        yield load_scenarios(table1)[-1]  # GPT 1T on 3,072 A100


def main() -> None:
    catalog = load_catalog()
    for scenario in cases():
        fabric = build_fabric(scenario, catalog)
        start = time.perf_counter()
        result = search_layouts(scenario, catalog=catalog, fabric=fabric, top_k=5)
        elapsed = time.perf_counter() - start
        best = result.best[0] if result.best else None
        layout = (
            f"tp{best['tp']} pp{best['pp']} dp{best['dp']} cp{best['cp']} "
            f"vpp{best['vpp']} mb{best['micro_batch']} {best['recompute']} "
            f"zero{best['zero']} -> {best['step_time_s']:.2f} s"
            if best
            else "none"
        )
        print(
            f"{scenario.name:28s} {result.candidates:>9,} candidates ({result.valid:,} valid) "
            f"in {elapsed:6.2f} s = {result.candidates / elapsed:>10,.0f}/s; best {layout}"
        )


if __name__ == "__main__":
    main()
