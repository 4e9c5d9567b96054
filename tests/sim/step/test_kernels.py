"""Attention kernels (standard / flash / fused), comm-GEMM overlap's split GEMMs, and the default
straggler spread: hand-computed cases."""

from __future__ import annotations

import dataclasses

import pytest
from scipy import integrate, stats

from scenarios.sim import parse_scenario, predict, search_layouts
from scenarios.sim.format.scenario import ModelSpec, ParallelSpec
from scenarios.sim.format.schema import DEFAULT_STRAGGLER_SPREAD
from scenarios.sim.step.candidates import CandidateLayouts
from scenarios.sim.step.efficiency import (
    ComputeRates,
    EfficiencyParams,
    gemm_time_s,
    layer_times,
    tiled_attention_time_s,
)
from scenarios.sim.step.model import build_fabric
from tests.sim._scenarios import scenario_dict

LLAMA_8B = ModelSpec(
    layers=32, hidden=4096, heads=32, vocab=128256, seq_len=8192, kv_heads=8, ffn_hidden=14336, mlp="swiglu"
)
EFF = EfficiencyParams(gemm_max=0.6, gemm_half_dim=128.0, hbm_fraction=0.7, flash2_fraction=0.47)
H100 = ComputeRates(peak_tflops=989.0, hbm_tbps=3.35, eff=EFF)
ONE = CandidateLayouts(1, micro_batch=1, tp=1)
TP4 = CandidateLayouts(1, micro_batch=1, tp=4)


def _g(x):
    return x / (x + 128.0)


def test_fused_attention_pays_only_the_query_and_key_extents():
    # 32 heads of 8192 x 8192 causal scores at head dimension 128: 64 blocks of 128 rows, of
    # which the kernel computes (64 + 1) / 128 of the square.
    flops = 4.0 * 8192 * 8192 * 128 * 32 * (65.0 / 128.0)
    expected = flops / (989e12 * 0.6 * _g(8192) ** 2)
    core = tiled_attention_time_s(8192, 8192, 128, batch=32, peak_flops=989e12, eff=EFF)
    assert float(core) == pytest.approx(expected, rel=1e-12)
    # The head dimension is the tile's inner extent, not a wasted shape: twice as wide, twice
    # the time exactly (a standard GEMM pair would get relatively faster, g(256) > g(128)).
    wide = tiled_attention_time_s(8192, 8192, 256, batch=32, peak_flops=989e12, eff=EFF)
    assert float(wide) == pytest.approx(2.0 * expected, rel=1e-12)


def test_flash2_runs_at_its_fraction_of_the_fused_rate_and_standard_pays_the_square():
    fused = layer_times(LLAMA_8B, ONE, H100, attention="fused")
    flash = layer_times(LLAMA_8B, ONE, H100, attention="flash")
    standard = layer_times(LLAMA_8B, ONE, H100, attention="standard")
    core = float(tiled_attention_time_s(8192, 8192, 128, batch=32, peak_flops=989e12, eff=EFF))
    assert float(flash.forward_s - fused.forward_s) == pytest.approx(core / 0.47 - core, rel=1e-9)
    # Backward: FlashAttention's 2.5x the forward's attention work, for both tiled kernels.
    assert float(flash.backward_s - fused.backward_s) == pytest.approx(2.5 * (core / 0.47 - core), rel=1e-9)
    # Standard attention: two batched GEMMs with the head dimension as a shape, the full square.
    square = gemm_time_s(8192, 8192, 128, batch=32, peak_flops=989e12, hbm_bytes_per_s=3.35e12 * 0.7, eff=EFF)
    pair = square + gemm_time_s(
        8192, 128, 8192, batch=32, peak_flops=989e12, hbm_bytes_per_s=3.35e12 * 0.7, eff=EFF
    )
    linear = sum(float(t) for t in standard.tp_gemms_s)
    assert float(standard.gemm_forward_s) - linear == pytest.approx(float(pair), rel=1e-12)
    assert float(standard.elementwise_forward_s) > float(fused.elementwise_forward_s)  # softmax traffic


