"""The Monte Carlo front: chunks that merge bit for bit, seeds, the event log and the result
(scenarios/sim/failures/__init__.py, result.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from scenarios.sim.failures import (
    BLOCK_TRIALS,
    block_generator,
    failure_blocks,
    merge_failure_chunks,
    run_failure_chunk,
    simulate_failures,
    split_blocks,
)
from tests.sim.failures._helpers import (
    design,
    random_run_kwargs,
    small_model,
)


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
