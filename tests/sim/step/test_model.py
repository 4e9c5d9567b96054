from __future__ import annotations

import numpy as np
import pytest

from scenarios.sim import BREAKDOWN_KEYS, ScenarioError, parse_scenario, predict
from scenarios.sim.step.assemble import assemble_step
from scenarios.sim.step.candidates import CandidateLayouts, StackOptions
from scenarios.sim.step.flops import model_flops_per_step
from tests.sim._fabrics import fabric
from tests.sim._scenarios import scenario_dict


def test_predict_breakdown_sums_to_step_time(catalog):
    result = predict(parse_scenario(scenario_dict()), catalog=catalog)
    assert result.step_time_s == pytest.approx(sum(result.breakdown[k] for k in BREAKDOWN_KEYS))
    assert set(result.breakdown) == set(BREAKDOWN_KEYS)
    assert result.breakdown["compute"] > 0 and result.breakdown["tp"] > 0
    timeline = result.timeline
    assert timeline.step_time_s == result.step_time_s
    for s in range(timeline.n_stages):
        n = timeline.n_phases[s]
        ends = timeline.start_s[s, :n] + timeline.duration_s[s, :n]
        assert timeline.start_s[s, 0] == 0.0
        np.testing.assert_allclose(timeline.start_s[s, 1:n], ends[:-1], rtol=1e-12)
        assert ends[-1] == pytest.approx(result.step_time_s, rel=1e-12)
    assert "timeline" not in result.summary()  # per-stage arrays stay out of the stored summary
    assert result.to_dict(arrays=False)["timeline"]["stages"][0]["gpus"] == 32


def test_predict_uses_the_simulated_schedule_which_equals_the_closed_form(catalog):
    data = scenario_dict(
        model={"layers": 16}, parallel={"tp": 8, "pp": 4, "dp": 1, "vpp": 2}, global_batch=16, micro_batch=1
    )
    result = predict(parse_scenario(data), catalog=catalog)
    closed = sum(result.breakdown[k] for k in ("compute", "tp", "cp", "ep", "pp", "bubble"))
    assert result.timeline.pipeline_s == pytest.approx(closed, rel=1e-12)
    assert abs(result.details["schedule_minus_closed_form_s"]) < 1e-12 * closed
    assert result.timeline.n_stages == 4 and result.timeline.vpp == 2


def test_predict_throughput_figures_are_consistent(catalog):
    scenario = parse_scenario(scenario_dict(tokens=1e12))
    result = predict(scenario, catalog=catalog)
    flops = float(model_flops_per_step(scenario.job.model, 64))
    assert result.model_tflops_per_gpu == pytest.approx(flops / result.step_time_s / 32 / 1e12)
    assert result.hardware_tflops_per_gpu >= result.model_tflops_per_gpu
    assert result.mfu == pytest.approx(result.model_tflops_per_gpu / 312.0)
    assert result.tokens_per_s == pytest.approx(64 * 2048 / result.step_time_s)
    assert result.time_to_train_days == pytest.approx(1e12 / result.tokens_per_s / 86400)
    assert result.memory_gib_per_gpu == pytest.approx(sum(result.memory.values()))
    assert result.fits is (result.memory_gib_per_gpu <= 80.0)


def test_predict_arrays_have_fabric_shapes(catalog):
    fab = fabric(4)
    result = predict(parse_scenario(scenario_dict()), catalog=catalog, fabric=fab)
    assert result.link_utilization.shape == (fab.n_links,)
    assert result.rack_link_utilization.shape == (fab.n_racks,)
    assert result.gpu_slowdown.shape == (fab.n_gpus,)
    assert result.timeline.gpu_stage.shape == (fab.n_gpus,) and np.all(result.timeline.gpu_stage == 0)
    assert np.all(result.link_utilization >= 0) and result.link_utilization.max() > 0
    payload = result.to_dict()
    assert len(payload["link_utilization"]) == fab.n_links
    assert payload["breakdown"].keys() == result.breakdown.keys()


def test_predict_is_deterministic_for_a_seed(catalog):
    data = scenario_dict(what_if={"straggler_spread": 0.05, "seed": 7})
    first = predict(parse_scenario(data), catalog=catalog)
    again = predict(parse_scenario(data), catalog=catalog)
    assert first.step_time_s == again.step_time_s
    np.testing.assert_array_equal(first.gpu_slowdown, again.gpu_slowdown)
    other = predict(parse_scenario(data), catalog=catalog, rng=np.random.default_rng(8))
    assert other.breakdown["straggler"] != first.breakdown["straggler"]
    assert first.breakdown["straggler"] > 0


def test_predict_slow_node_adds_straggler_time(catalog):
    still = {"straggler_spread": 0.0}
    base = predict(parse_scenario(scenario_dict(what_if=still)), catalog=catalog)
    slow = predict(
        parse_scenario(scenario_dict(what_if={**still, "slow_nodes": [2], "slow_node_factor": 1.5})),
        catalog=catalog,
    )
    assert base.breakdown["straggler"] == 0.0
    assert slow.step_time_s > base.step_time_s * 1.3


def _dp_heavy(oversubscription: float) -> dict:
    # Hash ECMP: per-flow paths collide on the halved uplinks. (With the default "spread"
    # routing a rail-aligned ring crosses each leaf with one flow per rail and never fills
    # even a 2:1 uplink, which is the point of rail-optimized designs.)
    return scenario_dict(
        cluster={"nodes": 64, "su_nodes": 8, "oversubscription": oversubscription},
        parallel={"tp": 1, "pp": 1, "dp": 512},
        global_batch=512,
        micro_batch=1,
        zero=0,
        overlap_dp=False,
        what_if={"ecmp": "hash"},
    )


