from __future__ import annotations

import itertools

import numpy as np
import pytest

from scenarios.sim.format.scenario import ScenarioError
from scenarios.sim.step.layout import KIND_NAMES, build_layout


def _naive_groups(tp, pp, dp, cp, ep, kind):
    """Reference: decode every rank's coordinates with divmod and group by the others."""
    groups: dict[tuple, list[int]] = {}
    for rank in range(tp * pp * dp * cp):
        t, rest = rank % tp, rank // tp
        c, rest = rest % cp, rest // cp
        d, p = rest % dp, rest // dp
        e, f = (c + cp * d) % ep, (c + cp * d) // ep
        key = {
            "tp": (p, d, c),
            "cp": (p, d, t),
            "dp": (p, c, t),
            "pp": (d, c, t),
            "dp_cp": (p, t),
            "ep": (p, f, t),
            "edp": (p, e, t),
        }[kind]
        groups.setdefault(key, []).append(rank)
    return sorted(sorted(g) for g in groups.values())


@pytest.mark.parametrize(
    ("tp", "pp", "dp", "cp", "ep"),
    [(2, 3, 4, 1, 1), (4, 2, 2, 2, 2), (1, 1, 6, 2, 3), (8, 2, 4, 1, 4), (3, 1, 1, 1, 1)],
)
def test_layout_groups_match_naive_megatron_order(tp, pp, dp, cp, ep):
    layout = build_layout(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep)
    for kind in KIND_NAMES:
        groups = layout.groups(kind)
        assert groups.shape == (layout.world_size // layout.group_size(kind), layout.group_size(kind))
        assert sorted(groups.tolist()) == _naive_groups(tp, pp, dp, cp, ep, kind)


def test_layout_every_rank_in_exactly_one_group_per_kind():
    layout = build_layout(tp=2, pp=2, dp=4, cp=2, ep=4)
    for kind in KIND_NAMES:
        counts = np.bincount(layout.groups(kind).ravel(), minlength=layout.world_size)
        assert np.all(counts == 1), kind


def test_layout_tensor_parallel_is_fastest_axis():
    layout = build_layout(tp=8, pp=2, dp=2)
    np.testing.assert_array_equal(layout.groups("tp")[1], np.arange(8, 16))
    np.testing.assert_array_equal(layout.groups("dp")[0], [0, 8])
    np.testing.assert_array_equal(layout.groups("pp")[0], [0, 16])


def test_layout_rank_gpu_placement_maps_groups():
    placement = np.arange(16)[::-1].copy()
    layout = build_layout(tp=4, pp=1, dp=4, rank_gpu=placement)
    np.testing.assert_array_equal(layout.gpu_groups("tp")[0], [15, 14, 13, 12])


def test_layout_on_part_of_a_cluster_keeps_tensor_groups_inside_servers():
    # A job on nodes 1 and 3 of four 8-GPU servers (scenarios.sim.placement's rank -> GPU map).
    placement = np.concatenate([np.arange(8, 16), np.arange(24, 32)])
    layout = build_layout(tp=8, pp=2, dp=1, rank_gpu=placement)
    np.testing.assert_array_equal(layout.gpu_groups("tp"), [np.arange(8, 16), np.arange(24, 32)])
    np.testing.assert_array_equal(layout.gpu_groups("pp")[0], [8, 24])


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tp": 0, "pp": 1, "dp": 1}, "parallel.tp"),
        ({"tp": 1, "pp": -2, "dp": 1}, "parallel.pp"),
        ({"tp": 2, "pp": 1, "dp": 3, "ep": 2}, "parallel.ep"),
        ({"tp": 2, "pp": 2, "dp": 2, "n_gpus": 16}, "parallel:"),
        ({"tp": 2, "pp": 1, "dp": 1, "rank_gpu": [0, 0]}, "rank_gpu"),
        ({"tp": 1.5, "pp": 1, "dp": 1}, "parallel.tp"),
    ],
)
def test_build_layout_rejects_bad_degrees_naming_the_field(kwargs, field):
    with pytest.raises(ScenarioError, match=field.replace(".", r"\.")):
        build_layout(**kwargs)


def test_layout_unknown_kind_is_rejected():
    layout = build_layout(tp=2, pp=1, dp=1)
    with pytest.raises(ValueError, match="kind"):
        layout.groups("xp")


def test_layout_all_small_shapes_partition_ranks():
    for tp, pp, dp, cp in itertools.product((1, 2, 3), (1, 2), (1, 2, 4), (1, 2)):
        layout = build_layout(tp=tp, pp=pp, dp=dp, cp=cp)
        for kind in ("tp", "pp", "dp", "cp", "dp_cp"):
            assert np.array_equal(np.sort(layout.groups(kind).ravel()), np.arange(layout.world_size))
