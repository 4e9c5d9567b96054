"""Small scenario dicts for the step-time tests (plain data, edited per test)."""

from __future__ import annotations

import copy

GPT_SMALL = {
    "version": 1,
    "name": "gpt-small",
    "cluster": {"generator": "rail-optimized", "server": "dgx-a100", "nodes": 4},
    "job": {
        "model": {"layers": 8, "hidden": 2048, "heads": 16, "vocab": 51200, "seq_len": 2048},
        "global_batch": 64,
        "micro_batch": 2,
        "parallel": {"tp": 8, "pp": 1, "dp": 4},
        "recompute": "selective",
        "precision": "bf16",
        "zero": 1,
    },
}


def scenario_dict(**job_overrides) -> dict:
    """A deep copy of ``GPT_SMALL`` with ``job`` keys (or ``cluster=`` / ``what_if=``) replaced."""
    data = copy.deepcopy(GPT_SMALL)
    for key, value in job_overrides.items():
        if key in ("cluster", "what_if"):
            data.setdefault(key, {}).update(value)
        elif key in ("parallel", "model"):
            data["job"][key].update(value)
        else:
            data["job"][key] = value
    return data