def test_predict_oversubscription_slows_dp_heavy_job_not_tp_only_job(catalog):
    fast = predict(parse_scenario(_dp_heavy(1.0)), catalog=catalog)
    slow = predict(parse_scenario(_dp_heavy(2.0)), catalog=catalog)
    assert slow.breakdown["dp"] > 1.02 * fast.breakdown["dp"]
    assert slow.step_time_s > fast.step_time_s
    tp_only = {"nodes": 1, "su_nodes": 8}
    tp_job = scenario_dict(cluster=tp_only, parallel={"tp": 8, "pp": 1, "dp": 1}, global_batch=8)
    tp_fast = predict(parse_scenario(tp_job), catalog=catalog)
    tp_job["cluster"]["oversubscription"] = 2.0
    tp_slow = predict(parse_scenario(tp_job), catalog=catalog)
    assert tp_slow.step_time_s == tp_fast.step_time_s


def test_predict_slower_nic_raises_exposed_data_parallel_time(catalog):
    base = scenario_dict(
        cluster={"nodes": 8},
        parallel={"tp": 8, "pp": 1, "dp": 8},
        global_batch=64,
        micro_batch=8,
        overlap_dp=False,
    )
    fast = predict(parse_scenario(base), catalog=catalog)
    base["what_if"] = {"nic_gbps": 100}
    slow = predict(parse_scenario(base), catalog=catalog)
    assert slow.breakdown["dp"] > 1.5 * fast.breakdown["dp"]
    assert slow.breakdown["compute"] == fast.breakdown["compute"]


def test_predict_recompute_trades_time_for_memory(catalog):
    results = {
        mode: predict(parse_scenario(scenario_dict(recompute=mode, precision="fp16")), catalog=catalog)
        for mode in ("none", "selective", "full")
    }
    assert results["full"].step_time_s > results["selective"].step_time_s
    assert results["selective"].step_time_s > results["none"].step_time_s
    assert results["full"].memory["activations"] < results["selective"].memory["activations"]
    assert results["selective"].memory["activations"] < results["none"].memory["activations"]


def test_predict_pipeline_bubble_matches_schedule(catalog):
    data = scenario_dict(
        model={"layers": 16}, parallel={"tp": 8, "pp": 4, "dp": 1}, global_batch=16, micro_batch=1
    )
    one = predict(parse_scenario(data), catalog=catalog)
    data["job"]["parallel"]["vpp"] = 2
    two = predict(parse_scenario(data), catalog=catalog)
    assert one.details["bubble_fraction"] == pytest.approx(3 / 16)
    assert two.details["bubble_fraction"] == pytest.approx(3 / 32)
    assert two.breakdown["bubble"] < one.breakdown["bubble"]


def test_predict_rejects_gpu_count_mismatch_with_one_line(catalog):
    data = scenario_dict(parallel={"dp": 8}, global_batch=64)
    with pytest.raises(ScenarioError, match=r"^job.parallel: dp × tp × pp × cp must equal"):
        predict(parse_scenario(data), catalog=catalog)


def _naive_comm(kind, op, size):
    """Deliberately simple reference collective: 10 us + bytes / 100 GB/s."""
    return 1e-5 + np.asarray(size, dtype=float) / 100e9


def test_assemble_step_vectorized_matches_scalar_reference(catalog):
    rng = np.random.default_rng(3)
    model = parse_scenario(scenario_dict(model={"layers": 24})).job.model
    gpu = catalog.gpu("h100-sxm")
    n = 12
    cand = {
        "micro_batch": rng.choice([1, 2, 4], n),
        "tp": rng.choice([1, 2, 4, 8], n),
        "pp": rng.choice([1, 2, 4], n),
        "dp": rng.choice([1, 2, 4], n),
        "cp": rng.choice([1, 2], n),
        "ep": np.ones(n, dtype=int),
        "vpp": rng.choice([1, 2], n),
        "recompute": rng.integers(0, 3, n),
        "zero": rng.integers(0, 4, n),
    }
    stack = StackOptions(precision="bf16", attention="flash", overlap_dp=True)
    common = dict(gpu=gpu, comm_time=_naive_comm)
    vector = assemble_step(model, CandidateLayouts(64, **cand), stack, **common)
    for i in range(n):
        one = CandidateLayouts(64, **{k: int(v[i]) for k, v in cand.items()})
        scalar = assemble_step(model, one, stack, **common)
        assert float(scalar.step_time_s) == pytest.approx(vector.step_time_s[i], rel=1e-12)
        for key in BREAKDOWN_KEYS:
            assert float(scalar.breakdown[key]) == pytest.approx(vector.breakdown[key][i])
        assert float(scalar.memory["total"]) == pytest.approx(vector.memory["total"][i])


def test_step_result_to_dict_is_strict_json(catalog):
    import json

    result = predict(
        parse_scenario(scenario_dict(cluster={"nodes": 1}, parallel={"dp": 1}, global_batch=8)),
        catalog=catalog,
    )
    text = json.dumps(result.to_dict(), allow_nan=False)
    assert json.loads(text)["details"]["comm_busbw_gbytes_per_s"]["dp"] is None