def test_a100_flash2_is_as_fast_as_fused(catalog):
    a100 = EfficiencyParams.from_mapping(catalog.gpus["a100-sxm-80gb"].efficiency)
    rates = ComputeRates(peak_tflops=312.0, hbm_tbps=2.039, eff=a100)
    flash = layer_times(LLAMA_8B, ONE, rates, attention="flash")
    fused = layer_times(LLAMA_8B, ONE, rates, attention="fused")
    assert float(flash.forward_s) == float(fused.forward_s)


def test_comm_gemm_overlap_runs_each_linear_gemm_as_tp_chunks():
    whole = layer_times(LLAMA_8B, TP4, H100)
    split = layer_times(LLAMA_8B, TP4, H100, overlap_tp=True)
    hbm = 3.35e12 * 0.7
    # QKV after the all-gather: 4 ring steps, each a GEMM of 8192 / 4 rows x (4096 + 2048) / 4.
    qkv = gemm_time_s(2048, 1536, 4096, batch=4, peak_flops=989e12, hbm_bytes_per_s=hbm, eff=EFF)
    assert float(split.tp_gemms_s[0]) == pytest.approx(float(qkv), rel=1e-12)
    assert float(split.tp_gemms_s[0]) > float(whole.tp_gemms_s[0])  # smaller shapes, lower efficiency
    # Backward: the input-gradient GEMMs are split like the forward, the weight gradients stay whole.
    extra = sum(float(s - w) for s, w in zip(split.tp_gemms_s, whole.tp_gemms_s, strict=True))
    assert float(split.forward_s - whole.forward_s) == pytest.approx(extra, rel=1e-9)
    assert float(split.backward_s - whole.backward_s) == pytest.approx(extra, rel=1e-9)
    # Without tensor parallelism there is nothing to split.
    one = layer_times(LLAMA_8B, ONE, H100, overlap_tp=True)
    assert float(one.forward_s) == float(layer_times(LLAMA_8B, ONE, H100).forward_s)


def _expected_max_of_normals(n: int) -> float:
    """E[max of n standard normals] = integral of x d(Phi(x)^n)."""
    value, _ = integrate.quad(lambda x: x * n * stats.norm.pdf(x) * stats.norm.cdf(x) ** (n - 1), -10, 10)
    return value


def test_default_straggler_term_is_the_expected_maximum_over_the_job_gpus(catalog):
    result = predict(parse_scenario(scenario_dict(what_if={"steps": 256})), catalog=catalog)
    gpus = 32  # scenario_dict's 4 DGX nodes
    pipeline = sum(result.breakdown[k] for k in ("compute", "tp", "cp", "ep", "pp", "bubble"))
    expected = DEFAULT_STRAGGLER_SPREAD * _expected_max_of_normals(gpus) * pipeline
    assert DEFAULT_STRAGGLER_SPREAD == 0.01
    # 256 drawn steps: the sample mean of the maximum is within a few standard errors.
    assert result.breakdown["straggler"] == pytest.approx(expected, rel=0.05)


def test_search_costs_the_same_stragglers_as_predict(catalog):
    scenario = parse_scenario(scenario_dict(what_if={"slow_nodes": [1], "slow_node_factor": 1.2}))
    fabric = build_fabric(scenario, catalog)
    best = search_layouts(scenario, catalog=catalog, fabric=fabric, top_k=1).best[0]
    layout = {k: best[k] for k in ("tp", "pp", "dp", "cp", "ep", "vpp")}
    job = dataclasses.replace(
        scenario.job,
        parallel=ParallelSpec(**layout),
        micro_batch=best["micro_batch"],
        recompute=best["recompute"],
        zero=best["zero"],
    )
    direct = predict(dataclasses.replace(scenario, job=job), catalog=catalog, fabric=fabric)
    # The slow node (20 %) on top of the 1 % jitter: both sides take the same draw.
    assert best["breakdown"]["straggler"] > 0.2 * best["step_time_s"] / 1.3
    assert best["breakdown"]["straggler"] == pytest.approx(direct.breakdown["straggler"], rel=1e-9)
