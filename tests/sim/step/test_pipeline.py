from __future__ import annotations

import itertools

import numpy as np
import pytest

from scenarios.sim.step.pipeline import (
    PHASE_CODES,
    PHASE_KINDS,
    StageTimeline,
    bubble_fraction,
    pipeline_schedule,
    pipeline_time_s,
    simulate_schedule,
    stage_layers,
)
from scenarios.sim.step.timeline import OpTimes, stage_timeline

BUBBLE = PHASE_CODES["bubble"]


def test_bubble_fraction_1f1b_and_interleaved():
    assert float(bubble_fraction(64, 1, 512)) == pytest.approx(63 / 512)
    assert float(bubble_fraction(8, 3, 64)) == pytest.approx(7 / 192)
    assert float(bubble_fraction(1, 1, 4)) == 0.0


def test_pipeline_time_is_busy_time_plus_bubble():
    assert float(pipeline_time_s(1.0, 2.0, 4, 1, 8)) == pytest.approx((8 + 3) * 3.0)
    assert float(pipeline_time_s(1.0, 2.0, 4, 2, 8)) == pytest.approx((8 + 1.5) * 3.0)
    # Every op carries one send: (m v + p - 1) op pairs of (t_f + t_b) / v + 2 p2p.
    assert float(pipeline_time_s(1.0, 2.0, 4, 2, 8, p2p_s=0.1)) == pytest.approx((16 + 3) * (1.5 + 0.2))


@pytest.mark.parametrize(
    ("layers", "pp", "inner", "last"),
    [(128, 64, 2, 2), (126, 16, 8, 7), (10, 4, 3, 2), (5, 4, 2, 1), (24, 1, 24, 24)],
)
def test_stage_layers_balances_and_lightens_the_last_stage(layers, pp, inner, last):
    got_inner, got_last = stage_layers(layers, pp)
    assert (float(got_inner), float(got_last)) == (inner, last)


def test_stage_layers_vectorized_matches_scalar():
    pps = np.array([1, 2, 3, 5, 7, 16])
    inner, last = stage_layers(126, pps)
    for i, p in enumerate(pps):
        assert (inner[i], last[i]) == tuple(float(x) for x in stage_layers(126, int(p)))


# --- the schedule: Megatron's order, simulated ---------------------------------------------


def _megatron_order(p, v, m):
    """Naive reference: each stage's ops as schedules.py's loops issue them, (kind, mb, chunk)."""
    table = [(g + i, c) for g in range(0, m, p) for c in range(v) for i in range(min(p, m - g))]
    stages = []
    for s in range(p):
        warmup = min(p - s - 1, m) if v == 1 else min((p - s - 1) * 2 + (v - 1) * p, m * v)
        ops = [("F", *table[k]) for k in range(warmup)]
        for k in range(m * v - warmup):
            mb, c = table[warmup + k]
            ops.append(("F", mb, c))
            mb, c = table[k]
            ops.append(("B", mb, v - 1 - c))
        ops += [("B", table[k][0], v - 1 - table[k][1]) for k in range(m * v - warmup, m * v)]
        stages.append(ops)
    return stages


def _naive_start_times(p, v, m, forward_s, backward_s):
    """Reference event simulation: run any stage whose next op has its input, until done."""
    order = _megatron_order(p, v, m)
    end, start = {}, {}
    free, nxt = [0.0] * p, [0] * p
    while any(nxt[s] < len(order[s]) for s in range(p)):
        progressed = False
        for s in range(p):
            while nxt[s] < len(order[s]):
                kind, mb, c = order[s][nxt[s]]
                vs = c * p + s
                if kind == "F":
                    need = ("F", mb, vs - 1) if vs > 0 else None
                else:
                    need = ("F", mb, vs) if vs == p * v - 1 else ("B", mb, vs + 1)
                if need is not None and need not in end:
                    break
                begin = max(free[s], end[need] if need else 0.0)
                start[(kind, mb, vs)] = begin
                end[(kind, mb, vs)] = free[s] = begin + (forward_s if kind == "F" else backward_s)
                nxt[s] += 1
                progressed = True
        assert progressed, "reference deadlock"
    return order, start


@pytest.mark.parametrize(("p", "v", "m"), [(1, 1, 5), (2, 1, 1), (4, 1, 3), (4, 1, 8), (3, 2, 6), (4, 3, 8)])
def test_pipeline_schedule_is_megatron_order(p, v, m):
    schedule = pipeline_schedule(p, v, m)
    order = _megatron_order(p, v, m)
    kind = np.where(schedule.backward, "B", "F")
    for s in range(p):
        got = list(
            zip(kind[s].tolist(), schedule.microbatch[s].tolist(), schedule.chunk[s].tolist(), strict=True)
        )
        assert got == order[s]
    warmup = [min(p - s - 1, m) if v == 1 else min(2 * (p - s - 1) + (v - 1) * p, m * v) for s in range(p)]
    assert schedule.warmup.tolist() == warmup


