"""Time the failure Monte Carlo on Llama-3-scale jobs (pure core, no database).

Usage: ``.venv/bin/python bench/failures.py [--workers N]``. Targets (2 shared cores): 10,000
trials of the 54-day 16,384-GPU window in < 5 s and < 2 GiB; 1,000 trials of a 30-day
(failure-free) 131,072-GPU job in < 10 s. Each case runs in a fresh process so its peak RSS is
its own; the fabric is built with ``generate`` + ``compile_plan`` on the seed catalog. Every
case is timed in one process, then split into ``N`` chunks of blocks on a process pool (how the
Celery run kind scales out) and merged; the merged result must equal the one-process result.
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

#: Failure-free step time of Llama 3 405B, derived: 6 x 405e9 parameters x 16M tokens per step /
#: (16,384 H100 x 400 TFLOP/s) ~ 6 s (Dubey et al. 2024: 16M-token batches, ~400 TFLOP/s per GPU).
STEP_TIME_S = 6.0
#: Degraded step times the benchmark passes in (assumed for timing only; the CLI computes them
#: with the step-time core on ``degraded_fabric``).
DEGRADED_STEP_TIME_S = {"spine": 6.3, "core": 6.2, "fabric_link": 6.05}

CASES = {
    "16k-window": {
        "nodes": 2048,
        "failures": {"trials": 10_000, "window_days": 54, "seed": 1, "checkpoint": {"interval_min": 30}},
        "target_s": 5.0,
    },
    "131k-job": {
        "nodes": 16_384,
        # 16 spares cannot cover ~100 servers in repair at once at this scale: 1% of the job is.
        "failures": {"trials": 1000, "seed": 1, "checkpoint": {"interval_min": 30}, "spare_servers": 164},
        "job_days": 30,
        "target_s": 10.0,
    },
}


def llama_job():
    """Llama 3 405B (Dubey et al. 2024) with ZeRO-1, for the checkpoint size."""
    from scenarios.sim import parse_scenario

    model = {"layers": 126, "hidden": 16384, "ffn_hidden": 53248, "heads": 128, "kv_heads": 8}
    model |= {"vocab": 128256, "seq_len": 8192}
    scenario = parse_scenario(
        {
            "cluster": {"generator": "rail-optimized", "server": "dgx-h100", "nodes": 2048},
            "job": {
                "model": model,
                "global_batch": 2048,
                "micro_batch": 1,
                "parallel": {"tp": 8, "pp": 16, "dp": 128},
                "zero": 1,
            },
        }
    )
    return scenario.job


_SHARED: dict = {}


def _chunk(blocks: range) -> dict:
    """One worker's share (the model and arguments come with the fork)."""
    from scenarios.sim.failures import run_failure_chunk

    return run_failure_chunk(_SHARED["model"], _SHARED["spec"], blocks=blocks, **_SHARED["kwargs"])


def run_parallel(model, spec, kwargs: dict, workers: int):
    """Chunks on a process pool, merged, with the event log: (result, seconds, peak child RSS)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from scenarios.sim.failures import attach_event_log, failure_blocks, merge_failure_chunks, split_blocks

    _SHARED.update(model=model, spec=spec, kwargs=kwargs)
    parts = split_blocks(failure_blocks(spec), workers)
    start = time.perf_counter()
    with ProcessPoolExecutor(len(parts), mp_context=multiprocessing.get_context("fork")) as pool:
        chunks = list(pool.map(_chunk, parts))
    result = attach_event_log(merge_failure_chunks(chunks), model, spec, **kwargs)
    elapsed = time.perf_counter() - start
    return result, elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20


def run_one(name: str, workers: int) -> dict:
    from scenarios.sim.failures import checkpoint_size, failure_components, simulate_failures
    from scenarios.sim.format.failures import parse_failures
    from topology.fabric.compiled import compile_plan
    from topology.fabric.generators import generate
    from topology.fabric.specs import load_catalog

    case = CASES[name]
    catalog = load_catalog()
    start = time.perf_counter()
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=case["nodes"])
    fabric = compile_plan(plan)
    model = failure_components(plan, fabric, None, catalog)
    build_s = time.perf_counter() - start
    spec = parse_failures(case["failures"])
    job_work_s = case["job_days"] * 86_400.0 if "job_days" in case else None
    kwargs = {
        "step_time_s": STEP_TIME_S,
        "degraded_step_time_s": DEGRADED_STEP_TIME_S,
        "job_work_s": job_work_s,
        "checkpoint": checkpoint_size(llama_job()),
    }
    start, cpu = time.perf_counter(), time.process_time()
    result = simulate_failures(model, spec, **kwargs)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    summary = result.to_dict()
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    parallel, parallel_s, child_gib = run_parallel(model, spec, kwargs, workers)
    if parallel.to_dict() != summary:
        raise AssertionError("the merged chunks differ from the one-process run")
    return {
        "case": name,
        "gpus": plan.n_gpus,
        "trials": spec.trials,
        "build_s": round(build_s, 2),
        "simulate_s": round(elapsed, 2),
        "cpu_s": round(cpu, 2),
        "target_s": case["target_s"],
        "peak_rss_gib": round(peak_gib, 3),
        "workers": workers,
        "parallel_s": round(parallel_s, 2),
        "parallel_peak_rss_gib": round(child_gib, 3),
        "etr": round(summary["etr"], 4),
        "closed_form_etr": round(summary["closed_form_etr"], 4),
        "interruptions": round(summary["interruptions"]["total"], 1),
        "wall_time_days_p50": round(summary["wall_time_days"]["p50"], 2),
        "mttf_hours": round(summary["mttf_hours"], 3),
        "optimal_interval_min": round(summary["optimal_checkpoint_interval_min"], 2),
    }


def main() -> None:
    args = sys.argv[1:]
    workers = 2
    if "--workers" in args:
        workers = int(args[args.index("--workers") + 1])
        del args[args.index("--workers") : args.index("--workers") + 2]
    if args:
        print(json.dumps(run_one(args[0], workers)))
        return
    for name in CASES:
        out = subprocess.run(
            [sys.executable, __file__, name, "--workers", str(workers)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        best = min(row["simulate_s"], row["parallel_s"])
        verdict = "ok" if best < row["target_s"] and row["peak_rss_gib"] < 2 else "SLOW"
        print(
            f"{row['case']:>10}: {row['gpus']:,} GPUs, {row['trials']:,} trials: "
            f"one process {row['simulate_s']} s (cpu {row['cpu_s']} s), "
            f"{row['workers']} workers {row['parallel_s']} s (target < {row['target_s']:g} s) {verdict}; "
            f"build {row['build_s']} s; "
            f"peak RSS {row['peak_rss_gib']} GiB (worker {row['parallel_peak_rss_gib']} GiB); "
            f"ETTR {row['etr']} (closed form {row['closed_form_etr']}); "
            f"{row['interruptions']} interruptions; MTTF {row['mttf_hours']} h; "
            f"p50 wall {row['wall_time_days_p50']} d; optimal interval {row['optimal_interval_min']} min"
        )


if __name__ == "__main__":
    main()
