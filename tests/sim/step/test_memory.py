from __future__ import annotations

import numpy as np
import pytest

from scenarios.sim.calibration import HELD_OUT_DIR, fitted_dir, load_cases
from scenarios.sim.format.scenario import ModelSpec
from scenarios.sim.step.candidates import CandidateLayouts
from scenarios.sim.step.memory import (
    FRAGMENTATION,
    GIB,
    RESERVE_FIXED_GIB,
    activation_bytes_per_layer,
    first_stage_layers,
    in_flight_layer_microbatches,
    in_flight_microbatches,
    memory_per_gpu,
)
from scenarios.sim.step.pipeline import pipeline_schedule
from tests.sim._calibration import need_calibration

GPT_22B = ModelSpec(
    layers=48, hidden=6144, heads=64, vocab=51200, seq_len=2048, kv_heads=64, ffn_hidden=4 * 6144
)


def test_activations_match_korthikanti_without_recompute():
    s, b, h, a, t = 2048, 4, 6144, 64, 8
    expected = s * b * h / t * (34 + 5 * a * s / h)
    got = activation_bytes_per_layer(GPT_22B, micro_batch=b, tp=t, recompute=0, flash=False)
    assert float(got) == pytest.approx(expected, rel=1e-12)


def test_activations_selective_and_full_recompute_match_korthikanti():
    s, b, h, t = 2048, 4, 6144, 8
    selective = activation_bytes_per_layer(GPT_22B, micro_batch=b, tp=t, recompute=1, flash=False)
    full = activation_bytes_per_layer(GPT_22B, micro_batch=b, tp=t, recompute=2, flash=False)
    assert float(selective) == pytest.approx(34 * s * b * h / t, rel=1e-12)
    assert float(full) == pytest.approx(2 * s * b * h / t, rel=1e-12)


def test_flash_attention_stores_only_a_log_sum_exp_instead_of_the_scores():
    flash = activation_bytes_per_layer(GPT_22B, micro_batch=1, tp=1, recompute=0, flash=True)
    selective = activation_bytes_per_layer(GPT_22B, micro_batch=1, tp=1, recompute=1, flash=False)
    lse = 4 * 64 * 2048  # one fp32 per head and token
    assert float(flash) == pytest.approx(float(selective) + lse, rel=1e-12)


def test_in_flight_microbatches_1f1b_and_interleaved():
    assert float(in_flight_microbatches(8, 1, 64)) == 8
    assert float(in_flight_microbatches(8, 3, 64)) == pytest.approx(8 * (1 + 7 / 24))
    assert float(in_flight_microbatches(8, 1, 4)) == 4


def test_zero_stages_shard_optimizer_then_gradients_then_weights():
    kwargs = dict(micro_batch=1, tp=8, pp=1, dp=16)  # 8 microbatches of 128 sequences
    m = [memory_per_gpu(GPT_22B, CandidateLayouts(128, zero=z, **kwargs), hbm_gib=80.0) for z in range(4)]
    assert float(m[1]["optimizer"]) == pytest.approx(float(m[0]["optimizer"]) / 16)
    assert float(m[2]["gradients"]) == pytest.approx(float(m[1]["gradients"]) / 16)
    assert float(m[3]["weights"]) == pytest.approx(float(m[2]["weights"]) / 16)
    totals = [float(x["total"]) for x in m]
    assert totals == sorted(totals, reverse=True)


def test_memory_weights_are_two_bytes_per_parameter_on_the_first_stage():
    m = memory_per_gpu(GPT_22B, CandidateLayouts(1, micro_batch=1, tp=8, pp=1, dp=1), hbm_gib=80.0)
    # Matrices split over tp; layer norms are replicated on every tp rank.
    params = 48 * (12 * 6144**2 / 8 + 4 * 6144) + 51200 * 6144 / 8
    assert float(m["weights"]) == pytest.approx(2 * params, rel=1e-9)
    assert float(m["total"]) == pytest.approx(
        sum(float(m[k]) for k in ("weights", "gradients", "optimizer", "activations", "reserve"))
    )


def test_memory_broadcasts_over_candidates():
    layouts = CandidateLayouts(4, micro_batch=np.array([1, 2, 4]), tp=8, pp=1, dp=1)
    np.testing.assert_array_equal(layouts.microbatches, [4, 2, 1])
    m = memory_per_gpu(GPT_22B, layouts, hbm_gib=80.0)
    assert m["total"].shape == (3,)
    assert np.all(m["total"] / GIB > 0)


# A small Llama-style model (swiglu, GQA, no dropout) for a case worked out by hand.
SMALL_LLAMA = ModelSpec(
    layers=10, hidden=1024, heads=16, vocab=32000, seq_len=2048, kv_heads=4, ffn_hidden=2816, mlp="swiglu"
)
LLAMA_405B = ModelSpec(
    layers=126,
    hidden=16384,
    heads=128,
    vocab=128256,
    seq_len=8192,
    kv_heads=8,
    ffn_hidden=53248,
    mlp="swiglu",
)


def _schedule_peak(first_layers, p, v, m) -> int:
    """Peak (layer, microbatch) activation sets on stage 0, walking Megatron's op order."""
    schedule = pipeline_schedule(p, v, m)
    base, rem = divmod(first_layers, v)
    layers = np.array([base + (c >= v - rem) for c in range(v)])
    held = np.where(schedule.backward[0], -1, 1) * layers[schedule.chunk[0]]
    return int(np.cumsum(held).max())