def test_simulate_schedule_matches_naive_event_simulation_on_random_cases():
    rng = np.random.default_rng(5)
    for _ in range(25):
        p = int(rng.integers(1, 7))
        v = int(rng.integers(1, 4)) if p > 1 else 1
        m = p * int(rng.integers(1, 4)) if v > 1 else int(rng.integers(1, 3 * p + 2))
        forward_s, backward_s = rng.uniform(0.1, 2.0, 2)
        start, end = simulate_schedule(pipeline_schedule(p, v, m), forward_s, backward_s)
        order, reference = _naive_start_times(p, v, m, forward_s, backward_s)
        for s in range(p):
            expected = [reference[(k, mb, c * p + s)] for k, mb, c in order[s]]
            np.testing.assert_allclose(start[s], expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(
            end - start, np.where(pipeline_schedule(p, v, m).backward, backward_s, forward_s)
        )


@pytest.mark.parametrize(
    ("p", "v", "m", "t_f", "t_b", "p2p"),
    [
        (4, 1, 8, 1.0, 2.0, 0.0),
        (8, 1, 3, 1.0, 2.0, 0.05),  # fewer microbatches than stages
        (16, 1, 64, 1.0, 2.0, 0.01),
        (4, 2, 8, 1.0, 2.0, 0.0),  # Megatron interleaved, t_b = 2 t_f
        (8, 4, 16, 1.0, 2.0, 0.02),
        (16, 8, 32, 1.0, 2.0, 0.003),
        (4, 3, 4, 1.0, 3.0, 0.1),  # every microbatch in warm-up on the first stages
    ],
)
def test_schedule_makespan_equals_the_closed_form(p, v, m, t_f, t_b, p2p):
    _, end = simulate_schedule(pipeline_schedule(p, v, m), t_f / v + p2p, t_b / v + p2p)
    assert end.max() == pytest.approx(float(pipeline_time_s(t_f, t_b, p, v, m, p2p_s=p2p)), rel=1e-12)


def test_pipeline_schedule_rejects_interleaving_without_a_multiple_of_pp():
    with pytest.raises(ValueError, match="multiple of pp"):
        pipeline_schedule(4, 2, 6)


# --- the per-stage timeline ----------------------------------------------------------------


def _timeline(p, v, m, *, t_f=1.0, t_b=2.0, comm=(0.0, 0.0), p2p=0.0, tail=()):
    """Timeline with per-microbatch stage times t_f, t_b (split over v chunks)."""
    return stage_timeline(
        pipeline_schedule(p, v, m),
        OpTimes(
            forward_compute_s=t_f / v,
            forward_comm_s=comm[0] / v,
            backward_compute_s=t_b / v,
            backward_comm_s=comm[1] / v,
            p2p_s=p2p,
        ),
        tail_s=tail,
        gpu_stage=np.repeat(np.arange(p), 2),
    )


def _phases(timeline, s):
    n = timeline.n_phases[s]
    return timeline.kind[s, :n], timeline.start_s[s, :n], timeline.duration_s[s, :n]


#: 1F1B, 4 stages, 8 microbatches, t_f = 1, t_b = 2, computed by hand (docs/step-time-model.md
#: walks through it): "F3@3" is microbatch 3's forward starting at t = 3, "-@4" a bubble from
#: t = 4 until the next phase. Every stage ends at (8 + 3) * 3 = 33 s.
HAND_1F1B = {  # (warm-up, steady 1F1B, cool-down)
    0: (
        "F0@0 F1@1 F2@2",
        "F3@3 -@4 B0@10 F4@12 B1@13 F5@15 B2@16 F6@18 B3@19 F7@21 B4@22",
        "-@24 B5@25 -@27 B6@28 -@30 B7@31",
    ),
    1: (
        "-@0 F0@1 F1@2",
        "F2@3 -@4 B0@8 F3@10 B1@11 F4@13 B2@14 F5@16 B3@17 F6@19 B4@20 F7@22 B5@23",
        "-@25 B6@26 -@28 B7@29 -@31",
    ),
    2: (
        "-@0 F0@2",
        "F1@3 -@4 B0@6 F2@8 B1@9 F3@11 B2@12 F4@14 B3@15 F5@17 B4@18 F6@20 B5@21 F7@23 B6@24",
        "-@26 B7@27 -@29",
    ),
    3: (
        "-@0",
        "F0@3 B0@4 F1@6 B1@7 F2@9 B2@10 F3@12 B3@13 F4@15 B4@16 F5@18 B5@19 F6@21 B6@22 F7@24 B7@25",
        "-@27",
    ),
}


def test_stage_timeline_matches_hand_computed_1f1b_phase_by_phase():
    timeline = _timeline(4, 1, 8)
    assert timeline.step_time_s == 33.0
    letters = {"F": "forward", "B": "backward", "-": "bubble"}
    for s, row in HAND_1F1B.items():
        tokens = [(t[0], t[1 : t.index("@")], float(t.split("@")[1])) for t in " ".join(row).split()]
        starts = [start for _, _, start in tokens]
        kind, start, duration = _phases(timeline, s)
        assert [PHASE_KINDS[k] for k in kind] == [letters[letter] for letter, _, _ in tokens], s
        np.testing.assert_allclose(start, starts)
        np.testing.assert_allclose(duration, np.diff([*starts, 33.0]))
        microbatch = timeline.microbatch[s, : timeline.n_phases[s]]
        assert microbatch.tolist() == [int(mb) if mb else -1 for _, mb, _ in tokens]
        assert np.all(duration[kind == PHASE_CODES["forward"]] == 1.0)
        assert np.all(duration[kind == PHASE_CODES["backward"]] == 2.0)


@pytest.mark.parametrize(("p", "m"), [(2, 2), (4, 4), (4, 9), (8, 16), (6, 19)])
@pytest.mark.parametrize(("t_f", "t_b"), [(1.0, 2.0), (1.0, 0.5)])
def test_stage_timeline_first_and_last_stage_mirror_fill_and_drain(p, m, t_f, t_b):
    """What is asserted (1F1B, m >= p, op lengths a = t_f and b = t_b):

    * op order on stage s: p - 1 - s warm-up forwards, then m - (p - 1 - s) forward/backward
      pairs, then p - 1 - s cool-down backwards;
    * the last stage idles (p - 1) a before its first forward (fill) and (p - 1) b after its
      last backward (drain), and nowhere else;
    * stage 0 runs its first p forwards back to back from t = 0, then idles (p - 1) b waiting
      for microbatch 0's gradient (the mirror of the last stage's drain), runs the steady
      state without idling, and waits a before each of its p - 1 cool-down backwards (the
      mirror of the last stage's fill);
    * both stages' bubbles total (p - 1)(a + b), as does every stage's.
    """
    timeline = _timeline(p, 1, m, t_f=t_f, t_b=t_b)
    schedule = pipeline_schedule(p, 1, m)
    for s in range(p):
        warm = p - 1 - s
        expected = [False] * warm + [False, True] * (m - warm) + [True] * warm
        assert schedule.backward[s].tolist() == expected
    kind, start, duration = _phases(timeline, p - 1)
    gaps = np.flatnonzero(kind == BUBBLE)
    assert gaps.tolist() == [0, kind.size - 1]
    assert duration[gaps].tolist() == pytest.approx([(p - 1) * t_f, (p - 1) * t_b])
    kind, start, duration = _phases(timeline, 0)
    gaps = np.flatnonzero(kind == BUBBLE)
    assert gaps[0] == p and start[0] == 0.0
    assert duration[gaps[0]] == pytest.approx((p - 1) * t_b)
    last_forward = np.flatnonzero(kind == PHASE_CODES["forward"])[-1]
    cooldown = gaps[1:]
    assert cooldown.size == p - 1 and np.all(cooldown > last_forward)
    assert duration[cooldown] == pytest.approx(np.full(p - 1, t_f))
    assert np.all(kind[cooldown + 1] == PHASE_CODES["backward"])
    bubble = timeline.kind_totals_s()[:, BUBBLE]
    np.testing.assert_allclose(bubble, (p - 1) * (t_f + t_b))


@pytest.mark.parametrize("vpp", [2, 4])
def test_stage_timeline_interleaving_shrinks_the_bubble_by_vpp(vpp):
    one = _timeline(4, 1, 8).kind_totals_s()[:, BUBBLE]
    interleaved = _timeline(4, vpp, 8).kind_totals_s()[:, BUBBLE]
    np.testing.assert_allclose(interleaved, one / vpp)
    busy = 8 * 3.0
    assert _timeline(4, vpp, 8).step_time_s == pytest.approx(busy + 3 * 3.0 / vpp)


def test_stage_timeline_interleaved_wraps_chunks_around_the_pipeline():
    timeline = _timeline(4, 2, 4, t_f=1.0, t_b=2.0)
    kind, start, _ = _phases(timeline, 0)
    chunk = timeline.chunk[0, : timeline.n_phases[0]]
    forwards = kind == PHASE_CODES["forward"]
    # Stage 0 runs chunk 0 of microbatches 0..3, then chunk 1 of microbatch 0, which waits for
    # chunk 0 of microbatch 0 to leave the last stage: t = 4 stages x 0.5 s.
    assert chunk[forwards][:5].tolist() == [0, 0, 0, 0, 1]
    assert start[forwards][4] == pytest.approx(4 * 0.5)


@pytest.mark.parametrize(("p", "v", "m"), [(1, 1, 4), (4, 1, 8), (8, 1, 5), (4, 2, 8), (8, 4, 16)])
def test_stage_timeline_phases_tile_the_step_on_every_stage(p, v, m):
    tail = (("straggler", 0.3), ("dp", 0.0), ("optimizer", 0.2))
    timeline = _timeline(p, v, m, t_f=1.1, t_b=2.3, comm=(0.2, 0.4), p2p=0.01, tail=tail)
    for s in range(p):
        kind, start, duration = _phases(timeline, s)
        assert start[0] == 0.0 and np.all(duration > 0)
        np.testing.assert_allclose(start[1:], (start + duration)[:-1], rtol=0, atol=1e-12)
        assert duration.sum() == pytest.approx(timeline.step_time_s, rel=1e-12)
        assert [PHASE_KINDS[k] for k in kind[-2:]] == ["straggler", "optimizer"]  # zero dp left out
        assert np.all(timeline.kind[s, timeline.n_phases[s] :] == -1)
    totals = timeline.kind_totals_s()
    assert totals[:, PHASE_CODES["comm"]] == pytest.approx(np.full(p, m * 0.6))
    assert totals[:, PHASE_CODES["pp_wait"]] == pytest.approx(np.full(p, 2 * m * v * 0.01))


def test_stage_timeline_compact_arrays_round_trip_and_json():
    timeline = _timeline(4, 2, 8, comm=(0.1, 0.2), p2p=0.01, tail=(("dp", 0.5),))
    arrays = timeline.compact_arrays()
    assert arrays["timeline_kind"].dtype == np.int8
    assert arrays["timeline_start_s"].dtype == np.float32 == arrays["timeline_duration_s"].dtype
    back = StageTimeline.from_compact_arrays(arrays, step_time_s=timeline.step_time_s, vpp=2, microbatches=8)
    np.testing.assert_array_equal(back.kind, timeline.kind)
    np.testing.assert_allclose(back.start_s, timeline.start_s, rtol=1e-6)
    np.testing.assert_array_equal(back.gpu_stage, timeline.gpu_stage)
    payload = timeline.to_json()
    assert [stage["gpus"] for stage in payload["stages"]] == [2, 2, 2, 2]
    phases = payload["stages"][3]["phases"]
    assert phases[0]["kind"] == "bubble" and phases[-1]["kind"] == "dp"
    assert sum(ph["duration_s"] for ph in phases) == pytest.approx(timeline.step_time_s)
    assert set(phases[1]) == {"kind", "start_s", "duration_s"}


def test_stage_timeline_critical_stage_totals_equal_the_breakdown(catalog):
    from scenarios.sim import parse_scenario, predict
    from tests.sim._scenarios import scenario_dict

    data = scenario_dict(
        model={"layers": 8},
        parallel={"tp": 8, "pp": 4, "dp": 1, "vpp": 2},
        global_batch=16,
        micro_batch=1,
        overlap_pp=False,  # blocking sends: every kind of phase shows
        what_if={"straggler_spread": 0.03},
    )
    result = predict(parse_scenario(data), catalog=catalog)
    timeline, b = result.timeline, result.breakdown
    totals = timeline.stage_totals_s(timeline.critical_stage)
    assert b["tp"] > 0 and b["pp"] > 0 and b["bubble"] > 0 and b["straggler"] > 0
    pairs = {
        "forward + backward": (totals["forward"] + totals["backward"], b["compute"]),
        "comm": (totals["comm"], b["tp"] + b["cp"] + b["ep"]),
        **{kind: (totals[kind], b[key]) for kind, key in (("pp_wait", "pp"), ("bubble", "bubble"))},
        **{kind: (totals[kind], b[kind]) for kind in ("dp", "optimizer", "straggler")},
    }
    for name, (got, expected) in pairs.items():
        assert got == pytest.approx(expected, rel=1e-9), name
    assert timeline.step_time_s == result.step_time_s
    assert timeline.critical_stage == 0
    stages = timeline.gpu_stage
    assert stages.shape == (32,) and np.bincount(stages).tolist() == [8, 8, 8, 8]
    assert list(itertools.islice(stages, 0, 32, 8)) == [0, 1, 2, 3]  # stage = rank // (tp cp dp)
