from __future__ import annotations

import pytest

from scenarios.sim.format.scenario import (
    CheckedScenario,
    ScenarioError,
    check_scenario,
    checked_scenario,
    parse_scenario,
)
from tests.sim._scenarios import scenario_dict


def test_parse_scenario_reads_defaults():
    scenario = parse_scenario(scenario_dict())
    model = scenario.job.model
    assert model.kv_heads == 16 and model.ffn_hidden == 4 * 2048 and model.mlp == "gelu"
    assert scenario.job.parallel.cp == 1 and scenario.job.parallel.vpp == 1
    assert scenario.job.attention == "flash"
    assert scenario.what_if.ecmp == "spread"
    assert scenario.job.microbatches == 64 // (2 * 4)


def test_parse_scenario_infers_swiglu_from_non_gpt_ffn():
    data = scenario_dict(model={"ffn_hidden": 5632})
    assert parse_scenario(data).job.model.mlp == "swiglu"
    data["job"]["model"]["mlp"] = "gelu"
    assert parse_scenario(data).job.model.mlp == "gelu"


def test_parse_scenario_fp16_defaults_to_standard_attention():
    assert parse_scenario(scenario_dict(precision="fp16")).job.attention == "standard"
    data = scenario_dict(precision="fp16", attention="flash")
    assert parse_scenario(data).job.attention == "flash"


def test_parse_scenario_ignores_measured_block():
    data = scenario_dict()
    data["measured"] = {"step_time_s": 1.0, "source": "paper"}
    assert parse_scenario(data).name == "gpt-small"


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (scenario_dict(parallel={"tp": 3}), "job.parallel.tp: must divide heads (16)"),
        (scenario_dict(model={"layers": -4}), "job.model.layers: must be ≥ 1 (got -4)"),
        (scenario_dict(model={"hidden": 10**9}), "job.model.hidden: must be ≤"),
        (scenario_dict(global_batch=65), "job.global_batch: must be a multiple of micro_batch"),
        (scenario_dict(recompute="some"), "job.recompute: must be one of none, selective, full"),
        (scenario_dict(zero=4), "job.zero: must be ≤ 3 (got 4)"),
        (scenario_dict(parallel={"pp": 2, "dp": 2, "vpp": 8}), "job.parallel.vpp: must be ≤"),
        (scenario_dict(micro_batch="2"), "job.micro_batch: must be an integer"),
        (scenario_dict(cluster={"nodes": 0}), "cluster.nodes: must be ≥ 1 (got 0)"),
        (scenario_dict(cluster={"nodes": 10**8}), "cluster.nodes: must be ≤ 1,000,000"),
        (scenario_dict(cluster={"generator": "torus"}), "cluster.generator: must be one of"),
        (scenario_dict(what_if={"straggler_spread": 2}), "what_if.straggler_spread: must be ≤"),
        (scenario_dict(what_if={"turbo": True}), "what_if.turbo: unknown field"),
        (scenario_dict(parallel={"ep": 2}), "job.parallel.ep: needs job.model.moe"),
        (scenario_dict(nodes=0), "job.nodes: must be ≥ 1 (got 0)"),
        (scenario_dict(placement="round-robin"), "job.placement: must be one of packed, spread"),
        (scenario_dict(gpus_per_domain=2.5), "job.gpus_per_domain: must be an integer"),
        ({**scenario_dict(), "version": 2}, "version: must be 1 (got 2)"),
    ],
)
def test_parse_scenario_rejects_bad_input_with_one_line(data, fragment):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_check_scenario_rejects_unknown_server(catalog):
    scenario = parse_scenario(scenario_dict(cluster={"server": "dgx-z900"}))
    with pytest.raises(ScenarioError, match=r"^cluster.server: unknown slug 'dgx-z900'"):
        check_scenario(scenario, catalog)


def test_check_scenario_rejects_gpu_count_mismatch(catalog):
    scenario = parse_scenario(scenario_dict(parallel={"dp": 2}, global_batch=64))
    with pytest.raises(
        ScenarioError,
        match=r"^job\.parallel: dp × tp × pp × cp must equal the cluster's GPUs \(4 nodes × 8 = 32\)",
    ):
        check_scenario(scenario, catalog)
    on_part = parse_scenario(scenario_dict(parallel={"dp": 4}, global_batch=64, nodes=2))
    with pytest.raises(
        ScenarioError, match=r"must equal the job's GPUs \(job\.nodes 2 × 8 = 16\) \(got 4 × 8"
    ):
        check_scenario(on_part, catalog)


def test_parse_scenario_reads_the_job_placement():
    job = parse_scenario(scenario_dict()).job
    assert (job.nodes, job.placement, job.gpus_per_domain) == (None, "packed", None)
    job = parse_scenario(scenario_dict(nodes=2, placement="spread", gpus_per_domain=8)).job
    assert (job.nodes, job.placement, job.gpus_per_domain) == (2, "spread", 8)


def test_check_scenario_rejects_job_nodes_beyond_the_cluster(catalog):
    scenario = parse_scenario(scenario_dict(nodes=5))
    with pytest.raises(ScenarioError, match=r"^job\.nodes: must be ≤ cluster\.nodes \(4\) \(got 5\)$"):
        check_scenario(scenario, catalog)


def test_check_scenario_rejects_fp8_on_a100(catalog):
    scenario = parse_scenario(scenario_dict(precision="fp8"))
    with pytest.raises(ScenarioError, match=r"job\.precision: a100-sxm-80gb has no fp8"):
        check_scenario(scenario, catalog)


def test_check_scenario_rejects_unknown_what_if_gpu(catalog):
    scenario = parse_scenario(scenario_dict(what_if={"gpu": "tpu-v9"}))
    with pytest.raises(ScenarioError, match=r"^what_if.gpu: unknown slug 'tpu-v9'"):
        check_scenario(scenario, catalog)


def test_a_checked_scenario_is_validated_once_against_its_catalog(catalog, monkeypatch):
    import dataclasses

    from scenarios.sim import predict
    from scenarios.sim.format import scenario as scenario_module

    checked = check_scenario(parse_scenario(scenario_dict()), catalog)
    assert isinstance(checked, CheckedScenario) and checked.catalog is catalog
    calls = []
    original = scenario_module.check_scenario
    monkeypatch.setattr(scenario_module, "check_scenario", lambda *a: calls.append(1) or original(*a))
    assert checked_scenario(checked, catalog) is checked
    step = predict(checked, catalog=catalog).step_time_s
    assert calls == []  # a CheckedScenario of this catalog is not validated again
    assert predict(checked.scenario, catalog=catalog).step_time_s == step
    assert len(calls) == 1  # a plain Scenario always is
    other = dataclasses.replace(catalog)  # equal content, another catalog: validated again
    assert checked_scenario(checked, other).catalog is other
    assert len(calls) == 2


def test_a_checked_scenario_of_another_catalog_is_refused_when_that_catalog_refuses_it(catalog):
    import dataclasses

    checked = check_scenario(parse_scenario(scenario_dict()), catalog)
    servers = {k: v for k, v in catalog.servers.items() if k != "dgx-a100"}
    with pytest.raises(ScenarioError, match=r"^cluster\.server"):
        checked_scenario(checked, dataclasses.replace(catalog, servers=servers))
