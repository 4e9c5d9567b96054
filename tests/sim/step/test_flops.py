from __future__ import annotations

import numpy as np
import pytest

from scenarios.sim.format.scenario import ModelSpec, MoeSpec
from scenarios.sim.step.flops import (
    hardware_flops_per_step,
    layer_forward_flops,
    model_flops_per_step,
    total_params,
)


def gpt(layers=96, hidden=12288, heads=96, vocab=51200, seq_len=2048) -> ModelSpec:
    return ModelSpec(
        layers=layers,
        hidden=hidden,
        heads=heads,
        vocab=vocab,
        seq_len=seq_len,
        kv_heads=heads,
        ffn_hidden=4 * hidden,
    )


@pytest.mark.parametrize("size", [(24, 2304, 24), (96, 12288, 96), (128, 25600, 160)])
def test_hardware_flops_full_recompute_matches_megatron_closed_form(size):
    layers, h, heads = size
    model = gpt(layers, h, heads)
    batch, s, vocab = 512, 2048, 51200
    closed = 96 * batch * s * layers * h**2 * (1 + s / (6 * h) + vocab / (16 * layers * h))
    assert float(hardware_flops_per_step(model, batch, "full")) == pytest.approx(closed, rel=1e-12)


@pytest.mark.parametrize("size", [(24, 2304, 24), (105, 20480, 128)])
def test_model_flops_no_recompute_matches_closed_form(size):
    layers, h, heads = size
    model = gpt(layers, h, heads)
    batch, s, vocab = 64, 2048, 51200
    closed = 72 * batch * s * layers * h**2 * (1 + s / (6 * h) + vocab / (12 * layers * h))
    assert float(model_flops_per_step(model, batch)) == pytest.approx(closed, rel=1e-12)
    assert float(hardware_flops_per_step(model, batch, "none")) == pytest.approx(closed, rel=1e-12)


def test_selective_recompute_adds_the_attention_core_once():
    model = gpt(48, 6144, 64)
    batch, s = 4, 2048
    extra = hardware_flops_per_step(model, batch, "selective") - model_flops_per_step(model, batch)
    assert float(extra) == pytest.approx(4 * batch * s * s * 6144 * 48, rel=1e-12)


def test_layer_forward_flops_counts_gqa_and_swiglu():
    model = ModelSpec(
        layers=1, hidden=4096, heads=32, vocab=32000, seq_len=4096, kv_heads=8, ffn_hidden=14336, mlp="swiglu"
    )
    parts = layer_forward_flops(model, 10)
    assert float(parts["qkv"]) == 2 * 10 * 4096 * (4096 + 2 * 1024)
    assert float(parts["mlp"]) == 2 * 3 * 10 * 4096 * 14336
    assert float(parts["attention"]) == 4 * 10 * 4096 * 4096


def test_total_params_llama3_405b():
    model = ModelSpec(
        layers=126,
        hidden=16384,
        heads=128,
        vocab=128256,
        seq_len=8192,
        kv_heads=8,
        ffn_hidden=53248,
        mlp="swiglu",
    )
    assert total_params(model) == pytest.approx(405e9, rel=0.01)


def test_total_params_gpt3_175b():
    assert total_params(gpt()) == pytest.approx(175e9, rel=0.01)


def test_moe_flops_scale_with_top_k_not_expert_count():
    base = dict(layers=2, hidden=1024, heads=8, vocab=1000, seq_len=512, kv_heads=8, ffn_hidden=4096)
    two = ModelSpec(**base, moe=MoeSpec(experts=8, top_k=2, expert_ffn_hidden=4096))
    many = ModelSpec(**base, moe=MoeSpec(experts=64, top_k=2, expert_ffn_hidden=4096))
    router = 2 * 100 * 1024 * (64 - 8)
    diff = layer_forward_flops(many, 100)["mlp"] - layer_forward_flops(two, 100)["mlp"]
    assert float(diff) == router
    dense = layer_forward_flops(ModelSpec(**base), 100)["mlp"]
    assert float(layer_forward_flops(two, 100)["mlp"]) == pytest.approx(2 * float(dense) + 2 * 100 * 1024 * 8)


def test_flops_broadcast_over_candidate_arrays():
    model = gpt(24, 2304, 24)
    batches = np.array([16, 32, 64])
    values = model_flops_per_step(model, batches)
    assert values.shape == (3,)
    assert values[2] == pytest.approx(4 * values[0])
