from __future__ import annotations

import numpy as np
import pytest

from scenarios.sim.step.stragglers import MIN_JITTER_FACTOR, straggler_effect

GPU_NODE = np.repeat(np.arange(16), 8)


def _naive_step_factors(gpu_node, spread, slow, n_steps, seed):
    """Reference: one step at a time, one GPU at a time."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_steps):
        row = rng.standard_normal(gpu_node.size)
        worst = 0.0
        for g, z in enumerate(row):
            factor = max(1.0 + spread * z, MIN_JITTER_FACTOR) * slow.get(int(gpu_node[g]), 1.0)
            worst = max(worst, factor)
        out.append(worst)
    return np.array(out)


def test_straggler_effect_no_spread_no_slow_nodes_costs_nothing():
    effect = straggler_effect(GPU_NODE, compute_time_s=10.0, rng=0)
    assert effect.time_s == 0
    np.testing.assert_array_equal(effect.per_gpu_slowdown, np.ones(GPU_NODE.size))


def test_straggler_effect_matches_naive_reference():
    slow = {3: 1.3}
    effect = straggler_effect(GPU_NODE, compute_time_s=2.0, spread=0.05, slow_nodes=slow, n_steps=20, rng=7)
    expected = _naive_step_factors(GPU_NODE, 0.05, slow, 20, 7)
    np.testing.assert_allclose(effect.step_factor, expected)
    assert effect.time_s == pytest.approx((expected.mean() - 1) * 2.0)


def test_straggler_effect_blocks_equal_one_draw(monkeypatch):
    from scenarios.sim.step import stragglers

    whole = straggler_effect(GPU_NODE, compute_time_s=1.0, spread=0.1, n_steps=9, rng=3)
    monkeypatch.setattr(stragglers, "_MAX_DRAWS_PER_BLOCK", 2 * GPU_NODE.size)
    blocked = straggler_effect(GPU_NODE, compute_time_s=1.0, spread=0.1, n_steps=9, rng=3)
    np.testing.assert_array_equal(whole.step_factor, blocked.step_factor)
    np.testing.assert_allclose(whole.per_gpu_slowdown, blocked.per_gpu_slowdown)


def test_straggler_effect_is_deterministic_for_a_seed():
    a = straggler_effect(GPU_NODE, compute_time_s=1.0, spread=0.03, rng=11)
    b = straggler_effect(GPU_NODE, compute_time_s=1.0, spread=0.03, rng=np.random.default_rng(11))
    assert a.time_s == b.time_s
    assert straggler_effect(GPU_NODE, compute_time_s=1.0, spread=0.03, rng=12).time_s != a.time_s


def test_straggler_effect_grows_with_job_size():
    small = straggler_effect(np.zeros(8, int), compute_time_s=1.0, spread=0.02, n_steps=400, rng=0)
    large = straggler_effect(
        np.repeat(np.arange(512), 8), compute_time_s=1.0, spread=0.02, n_steps=400, rng=0
    )
    assert large.time_s > small.time_s > 0
    # E[max of n normals] ~ sqrt(2 ln n): 4096 GPUs -> ~3.5 sigma
    assert large.expected_step_factor == pytest.approx(1 + 0.02 * 3.5, abs=0.02 * 0.5)


def test_straggler_effect_slow_node_sets_the_pace():
    effect = straggler_effect(GPU_NODE, compute_time_s=4.0, slow_nodes=[5], slow_factor=1.5, rng=0)
    assert effect.time_s == pytest.approx(2.0)
    assert effect.per_gpu_slowdown[GPU_NODE == 5].tolist() == [1.5] * 8
    assert np.all(effect.per_gpu_slowdown[GPU_NODE != 5] == 1.0)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"spread": -0.1}, "spread"),
        ({"spread": 3.0}, "spread"),
        ({"compute_time_s": -1.0}, "compute_time_s"),
        ({"n_steps": 0}, "n_steps"),
        ({"slow_nodes": [99]}, "slow_nodes"),
        ({"slow_nodes": {1: 0.5}}, "slow_nodes"),
        ({"slow_nodes": [1], "slow_factor": 0.9}, "slow_factor"),
    ],
)
def test_straggler_effect_rejects_bad_input_naming_the_field(kwargs, field):
    args = {"compute_time_s": 1.0, **kwargs}
    with pytest.raises(ValueError, match=field):
        straggler_effect(GPU_NODE, rng=0, **args)