@pytest.mark.parametrize("p", [2, 4, 8])
@pytest.mark.parametrize("v", [1, 2, 3, 4])
def test_in_flight_layers_are_the_peak_of_megatrons_schedule(p, v):
    for m in (p, 2 * p, 3 * p):
        for first in range(max(v - 2, 0), 3 * v + 1):
            got = float(in_flight_layer_microbatches(first, p, v, m))
            assert got == _schedule_peak(first, p, v, m), (first, m)


def test_first_stage_gives_a_layer_to_the_embedding_when_two_slots_are_spare():
    assert float(first_stage_layers(126, 16)) == 7  # Llama 3: 128 slots, 126 layers
    assert float(first_stage_layers(96, 8)) == 12  # GPT-3 175B: no spare slot
    assert float(first_stage_layers(127, 16)) == 8  # one spare slot goes to the output layer
    assert float(first_stage_layers(10, 1)) == 10


def test_small_case_matches_the_formula_term_by_term():
    """tp 2, pp 4, v 2, dp 4, distributed optimizer, 8 microbatches, no recompute, flash."""
    layouts = CandidateLayouts(32, micro_batch=1, tp=2, pp=4, dp=4, vpp=2, zero=1)  # 8 microbatches
    got = memory_per_gpu(SMALL_LLAMA, layouts, hbm_gib=80.0)
    # Stage 0: ceil(10/4) = 3 layers, 12 slots for 10 layers leave 2 -> 2 layers, one per chunk.
    # Its params: 2 x ((attention 2,621,440 + MLP 8,650,752) / tp 2 + norms 4,096) + embedding
    # 32,000 x 1,024 / 2 = 27,664,384.
    params = 2 * ((2_621_440 + 8_650_752) / 2 + 4_096) + 32_000 * 1_024 / 2
    assert float(got["weights"]) == 2 * params
    assert float(got["gradients"]) == 4 * params  # fp32 main_grad, not sharded by the DistOpt
    assert float(got["optimizer"]) == 12 * params / 4  # sharded over dp = 4
    # Per layer and microbatch: s b h (12 + 4 kv/h + 6 f/h) + 4 B log-sum-exp per head and token,
    # over tp: (12 x 2,097,152 + 4 x 2048 x 256 + 6 x 2048 x 2816 + 4 x 16 x 2048) / 2.
    per_layer = (12 * 2_097_152 + 4 * 2048 * 256 + 6 * 2048 * 2816 + 4 * 16 * 2048) / 2
    assert per_layer == 30_998_528
    # Warm-up 2 (p - 1) + (v - 1) p = 10 forwards, + 1 before the first backward: 11 chunks of
    # 1 layer each.
    assert float(got["activations"]) == 11 * per_layer
    reserve = RESERVE_FIXED_GIB * GIB + FRAGMENTATION * 11 * per_layer
    assert float(got["reserve"]) == pytest.approx(reserve, rel=1e-12)
    total = 2 * params + 4 * params + 3 * params + 11 * per_layer + reserve
    assert float(got["total"]) == pytest.approx(total, rel=1e-12)
    assert float(got["headroom"]) == pytest.approx(80 * GIB - total, rel=1e-12)


def _llama3_table4_cases():
    need_calibration(fitted_dir())
    fitted = [c for c in load_cases(fitted_dir()) if c.scenario.name.startswith("llama3-405b")]
    held_out = [c for c in load_cases(HELD_OUT_DIR) if c.scenario.name.startswith("llama3-405b")]
    if not fitted:
        pytest.fail(f"no Llama 3 row in {fitted_dir()} (set TWIN_CALIBRATION_DIR)")
    return fitted + held_out


def test_the_three_llama3_405b_layouts_of_table4_fit_80_gib_with_headroom():
    cases = _llama3_table4_cases()
    assert len(cases) == 3
    # By hand: stage 0 holds 7 layers (its first chunk only the embedding); 7 chunks x 16
    # in-flight forwards = 112 layer sets of s b h (12 + 0.25 + 19.5) / 8 + the log-sum-exp:
    # 533,200,896 B each, 55.6 GiB; weights 2 B x 3.05 G params = 5.7 GiB.
    per_layer = (31.75 * 8192 * 16384 + 4 * 128 * 8192) / 8
    for case in cases:
        job = case.scenario.job
        p = job.parallel
        layouts = CandidateLayouts(
            job.global_batch,
            micro_batch=job.micro_batch,
            tp=p.tp,
            pp=p.pp,
            dp=p.dp,
            cp=p.cp,
            vpp=p.vpp,
            zero=job.zero,
        )
        assert float(layouts.microbatches) == job.microbatches
        got = memory_per_gpu(job.model, layouts, hbm_gib=80.0)
        assert float(got["activations"]) == pytest.approx(112 * per_layer, rel=1e-12), case.scenario.name
        headroom = float(got["headroom"]) / GIB
        assert 9.5 < headroom < 10.5, (case.scenario.name, headroom)


def test_a_405b_layout_that_truly_does_not_fit_is_rejected():
    """pp 8 without interleaving or recompute: 15 layers x 8 microbatches of activations and
    unsharded fp32 gradients; more than 80 GiB by a wide margin."""
    layouts = CandidateLayouts(2048, micro_batch=1, tp=8, pp=8, dp=128, vpp=1, zero=1)  # 16 microbatches
    got = memory_per_gpu(LLAMA_405B, layouts, hbm_gib=80.0)
    assert float(got["activations"]) / GIB > 55.0
    assert float(got["headroom"]) / GIB < -20.0
