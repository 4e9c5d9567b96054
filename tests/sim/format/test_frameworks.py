"""Framework presets: what each sets, the default, explicit keys overriding, fp8 (TE)."""

from __future__ import annotations

import numpy as np
import pytest

from scenarios.sim import ScenarioError, parse_scenario, predict
from scenarios.sim.format.frameworks import FRAMEWORKS
from scenarios.sim.format.scenario import ModelSpec
from scenarios.sim.step.candidates import CandidateLayouts
from scenarios.sim.step.efficiency import ComputeRates, EfficiencyParams, layer_times
from scenarios.sim.step.memory import FP8_WEIGHT_COPY_BYTES, activation_bytes_per_layer, memory_per_gpu
from tests.sim._scenarios import scenario_dict

LLAMA_8B = ModelSpec(
    layers=32, hidden=4096, heads=32, vocab=128256, seq_len=8192, kv_heads=8, ffn_hidden=14336, mlp="swiglu"
)


def _job(**job):
    return parse_scenario(scenario_dict(**job)).job


def test_every_preset_names_its_release_and_source():
    assert set(FRAMEWORKS) == {"megatron-2022", "megatron-core", "nemo-fp8", "deepspeed"}
    for preset in FRAMEWORKS.values():
        assert preset.release and len(preset.source) > 40


def test_default_is_the_2022_stack_for_fp16_and_megatron_core_otherwise():
    old = _job(precision="fp16")
    assert old.framework == "megatron-2022"
    assert (old.overlap_dp, old.overlap_tp, old.overlap_pp, old.attention) == (
        False,
        False,
        False,
        "standard",
    )
    new = _job(precision="bf16")
    assert new.framework == "megatron-core"
    assert (new.overlap_dp, new.overlap_tp, new.overlap_pp, new.attention) == (True, False, True, "flash")


def test_nemo_fp8_sets_fp8_and_every_overlap():
    job = _job(framework="nemo-fp8", precision=None)
    assert job.precision == "fp8"
    assert (job.overlap_dp, job.overlap_tp, job.overlap_pp, job.attention) == (True, True, True, "fused")


def test_explicit_job_keys_override_the_preset():
    job = _job(framework="nemo-fp8", precision="bf16", overlap_tp=False, attention="standard")
    assert (job.precision, job.overlap_tp, job.attention) == ("bf16", False, "standard")
    assert job.overlap_pp is True  # not named: the preset's
    old = _job(framework="megatron-2022", precision="bf16", overlap_dp=True)
    assert old.overlap_dp is True and old.overlap_pp is False


def test_a_stack_without_fp8_rejects_an_fp8_job_by_name():
    with pytest.raises(ScenarioError, match=r"job\.precision: megatron-2022 has no fp8"):
        _job(framework="megatron-2022", precision="fp8")
    with pytest.raises(ScenarioError, match=r"job\.framework"):
        _job(framework="jax-2030")


def test_deepspeed_reduces_in_its_larger_buckets(catalog):
    # 20 layers of 12 x 8192^2 / 8 + the tied embedding 51200 x 8192 / 8 on one GPU (tp 8,
    # pp 1): 2.07 G parameters, 52 buckets of Megatron-Core's 40 M, 5 of DeepSpeed's 5e8.
    model = {"layers": 20, "hidden": 8192, "heads": 64}
    core = predict(parse_scenario(scenario_dict(model=model, framework="megatron-core")), catalog=catalog)
    ds = predict(parse_scenario(scenario_dict(model=model, framework="deepspeed")), catalog=catalog)
    assert core.details["dp_buckets"] == 52
    assert ds.details["dp_buckets"] == 5


def test_fp8_runs_the_linear_gemms_in_fp8_and_attention_in_bf16():
    eff = EfficiencyParams.from_mapping(None)
    layouts = CandidateLayouts(1, micro_batch=1, tp=4)
    bf16 = layer_times(LLAMA_8B, layouts, ComputeRates(peak_tflops=989.0, hbm_tbps=3.35, eff=eff))
    fp8_rates = ComputeRates(peak_tflops=1979.0, hbm_tbps=3.35, eff=eff, bf16_peak_tflops=989.0)
    fp8 = layer_times(LLAMA_8B, layouts, fp8_rates)
    bf16_linear = sum(float(t) for t in bf16.tp_gemms_s)
    fp8_linear = sum(float(t) for t in fp8.tp_gemms_s)
    assert fp8_linear == pytest.approx(bf16_linear * 989.0 / 1979.0, rel=0.02)
    attention_bf16 = float(bf16.gemm_forward_s) - bf16_linear
    attention_fp8 = float(fp8.gemm_forward_s) - fp8_linear
    assert attention_fp8 == pytest.approx(attention_bf16, rel=1e-12)
    assert float(fp8.logits_forward_s) == pytest.approx(float(bf16.logits_forward_s), rel=1e-12)
    # The fp8 casts (3 B per GEMM-input element) are extra element-wise work.
    tokens, h, f = 8192.0, 4096.0, 14336.0
    cast = 3.0 * tokens * (3 * h + f) / 4 / (3.35e12 * 0.7)
    assert float(fp8.elementwise_forward_s - bf16.elementwise_forward_s) == pytest.approx(cast, rel=1e-9)


def test_fp8_memory_keeps_weight_copies_unless_the_weights_live_in_fp8():
    layouts = CandidateLayouts(64, micro_batch=1, tp=4, pp=1, dp=8, zero=1)  # 8 microbatches
    bf16 = memory_per_gpu(LLAMA_8B, layouts, hbm_gib=80.0)
    fp8 = memory_per_gpu(LLAMA_8B, layouts, hbm_gib=80.0, fp8=True)
    fp8_params = memory_per_gpu(LLAMA_8B, layouts, hbm_gib=80.0, fp8=True, fp8_params=True)
    h, kv, f = 4096.0, 1024.0, 14336.0
    matrices = 32 * (h * (h + 2 * kv) + h * h + 3 * h * f) / 4
    assert float(fp8["weights"] - bf16["weights"]) == pytest.approx(FP8_WEIGHT_COPY_BYTES * matrices)
    assert float(fp8_params["weights"]) == pytest.approx(float(bf16["weights"]))
    # Saved GEMM inputs in fp8: h + h + f bytes fewer per token and layer (over tp).
    saved = activation_bytes_per_layer(LLAMA_8B, micro_batch=1, tp=4, fp8=False)
    saved_fp8 = activation_bytes_per_layer(LLAMA_8B, micro_batch=1, tp=4, fp8=True)
    assert float(saved - saved_fp8) == pytest.approx(8192 * (2 * h + f) / 4)
    assert np.all(fp8["activations"] < bf16["activations"])


def test_nemo_fp8_beats_megatron_core_bf16_on_the_same_layout(catalog):
    model = {"layers": 8, "hidden": 8192, "heads": 64, "ffn_hidden": 28672, "kv_heads": 8}
    base = dict(model=model, cluster={"server": "dgx-h100"}, recompute="none")
    core = predict(parse_scenario(scenario_dict(framework="megatron-core", **base)), catalog=catalog)
    nemo = predict(parse_scenario(scenario_dict(framework="nemo-fp8", **base)), catalog=catalog)
    assert nemo.step_time_s < core.step_time_s
    assert nemo.hidden["tp"] > 0.0 and core.hidden["tp"] == 0.0
