"""Failures, recovery and checkpointing (scenarios/sim/failures*.py)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import replace
from functools import cache

import numpy as np
import pytest
import yaml

from scenarios.sim.calibration import fitted_dir
from scenarios.sim.failures import (
    BLOCK_TRIALS,
    InjectedEvent,
    block_generator,
    checkpoint_size,
    closed_form_etr,
    degraded_fabric,
    failure_blocks,
    failure_components,
    merge_failure_chunks,
    optimal_interval_s,
    run_failure_chunk,
    simulate_failures,
    split_blocks,
)
from scenarios.sim.format.errors import ScenarioError
from scenarios.sim.format.failures import parse_failures
from scenarios.sim.format.scenario import parse_scenario
from tests.sim._calibration import need_calibration
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


# --- parsing --------------------------------------------------------------------------------


def test_parse_failures_reads_the_documented_example():
    text = """
    failures:
      trials: 1000
      window_days: 54
      checkpoint: {interval_min: 30, save_s: 20, async: false}
      detection_s: 60
      restart_min: 10
      spare_servers: 16
      repair_hours: 48
      rates: {server_per_1000_node_days: 6.5}
      lemons: {fraction: 0.0, factor: 10, remove_after: 2}
      seed: 1
    """
    parsed = parse_failures(yaml.safe_load(textwrap.dedent(text))["failures"])
    assert parsed.trials == 1000 and parsed.window_days == 54 and parsed.seed == 1
    assert parsed.checkpoint.interval_min == 30 and parsed.checkpoint.save_s == 20
    assert parsed.rates.server_per_1000_node_days == 6.5
    assert parsed.rates.software_per_day == pytest.approx(63 / 54)
    assert parse_failures({"checkpoint": {"interval_min": "optimal"}}).checkpoint.interval_min is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"trials": 0}, "failures.trials: must be ≥ 1 (got 0)"),
        ({"trials": 100_001}, "failures.trials: must be ≤ 100,000 (got 100,001)"),
        ({"trials": 2.5}, "failures.trials: must be an integer (got 2.5)"),
        ({"spare_servers": 10**6}, "failures.spare_servers: must be ≤ 100,000"),
        ({"rates": {"software_per_day": -1}}, "failures.rates.software_per_day: must be ≥ 0"),
        ({"checkpoint": {"interval_min": 0}}, "failures.checkpoint.interval_min: must be > 0"),
        ({"checkpoint": {"async": "yes"}}, "failures.checkpoint.async: must be true or false"),
        ({"repair_hours": -2}, "failures.repair_hours: must be ≥ 0 (got -2)"),
        ({"window_days": 0}, "failures.window_days: must be > 0 (got 0)"),
        ({"lemons": {"fraction": 0.9}}, "failures.lemons.fraction: must be ≤ 0.5 (got 0.9)"),
        ({"weibull_shape": 0}, "failures.weibull_shape: must be ≥ 0.1 (got 0)"),
        ({"trails": 10}, "failures.trails: unknown field"),
        (
            {"checkpoint": {"interval_min": 1, "save_s": 120, "async": True}},
            "failures.checkpoint.save_s: an asynchronous save must fit in the interval",
        ),
    ],
)
def test_parse_failures_rejects_bad_input_naming_the_field_and_limit(data, message):
    with pytest.raises(ScenarioError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        parse_failures(data)


# --- components and blast radius --------------------------------------------------------------


def test_failure_components_count_only_what_the_job_uses():
    plan, fabric, catalog = design()
    su = plan.params["su_nodes"]
    one_su = failure_components(plan, fabric, np.arange(su), catalog)
    counts = one_su.counts()
    assert counts["gpu"] == counts["hbm"] == su * 8 and counts["host"] == su and counts["nic"] == su * 8
    assert counts["leaf"] == 8  # one rail-k leaf of one scalable unit per rail
    assert one_su.idle_nodes == 64 - su
    leaves = np.unique(fabric.nic_leaf[: su * 8])
    spines = np.unique(plan.link_b[np.isin(plan.link_a - plan.n_nic_ports, leaves)] - plan.n_nic_ports)
    racks = np.unique(
        np.concatenate([plan.node_rack[:su], plan.switch_rack[leaves], plan.switch_rack[spines]])
    )
    feeds = plan.feed_rack_feed[np.isin(plan.feed_rack_rack, racks)]
    assert counts["feed"] == np.unique(feeds).size == 2 * racks.size  # A and B per rack
    whole = small_model().counts()
    assert whole["leaf"] == 32 and whole["nic_link"] == 64 * 8


def test_blast_radius_leaf_fault_stops_exactly_the_servers_under_it():
    model = small_model()
    plan, _, _ = design()
    leaf = 8 * 2 + 3  # rail 3 of scalable unit 2
    su = plan.params["su_nodes"]
    assert plan.switch_rail[leaf] == 3 and plan.switch_group[leaf] == 2
    assert model.blast_radius("leaf", leaf).tolist() == list(range(2 * su, 3 * su))
    plan_ft, fabric_ft, catalog = design(32, "fat-tree")
    fat = failure_components(plan_ft, fabric_ft, None, catalog)
    nodes_on_leaf0 = np.unique(np.flatnonzero(fabric_ft.nic_leaf == 0) // 8)
    assert fat.blast_radius("leaf", 0).tolist() == nodes_on_leaf0.tolist()
    assert model.blast_radius("gpu", 8 * 5 + 2).tolist() == [5]
    assert model.blast_radius("spine", int(np.flatnonzero(plan.switch_tier == 1)[0])).size == 0


def test_leaf_fault_without_spares_waits_for_the_leaf_repair():
    leaf = 8 * 2 + 3
    result = run([InjectedEvent(1.5 * HOUR, "leaf", leaf)], switch_repair_hours=4)
    (entry,) = result.event_log
    assert entry["kind"] == "leaf" and entry["spares_left"] == -design()[0].params["su_nodes"]
    assert entry["downtime_s"] == pytest.approx(4 * HOUR + 600 + 30)  # wait for the leaf, restart, reload
    assert result.badput_s["spare_wait"] == pytest.approx(4 * HOUR - 60)
    su = design()[0].params["su_nodes"]
    with_spares = run([InjectedEvent(1.5 * HOUR, "leaf", leaf)], spare_servers=su, switch_repair_hours=4)
    assert with_spares.badput_s["spare_wait"] == 0.0


def test_ab_fed_rack_survives_one_feed_loss_but_not_both():
    model = small_model()
    plan, _, _ = design()
    rack = int(plan.node_rack[20])
    side_a, side_b = plan.feed_rack_feed[plan.feed_rack_rack == rack]
    assert model.blast_radius("feed", int(side_a)).size == 0
    one = run([InjectedEvent(HOUR, "feed", int(side_a))])
    assert one.interruptions["total"] == 0 and one.interruptions["feed_faults_absorbed"] == 1
    both = run([InjectedEvent(HOUR, "feed", int(side_a)), InjectedEvent(2 * HOUR, "feed", int(side_b))])
    assert both.interruptions["by_category"]["power"] == 1
    assert both.event_log[-1]["spares_left"] == -model.blast_radius("rack", rack).size
    # The rack comes back with its first feed (side A, 8 h after it failed) -> wait until then.
    assert both.badput_s["spare_wait"] == pytest.approx(HOUR + 8 * HOUR - 2 * HOUR - 60)
    late = run(
        [InjectedEvent(HOUR, "feed", int(side_a)), InjectedEvent(10 * HOUR, "feed", int(side_b))], work_h=12
    )
    assert late.interruptions["total"] == 0 and late.interruptions["feed_faults_absorbed"] == 2


def test_single_fed_rack_goes_down_with_its_feed():
    plan, fabric, catalog = design()
    side_a = plan.feed_side[plan.feed_rack_feed] == 0
    single = replace(
        plan, feed_rack_feed=plan.feed_rack_feed[side_a], feed_rack_rack=plan.feed_rack_rack[side_a]
    )
    model = failure_components(single, fabric, None, catalog)
    rack = int(plan.node_rack[20])
    feed = int(single.feed_rack_feed[single.feed_rack_rack == rack][0])
    assert model.blast_radius("feed", feed).tolist() == np.flatnonzero(plan.node_rack == rack).tolist()
    result = run([InjectedEvent(HOUR, "feed", feed)], model=model)
    assert result.interruptions["by_category"]["power"] == 1


def test_spine_fault_slows_the_job_instead_of_stopping_it():
    plan, _, _ = design()
    spine = int(np.flatnonzero(plan.switch_tier == 1)[0])
    free = run([], work_h=10, checkpoint={"save_s": 0})
    slow = run(
        [InjectedEvent(HOUR, "spine", spine)],
        work_h=10,
        checkpoint={"save_s": 0},
        switch_repair_hours=4,
        degraded={"spine": 2.0},
    )
    assert free.wall_time_s[0] == pytest.approx(10 * HOUR)
    # 4 h at half speed do 2 h of work: 2 h more wall time, no stop.
    assert slow.wall_time_s[0] == pytest.approx(12 * HOUR)
    assert slow.interruptions["total"] == 0 and slow.interruptions["degradations"] == 1
    assert slow.badput_s["degraded_slowdown"] == pytest.approx(2 * HOUR)
    assert slow.etr == pytest.approx(1.0) and slow.goodput == pytest.approx(10 / 12)
    with pytest.raises(ScenarioError, match="degraded_step_time_s: must be a number ≥ the step time"):
        run([], degraded=0.5)


def test_spares_run_out_and_the_job_waits_for_the_first_repair():
    events = [InjectedEvent(HOUR, "gpu", 0), InjectedEvent(2 * HOUR, "gpu", 8 * 7)]
    result = run(events, work_h=5, spare_servers=1, repair_hours=10)
    first, second = result.event_log
    assert first["spares_left"] == 0 and second["spares_left"] == -1
    # The first server returns at 1 h + 10 h; the second stop waits from its detection until then.
    assert result.badput_s["spare_wait"] == pytest.approx(11 * HOUR - (2 * HOUR + 60))
    assert second["downtime_s"] == pytest.approx(11 * HOUR - 2 * HOUR + 600 + 30)


def test_checkpoint_accounting_blocking_save_hand_computed():
    result = run([InjectedEvent(1.5 * HOUR, "gpu", 3)], spare_servers=1)
    # compute 0-3600, save 3600-3660, fail at 5400: 1740 s of work lost; recovery 60+600+30;
    # then 7200 s of work with one more 60 s save.
    assert result.badput_s["rework"] == pytest.approx(1740)
    assert result.badput_s["checkpoint"] == pytest.approx(120)
    assert result.wall_time_s[0] == pytest.approx(5400 + 690 + 3600 + 60 + 3600)
    assert sum(result.badput_s.values()) + result.goodput_s == pytest.approx(result.wall_time_s[0])
    assert result.etr == pytest.approx(3 * HOUR / result.wall_time_s[0])


def test_checkpoint_accounting_async_save_counts_only_once_finished():
    during = run([InjectedEvent(3610.0, "software")], checkpoint={"async": True}, spare_servers=1)
    after = run([InjectedEvent(3700.0, "software")], checkpoint={"async": True}, spare_servers=1)
    # At 3610 s the save started at 3600 s is not durable yet (60 s): the whole first hour is lost.
    assert during.badput_s["rework"] == pytest.approx(3610)
    assert after.badput_s["rework"] == pytest.approx(100)
    assert during.badput_s["checkpoint"] == 0.0
    assert during.wall_time_s[0] == pytest.approx(3610 + 690 + 3 * HOUR)


def test_failure_during_recovery_restarts_the_recovery_without_rework():
    events = [InjectedEvent(1800.0, "software"), InjectedEvent(2000.0, "software")]
    result = run(events, spare_servers=1)
    assert result.badput_s["rework"] == pytest.approx(1800)
    assert result.badput_s["detection"] == pytest.approx(120)
    assert result.badput_s["restart"] == pytest.approx(140 + 600)
    assert result.interruptions["by_category"]["software"] == 2


def test_planned_maintenance_saves_first_and_loses_no_work():
    result = run([InjectedEvent(1800.0, "planned")])
    assert result.badput_s["rework"] == 0.0
    assert result.badput_s["planned_maintenance"] == pytest.approx(60 + 600 + 30)
    assert result.interruptions["planned"] == 1 and result.interruptions["total"] == 0


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


def test_merge_of_four_chunks_equals_one_run_bit_for_bit():
    model = small_model()
    failure_spec, kwargs = random_run_kwargs()
    n_blocks = failure_blocks(failure_spec)
    assert n_blocks == 4
    whole = merge_failure_chunks([run_failure_chunk(model, failure_spec, blocks=range(n_blocks), **kwargs)])
    chunks = [
        run_failure_chunk(model, failure_spec, blocks=part, **kwargs) for part in split_blocks(n_blocks, 4)
    ]
    chunks = [json.loads(json.dumps(chunk)) for chunk in reversed(chunks)]  # JSON round trip, any order
    merged = merge_failure_chunks(chunks)
    assert json.dumps(merged.to_dict(), sort_keys=True) == json.dumps(whole.to_dict(), sort_keys=True)
    assert np.array_equal(merged.wall_time_s, whole.wall_time_s)
    assert np.array_equal(merged.etr_per_trial, whole.etr_per_trial)


def test_event_log_is_the_representative_trial_re_simulated():
    model = small_model()
    failure_spec, kwargs = random_run_kwargs(trials=600)
    result = simulate_failures(model, failure_spec, **kwargs)
    trial = result.representative_trial
    productive = result.productive_s
    assert abs(productive[trial] - np.median(productive)) == np.min(
        np.abs(productive - np.median(productive))
    )
    stops = [e for e in result.event_log if e["effect"] == "stop"]
    block = trial // BLOCK_TRIALS
    alone = run_failure_chunk(model, failure_spec, blocks=[block], log_trial=trial, **kwargs)
    assert alone["event_log"] == result.event_log
    first = trial - block * BLOCK_TRIALS
    assert alone["blocks"][0]["etr"][first] == result.etr_per_trial[trial]
    assert len(stops) > 0 and all(0 <= e["time_s"] <= 20 * 86_400 for e in result.event_log)


def test_same_seed_reproduces_and_blocks_are_spawned_children():
    model = small_model()
    failure_spec, kwargs = random_run_kwargs(trials=300)
    first = simulate_failures(model, failure_spec, **kwargs).to_dict()
    assert simulate_failures(model, failure_spec, **kwargs).to_dict() == first
    other = simulate_failures(model, replace(failure_spec, seed=8), **kwargs).to_dict()
    assert other["etr"] != first["etr"]
    child = np.random.SeedSequence(7).spawn(5)[3]
    expected = np.random.Generator(np.random.PCG64(child)).random(4)
    assert np.array_equal(block_generator(7, 3).random(4), expected)


def test_result_dict_is_json_with_the_keys_the_cli_prints():
    model = small_model()
    failure_spec, kwargs = random_run_kwargs(trials=200)
    out = simulate_failures(model, failure_spec, **kwargs).to_dict()
    json.dumps(out)
    assert set(out["wall_time_days"]) == {"p5", "p50", "p95", "mean"}
    assert {"etr", "interruptions", "optimal_checkpoint_interval_min", "badput", "closed_form_etr"} <= set(
        out
    )
    assert set(out["badput"]) == {
        "rework",
        "detection",
        "restart",
        "reload",
        "checkpoint",
        "spare_wait",
        "degraded_slowdown",
        "planned_maintenance",
    }
    assert sum(out["badput"].values()) + out["goodput_s"] == pytest.approx(20 * 86_400)
    assert len(out["rack_failures"]) == design()[0].n_racks
    assert out["productive_days"]["p50"] <= 20
    sweep = out["checkpoint_sweep"]
    assert len(sweep) >= 5 and out["best_swept_interval_min"] in [row["interval_min"] for row in sweep]


def test_rack_failures_add_up_to_the_failure_events():
    model = small_model()
    failure_spec, kwargs = random_run_kwargs(trials=400, rates={"software_per_day": 0, "planned_per_day": 0})
    result = simulate_failures(model, failure_spec, **kwargs)
    interruptions = result.interruptions
    events = interruptions["total"] + interruptions["degradations"] + interruptions["feed_faults_absorbed"]
    assert result.rack_failures.sum() == pytest.approx(events)
    plan = design()[0]
    compute = plan.rack_kind == 0
    per_compute_rack = result.rack_failures[compute]
    assert per_compute_rack.min() > 0  # every compute rack's servers fail now and then


def test_vectorized_engine_matches_naive_reference_on_random_schedules():
    model = small_model()
    plan, _, _ = design()
    rng = np.random.default_rng(11)
    spine = np.flatnonzero(plan.switch_tier == 1)
    fabric_links = model.member_component[next(c for c in model.classes if c.kind == "fabric_link").offset :][
        :50
    ]
    rack = int(plan.node_rack[20])
    feeds = plan.feed_rack_feed[plan.feed_rack_rack == rack].tolist()
    choices = [
        ("gpu", np.arange(64 * 8)),
        ("hbm", np.arange(64 * 8)),
        ("host", np.arange(64)),
        (
            "nic_link",
            model.member_component[next(c for c in model.classes if c.kind == "nic_link").offset :][:64],
        ),
        ("leaf", np.arange(32)),
        ("spine", spine),
        ("fabric_link", fabric_links),
        ("feed", np.array(feeds)),
        ("software", np.array([-1])),
        ("maintenance", np.arange(64)),
        ("planned", np.array([-1])),
    ]
    for case in range(4):
        async_save = bool(case % 2)
        work_h = 12.0
        schedules = []
        for _ in range(24):
            n = int(rng.integers(0, 9))
            times = np.sort(rng.uniform(0, 2.5 * work_h * HOUR, n))
            kinds = rng.integers(0, len(choices), n)
            schedules.append(
                [
                    InjectedEvent(float(t), choices[k][0], int(rng.choice(choices[k][1])))
                    for t, k in zip(times, kinds, strict=True)
                ]
            )
        overrides = {
            "trials": len(schedules),
            "spare_servers": int(rng.integers(0, 20)),
            "checkpoint": {"interval_min": float(rng.uniform(20, 90)), "save_s": float(rng.uniform(5, 300))}
            | {"async": async_save},
            "repair_hours": float(rng.uniform(1, 8)),
            "switch_repair_hours": float(rng.uniform(1, 6)),
            "link_repair_hours": float(rng.uniform(0.5, 3)),
            "feed_repair_hours": float(rng.uniform(1, 6)),
        }
        if case == 3:
            overrides["window_days"] = 1.0
        failure_spec = spec(**overrides)
        degraded = {"spine": 1.7, "fabric_link": 1.2}
        result = run_failure_chunk(
            model,
            failure_spec,
            blocks=[0],
            step_time_s=1.0,
            degraded_step_time_s=degraded,
            job_work_s=None if case == 3 else work_h * HOUR,
            injected=schedules,
        )
        block = result["blocks"][0]
        for trial, schedule in enumerate(schedules):
            expected = reference_trial(
                model,
                failure_spec,
                schedule,
                step_time_s=1.0,
                degraded=degraded,
                work_s=None if case == 3 else work_h * HOUR,
                interval_s=failure_spec.checkpoint.interval_min * 60,
                save_s=failure_spec.checkpoint.save_s,
                reload_s=failure_spec.reload_s,
            )
            assert block["wall_s"][trial] == pytest.approx(expected["wall_s"], rel=1e-9), (case, trial)
            productive = expected["compute_s"] - expected["rework"]
            assert block["etr"][trial] * block["wall_s"][trial] == pytest.approx(
                productive, rel=1e-9, abs=1e-6
            )
        one = next(s for s in schedules if s)
        alone = simulate_failures(
            model,
            replace(failure_spec, trials=1),
            step_time_s=1.0,
            degraded_step_time_s=degraded,
            job_work_s=None if case == 3 else work_h * HOUR,
            injected=one,
        )
        expected = reference_trial(
            model,
            failure_spec,
            one,
            step_time_s=1.0,
            degraded=degraded,
            work_s=None if case == 3 else work_h * HOUR,
            interval_s=failure_spec.checkpoint.interval_min * 60,
            save_s=failure_spec.checkpoint.save_s,
            reload_s=failure_spec.reload_s,
        )
        keys = {"rework": "rework", "checkpoint": "save", "detection": "detection", "spare_wait": "wait"}
        keys |= {"restart": "restart", "reload": "reload", "planned_maintenance": "planned"}
        for ours, theirs in keys.items():
            assert alone.badput_s[ours] == pytest.approx(expected[theirs], rel=1e-9, abs=1e-6), (case, ours)
        counts = expected["counts"]
        for category, value in alone.interruptions["by_category"].items():
            assert value == counts.get(category, 0), (case, category)
        assert alone.interruptions["degradations"] == counts.get("degradations", 0)
        assert alone.interruptions["planned"] == counts.get("planned", 0)


def test_closed_form_agrees_with_the_simulation_when_failures_are_rare():
    model = small_model()
    failure_spec = parse_failures(
        {
            "trials": 1000,
            "window_days": 30,
            "seed": 3,
            "spare_servers": 64,
            "checkpoint": {"interval_min": 20, "save_s": 30},
            "reload_s": 60,
            "restart_min": 5,
            "rates": {"software_per_day": 0.2, "maintenance_per_day": 0.1},
        }
    )
    result = simulate_failures(model, failure_spec, step_time_s=5.0)
    mttf_h = 1 / result.meta["stop_rate_per_s"] / HOUR
    assert mttf_h > 20  # rare against the 20-minute interval
    assert abs(result.etr - result.closed_form_etr) < 0.005
    assert not any(w.startswith("closed form") for w in result.warnings)


def test_closed_form_warns_when_spares_make_it_wrong():
    model = small_model()
    failure_spec = parse_failures(
        {
            "trials": 200,
            "window_days": 30,
            "spare_servers": 0,
            "repair_hours": 72,
            "checkpoint": {"save_s": 30},
        }
        | {"reload_s": 30}
    )
    result = simulate_failures(model, failure_spec, step_time_s=5.0)
    assert result.etr < result.closed_form_etr - 0.02
    assert any(w.startswith("closed form") for w in result.warnings)


def test_optimal_interval_is_daly_and_the_sweep_peaks_near_it():
    assert optimal_interval_s(10_000.0, 100.0) == pytest.approx(
        math.sqrt(2 * 100 * 10_000) * (1 + math.sqrt(100 / 20_000) / 3 + (100 / 20_000) / 9) - 100
    )
    assert optimal_interval_s(10.0, 50.0) == 10.0
    cf = dict(stop_rate_per_s=1 / 20_000, planned_rate_per_s=0.0, save_s=100.0, async_save=False)
    recovery = dict(detection_s=60.0, restart_s=300.0, reload_s=30.0)
    best = optimal_interval_s(20_000.0, 100.0)
    assert closed_form_etr(interval_s=best, **cf, **recovery) > closed_form_etr(
        interval_s=best * 0.5, **cf, **recovery
    )
    assert closed_form_etr(interval_s=best, **cf, **recovery) > closed_form_etr(
        interval_s=best * 2, **cf, **recovery
    )
    model = small_model()
    failure_spec = parse_failures(
        {"trials": 1000, "window_days": 20, "spare_servers": 64, "checkpoint": {"interval_min": "optimal"}}
        | {"rates": {"server_per_1000_node_days": 400}, "reload_s": 60}
        | {"checkpoint": {"interval_min": "optimal", "save_s": 120}}
    )
    result = simulate_failures(model, failure_spec, step_time_s=5.0).to_dict()
    etr = [row["etr"] for row in result["checkpoint_sweep"]]
    peak = int(np.argmax(etr))
    assert 1 <= peak <= len(etr) - 2  # an interior optimum
    assert result["checkpoint_interval_min"] == pytest.approx(result["optimal_checkpoint_interval_min"])
    assert result["checkpoint_sweep"][3]["interval_min"] == pytest.approx(
        result["optimal_checkpoint_interval_min"]
    )


def test_lemon_nodes_fail_more_and_leave_the_pool():
    model = small_model()
    base = {
        "trials": 500,
        "window_days": 30,
        "spare_servers": 8,
        "checkpoint": {"save_s": 30},
        "reload_s": 30,
    }
    plain = simulate_failures(model, parse_failures(base), step_time_s=5.0)
    lemons = {"fraction": 0.1, "factor": 50, "remove_after": 2}
    sour = simulate_failures(model, parse_failures(base | {"lemons": lemons}), step_time_s=5.0)
    extra = sour.interruptions["total"] - plain.interruptions["total"]
    # 6 lemons at 50x the server hazard each fail ~twice and then are gone for good.
    per_server_year = sum(model.server_hazards_per_year().values())
    unbounded = 6 * 49 * per_server_year * 30 / 365
    assert 0.5 * 12 < extra < min(unbounded, 12.0) + 3
    assert sour.etr < plain.etr


def test_weibull_shape_changes_the_spread_not_the_mean_rate():
    model = small_model()
    base = {
        "trials": 1000,
        "window_days": 30,
        "spare_servers": 64,
        "checkpoint": {"save_s": 30},
        "reload_s": 30,
    }
    poisson = simulate_failures(model, parse_failures(base), step_time_s=5.0)
    bursty = simulate_failures(model, parse_failures(base | {"weibull_shape": 0.6}), step_time_s=5.0)
    assert bursty.interruptions["total"] == pytest.approx(poisson.interruptions["total"], rel=0.05)
    assert np.std(bursty.etr_per_trial) > np.std(poisson.etr_per_trial)


def test_server_rate_override_scales_the_server_hazards():
    model = small_model()
    base = {
        "trials": 400,
        "window_days": 30,
        "spare_servers": 64,
        "checkpoint": {"save_s": 30},
        "reload_s": 30,
    }
    rates = {"server_per_1000_node_days": 6.5, "software_per_day": 0, "maintenance_per_day": 0}
    result = simulate_failures(model, parse_failures(base | {"rates": rates}), step_time_s=5.0)
    by = result.interruptions["by_category"]
    links = [c for c in model.classes if c.kind in ("nic_link", "leaf")]
    network = sum(c.rate_per_year * c.count for c in links) * 30 / 365
    assert by["gpu"] + by["host"] == pytest.approx(6.5 / 1000 * 64 * 30, rel=0.05)
    assert by["network"] == pytest.approx(network, rel=0.15)


def test_checkpoint_size_follows_the_model_and_zero_sharding():
    job = llama_job()
    size = checkpoint_size(job)
    assert size.save_bytes == pytest.approx(405e9 * 14, rel=0.02)
    assert size.reload_bytes == size.save_bytes
    unsharded = checkpoint_size(replace(job, zero=0))
    assert unsharded.reload_bytes == pytest.approx(4 * size.save_bytes)


def test_degraded_fabric_removes_the_lost_share_of_capacity():
    _, fabric, _ = design(2048, server="dgx-h100")
    spine = degraded_fabric(fabric, "spine")
    changed = np.asarray(spine.link_gbps) != np.asarray(fabric.link_gbps)
    assert np.allclose(np.asarray(spine.link_gbps)[changed], 400 * (1 - 1 / 32))
    assert changed.sum() == 32 * 32  # every leaf-spine link of one pod
    link = degraded_fabric(fabric, "fabric_link")
    assert (np.asarray(link.link_gbps) != np.asarray(fabric.link_gbps)).sum() == 32


def test_failure_modules_are_pure():
    code = textwrap.dedent(
        """
        import sys
        import scenarios.sim.failures
        banned = ("django", "celery", "channels", "plotly")
        print(",".join(sorted(m for m in sys.modules if m.split(".")[0] in banned)))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == ""


