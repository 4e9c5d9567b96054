from __future__ import annotations

import numpy as np
import pytest

from scenarios.sim.memory import (
    GIB,
    activation_bytes_per_layer,
    in_flight_microbatches,
    memory_per_gpu,
)
from scenarios.sim.scenario import ModelSpec

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


def test_flash_attention_drops_the_score_term():
    flash = activation_bytes_per_layer(GPT_22B, micro_batch=1, tp=1, recompute=0, flash=True)
    selective = activation_bytes_per_layer(GPT_22B, micro_batch=1, tp=1, recompute=1, flash=False)
    assert float(flash) == pytest.approx(float(selective))


def test_in_flight_microbatches_1f1b_and_interleaved():
    assert float(in_flight_microbatches(8, 1, 64)) == 8
    assert float(in_flight_microbatches(8, 3, 64)) == pytest.approx(8 * (1 + 7 / 24))
    assert float(in_flight_microbatches(8, 1, 4)) == 4


def test_zero_stages_shard_optimizer_then_gradients_then_weights():
    kwargs = dict(micro_batch=1, tp=8, pp=1, dp=16, microbatches=8, hbm_gib=80.0)
    m = [memory_per_gpu(GPT_22B, zero=z, **kwargs) for z in range(4)]
    assert float(m[1]["optimizer"]) == pytest.approx(float(m[0]["optimizer"]) / 16)
    assert float(m[2]["gradients"]) == pytest.approx(float(m[1]["gradients"]) / 16)
    assert float(m[3]["weights"]) == pytest.approx(float(m[2]["weights"]) / 16)
    totals = [float(x["total"]) for x in m]
    assert totals == sorted(totals, reverse=True)


def test_memory_weights_are_two_bytes_per_parameter_on_the_first_stage():
    m = memory_per_gpu(GPT_22B, micro_batch=1, tp=8, pp=1, dp=1, microbatches=1, hbm_gib=80.0)
    # Matrices split over tp; layer norms are replicated on every tp rank.
    params = 48 * (12 * 6144**2 / 8 + 4 * 6144) + 51200 * 6144 / 8
    assert float(m["weights"]) == pytest.approx(2 * params, rel=1e-9)
    assert float(m["total"]) == pytest.approx(
        sum(float(m[k]) for k in ("weights", "gradients", "optimizer", "activations", "reserve"))
    )


def test_memory_broadcasts_over_candidates():
    m = memory_per_gpu(
        GPT_22B,
        micro_batch=np.array([1, 2, 4]),
        tp=8,
        pp=1,
        dp=1,
        microbatches=np.array([4, 2, 1]),
        hbm_gib=80.0,
    )
    assert m["total"].shape == (3,)
    assert np.all(m["total"] / GIB > 0)
