"""Builders shared by the failure tests: a small design and its model, specs with quiet rates, one
injected run, a deliberately naive one-trial reference and a Llama 3 405B job."""

from __future__ import annotations

import math
from collections import Counter
from functools import cache

from scenarios.sim.failures import (
    checkpoint_size,
    failure_components,
    simulate_failures,
)
from scenarios.sim.format.failures import parse_failures
from scenarios.sim.format.scenario import parse_scenario
from topology.fabric.compiled import compile_plan
from topology.fabric.generators import generate
from topology.fabric.specs import load_catalog

HOUR = 3600.0


#: Rates that keep the closed form and the MTTF finite without mattering to injected schedules.
QUIET = {"software_per_day": 1.0, "maintenance_per_day": 1.0, "planned_per_day": 1.0}


@cache
def design(nodes: int = 64, generator: str = "rail-optimized", server: str = "dgx-a100"):
    catalog = load_catalog()
    plan = generate(generator, catalog=catalog, server=server, nodes=nodes)
    return plan, compile_plan(plan), catalog


@cache
def small_model():
    plan, fabric, catalog = design()
    return failure_components(plan, fabric, None, catalog)


def spec(**overrides):
    data = {
        "trials": 1,
        "checkpoint": {"interval_min": 60, "save_s": 60},
        "reload_s": 30,
        "detection_s": 60,
        "restart_min": 10,
        "spare_servers": 0,
        "rates": dict(QUIET),
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return parse_failures(data)


def run(events, *, work_h=3.0, step_time_s=1.0, model=None, degraded=None, **overrides):
    return simulate_failures(
        model or small_model(),
        spec(**overrides),
        step_time_s=step_time_s,
        degraded_step_time_s=degraded,
        job_work_s=None if "window_days" in overrides else work_h * HOUR,
        injected=events,
    )


# --- a naive reference ---------------------------------------------------------------------
# One trial at a time, one event at a time: it walks the timeline with explicit checkpoint
# starts, pauses, durability points, repairs and recoveries (a plain discrete-event loop), where
# the vectorized engine uses closed-form cycles between failures. Slow, scalar, for tests only.

REMOVE_DELAY = {
    "gpu": "repair_hours",
    "hbm": "repair_hours",
    "host": "repair_hours",
    "nic": "repair_hours",
    "psu": "repair_hours",
    "maintenance": "repair_hours",
    "nic_link": "link_repair_hours",
    "leaf": "switch_repair_hours",
}
DEGRADE_DELAY = {
    "spine": "switch_repair_hours",
    "core": "switch_repair_hours",
    "fabric_link": "link_repair_hours",
}
CATEGORY = {
    "gpu": "gpu",
    "hbm": "gpu",
    "host": "host",
    "nic": "host",
    "psu": "host",
    "nic_link": "network",
    "leaf": "network",
    "software": "software",
    "maintenance": "maintenance",
}


def reference_trial(model, spec, events, *, step_time_s, degraded, work_s, interval_s, save_s, reload_s):
    """Simulate one trial of injected ``events`` (InjectedEvent list); returns a dict of totals."""
    horizon = spec.window_s if work_s is None else max(10.0 * work_s, work_s + 30 * 86_400.0)
    blocking = not spec.checkpoint.async_save
    detection, restart = spec.detection_s, spec.restart_min * 60.0
    pool_size = spec.spares(model.n_job_nodes) + model.idle_nodes
    hours = lambda name: getattr(spec, name) * 3600.0  # noqa: E731
    rate_of = {kind: step_time_s / degraded.get(kind, step_time_s) for kind in DEGRADE_DELAY}
    events = sorted(events, key=lambda e: e.time_s)
    acc = Counter()
    counts = Counter()
    t = w = durable_w = compute_wall = durable_cw = u = 0.0
    phase, pause_end, inflight, restart_at, recovery = "compute", None, None, None, None
    pool: list[list[float]] = []
    degraded_until = dict.fromkeys(DEGRADE_DELAY, -1.0)
    feed_until: dict[int, float] = {}
    finish = None
    k = 0

    def rate(at):
        r = 1.0
        for kind, until in degraded_until.items():
            if until > at:
                r = min(r, rate_of[kind])
        return r

    def close_recovery(until):
        start, wait, planned_total = recovery
        elapsed = max(min(until, restart_at) - start, 0.0)
        if planned_total is not None:
            acc["planned"] += elapsed
            return
        acc["detection"] += min(elapsed, detection)
        acc["wait"] += min(max(elapsed - detection, 0.0), wait)
        acc["restart"] += min(max(elapsed - detection - wait, 0.0), restart)
        acc["reload"] += min(max(elapsed - detection - wait - restart, 0.0), reload_s)

    def stop(at, category):
        nonlocal w, u, inflight, phase, restart_at, recovery, durable_cw
        pool[:] = [entry for entry in pool if entry[0] > at]
        deficit = sum(entry[1] for entry in pool) - pool_size
        ready = at
        if deficit > 0:
            returned = 0
            ready = math.inf
            for when, count in sorted(pool):
                returned += count
                if returned >= deficit:
                    ready = when
                    break
        if phase in ("compute", "pause"):
            acc["rework"] += compute_wall - durable_cw
            w, u, inflight, durable_cw = durable_w, 0.0, None, compute_wall
        elif phase == "down":
            close_recovery(at)
        wait = max(ready - (at + detection), 0.0)
        recovery = (at, wait, None)
        restart_at = at + detection + wait + restart + reload_s
        phase = "down"
        counts[category] += 1

    while True:
        next_event = events[k].time_s if k < len(events) else math.inf
        candidates = [next_event, horizon]
        if phase == "compute":
            r = rate(t)
            candidates.append(t + (interval_s - u) / r)
            if work_s is not None:
                candidates.append(t + (work_s - w) / r)
            candidates += [until for until in degraded_until.values() if until > t]
        if phase == "pause":
            candidates.append(pause_end)
        if inflight is not None:
            candidates.append(inflight[0])
        if phase == "down":
            candidates.append(restart_at)
        now = min(candidates)
        dt = now - t
        if phase == "compute":
            r = rate(t)
            w += dt * r
            u += dt * r
            compute_wall += dt
        elif phase == "pause":
            acc["save"] += dt
        t = now
        if inflight is not None and inflight[0] <= t:
            durable_w, durable_cw, inflight = inflight[1], inflight[2], None
        if phase == "pause" and pause_end <= t:
            phase = "compute"
        if phase == "down" and restart_at <= t:
            close_recovery(restart_at)
            phase = "compute"
        if phase == "compute" and work_s is not None and w >= work_s * (1 - 1e-12):
            finish = t
            break
        if phase == "compute" and u >= interval_s * (1 - 1e-12):
            inflight, u = (t + save_s, w, compute_wall), 0.0
            if blocking:
                phase, pause_end = "pause", t + save_s
        if t >= horizon:
            if phase == "down":
                close_recovery(horizon)
            break
        if next_event <= t:
            event = events[k]
            k += 1
            kind = event.kind
            if kind == "planned":
                if phase in ("compute", "pause"):
                    durable_w, durable_cw, inflight, u = w, compute_wall, None, 0.0
                    total = save_s + restart + reload_s
                    recovery = (t, 0.0, total)
                    restart_at = t + total
                    phase = "down"
                    counts["planned"] += 1
            elif kind in DEGRADE_DELAY:
                degraded_until[kind] = max(degraded_until[kind], t + hours(DEGRADE_DELAY[kind]))
                counts["degradations"] += 1
            elif kind == "feed":
                row = int(model.member_feed[model.member_index("feed", event.component)])
                if feed_until.get(row, -1.0) > t:
                    continue
                feed_until[row] = t + hours("feed_repair_hours")
                lost, any_down = 0, False
                for rack in model.feed_racks[row]:
                    if rack < 0:
                        continue
                    down = [
                        until
                        for r, until in feed_until.items()
                        if until > t and rack in set(model.feed_racks[r].tolist())
                    ]
                    if len(down) == model.rack_n_feeds[rack]:
                        any_down = True
                        back = min(down)
                        lost += int(model.rack_removes[rack])
                        if model.rack_removes[rack]:
                            pool.append([back, int(model.rack_removes[rack])])
                        for d, kind_d in enumerate(DEGRADE_DELAY):
                            if model.rack_degrades[rack, d]:
                                degraded_until[kind_d] = max(degraded_until[kind_d], back)
                if any_down and lost:
                    stop(t, "power")
                else:
                    counts["degradations" if any_down else "feed_faults_absorbed"] += 1
            else:
                removes = 0
                if kind == "leaf":
                    removes = int(model.member_removes[model.member_index("leaf", event.component)])
                elif kind in REMOVE_DELAY:
                    removes = 1
                if removes:
                    pool.append([t + hours(REMOVE_DELAY[kind]), removes])
                stop(t, CATEGORY[kind])
    wall = finish if finish is not None else horizon
    goodput = work_s if finish is not None else w
    return {
        "wall_s": wall,
        "goodput_s": goodput,
        "compute_s": compute_wall,
        **{key: acc[key] for key in ("rework", "save", "detection", "wait", "restart", "reload", "planned")},
        "counts": dict(counts),
    }


# --- the Monte Carlo ----------------------------------------------------------------------------


def random_run_kwargs(**overrides):
    data = {"trials": 1800, "window_days": 20, "seed": 7, "spare_servers": 2, "rates": {}}
    data.update(overrides)
    return parse_failures(data), {"step_time_s": 5.0, "degraded_step_time_s": 5.5, "checkpoint": sized()}


@cache
def sized():
    return checkpoint_size(llama_job())


def llama_job():
    """Llama 3 405B (Dubey et al. 2024) with tp 8, pp 16, dp 4 on 64 DGX H100."""
    model = {"layers": 126, "hidden": 16384, "ffn_hidden": 53248, "heads": 128, "kv_heads": 8}
    model |= {"vocab": 128256, "seq_len": 8192}
    scenario = parse_scenario(
        {
            "cluster": {"generator": "rail-optimized", "server": "dgx-h100", "nodes": 64},
            "job": {
                "model": model,
                "global_batch": 64,
                "micro_batch": 1,
                "parallel": {"tp": 8, "pp": 16, "dp": 4},
                "zero": 1,
            },
        }
    )
    return scenario.job