# --- calibration ----------------------------------------------------------------------------


def test_calibration_llama3_interruptions_54_days_on_16384_h100():
    """Catalog rates derived from Dubey et al. 2024 Table 5 reproduce its counts."""
    path = fitted_dir() / "llama3-interruptions.yaml"
    need_calibration(path)
    from scipy.stats import chi2

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    plan, fabric, catalog = design(data["servers"], server="dgx-h100")
    assert plan.n_gpus == data["gpus"]
    model = failure_components(plan, fabric, None, catalog)
    failure_spec = parse_failures(
        {"trials": 400, "window_days": data["days"], "seed": 5, "checkpoint": {"save_s": 20}, "reload_s": 30}
    )
    result = simulate_failures(model, failure_spec, step_time_s=10.0)
    observed = data["unexpected_interruptions"]
    mean = result.interruptions["total"]
    assert abs(mean - observed) <= 2 * math.sqrt(observed)
    counts: dict[str, int] = {}
    for row in data["unexpected_by_component"]:
        counts[row["category"]] = counts.get(row["category"], 0) + row["count"]
    assert sum(counts.values()) == observed
    for category, count in counts.items():
        low, high = chi2.ppf(0.025, 2 * count) / 2, chi2.ppf(0.975, 2 * count + 2) / 2  # Garwood 95%
        assert low <= result.interruptions["by_category"][category] <= high, category


def test_the_sweep_reaches_a_fixed_interval_far_from_the_optimum():
    """A 6-hour interval against a Young/Daly optimum of minutes: the sweep still spans both, so
    the page draws the run's own interval on the curve."""
    model = small_model()
    spec = parse_failures(
        {"trials": 200, "window_days": 20, "checkpoint": {"interval_min": 360, "save_s": 5}}
        | {"rates": {"server_per_1000_node_days": 400}, "reload_s": 60}
    )
    result = simulate_failures(model, spec, step_time_s=5.0).to_dict()
    intervals = [row["interval_min"] for row in result["checkpoint_sweep"]]
    assert intervals == sorted(intervals)
    assert intervals[0] <= result["optimal_checkpoint_interval_min"] < 360
    assert 360 in [pytest.approx(v) for v in intervals] and intervals[-1] == pytest.approx(720)
