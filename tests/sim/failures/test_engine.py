"""The vectorized trial engine: recovery, spares, checkpoints, lemons and Weibull hazards, checked
by hand and against a naive reference (scenarios/sim/failures/engine.py, cluster.py, stream.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from scenarios.sim.failures import (
    InjectedEvent,
    failure_components,
    run_failure_chunk,
    simulate_failures,
)
from scenarios.sim.format.errors import ScenarioError
from scenarios.sim.format.failures import parse_failures
from tests.sim.failures._helpers import (
    HOUR,
    design,
    reference_trial,
    run,
    small_model,
    spec,
)


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
