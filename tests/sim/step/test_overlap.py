"""Communication overlap on hand-worked cases: what a bucket, a GEMM or the next op can hide."""

from __future__ import annotations

import numpy as np
import pytest

from scenarios.sim import parse_scenario, predict
from scenarios.sim.step.overlap import (
    bucket_count,
    grad_reduce_exposed_s,
    param_gather_exposed_s,
    prefetch_delay_s,
    stream_finish_s,
    tp_overlap_exposed_s,
)
from tests.sim._scenarios import scenario_dict


def test_a_bucket_that_fits_behind_the_remaining_backward_is_fully_hidden():
    # Backward ends at 10 ms; the bucket is ready at 4 ms and takes 5 ms: done at 9 ms.
    finish = stream_finish_s([4.0], [5.0])
    assert float(np.maximum(finish - 10.0, 0.0)) == 0.0


def test_a_bucket_larger_than_the_remaining_backward_is_exposed_by_the_difference():
    # Ready at 4 ms with 6 ms of backward left; 8 ms of communication shows 8 - 6 = 2 ms.
    finish = stream_finish_s([4.0], [8.0])
    assert float(finish) - 10.0 == pytest.approx(2.0)


def test_equal_buckets_behind_one_backward_expose_only_the_last():
    # 10 ms backward, 4 buckets ready at 2.5, 5, 7.5, 10 ms, 2 ms each: the stream keeps up,
    # so only the last bucket (ready when the backward ends) shows: 2 ms.
    assert float(stream_finish_s([2.5, 5.0, 7.5, 10.0], [2.0] * 4)) - 10.0 == pytest.approx(2.0)
    assert float(grad_reduce_exposed_s(8.0, 4, 10.0, 1, 1)) == pytest.approx(2.0)


def test_buckets_slower_than_the_backward_queue_up():
    # 4 ms per bucket: 2.5 + 4 x 4 = 18.5 ms, 8.5 ms past the backward = total - B (n-1)/n.
    assert float(stream_finish_s([2.5, 5.0, 7.5, 10.0], [4.0] * 4)) - 10.0 == pytest.approx(8.5)
    assert float(grad_reduce_exposed_s(16.0, 4, 10.0, 1, 1)) == pytest.approx(8.5)


@pytest.mark.parametrize(("p", "v", "n"), [(2, 2, 4), (4, 2, 8), (4, 4, 8), (8, 3, 12), (16, 8, 64)])
@pytest.mark.parametrize("per_bucket", [0.01, 0.3, 1.0, 5.0])
def test_interleaved_closed_form_equals_the_bucket_by_bucket_stream(p, v, n, per_bucket):
    """Chunk q's n/v buckets are ready during its last backward, q p chunk-backwards after the
    first chunk's; the closed form takes the stream's maximum at a corner."""
    t = 1.0
    per_chunk = n // v
    ready = [q * p * t + (j + 1) / per_chunk * t for q in range(v) for j in range(per_chunk)]
    end = ((v - 1) * p + 1) * t
    general = max(float(stream_finish_s(ready, [per_bucket] * n)) - end, 0.0)
    closed = float(grad_reduce_exposed_s(per_bucket * n, n, t, p, v))
    assert closed == pytest.approx(general, abs=1e-12)
    need = [q * p * t + j / per_chunk * t for q in range(v) for j in range(per_chunk)]
    general = float(prefetch_delay_s(need, [per_bucket] * n))
    assert float(param_gather_exposed_s(per_bucket * n, n, t, p, v)) == pytest.approx(general, abs=1e-12)


def test_parameter_gather_exposes_the_first_bucket_when_the_rest_keeps_up():
    # 10 ms forward needs buckets at 0, 2.5, 5, 7.5 ms; 2 ms each: only the first waits.
    assert float(prefetch_delay_s([0.0, 2.5, 5.0, 7.5], [2.0] * 4)) == pytest.approx(2.0)
    assert float(param_gather_exposed_s(8.0, 4, 10.0, 1, 1)) == pytest.approx(2.0)


def test_megatron_core_bucket_size():
    assert float(bucket_count(400e6, 8)) == 10  # 40 M parameters per bucket
    assert float(bucket_count(400e6, 128)) == 4  # 1 M per DP rank: 128 M
    assert float(bucket_count(1e6, 8)) == 1


def test_tp_comm_gemm_overlap():
    # An all-gather shorter than its GEMM is hidden; a reduce-scatter also sends its last
    # chunk after the GEMM (comm / tp); a longer collective shows its excess.
    assert float(tp_overlap_exposed_s(3.0, 5.0, 8, pipelined_tail=False)) == 0.0
    assert float(tp_overlap_exposed_s(4.0, 5.0, 8, pipelined_tail=True)) == pytest.approx(0.5)
    assert float(tp_overlap_exposed_s(7.0, 5.0, 8, pipelined_tail=False)) == pytest.approx(2.0)


def _pp_job(model=None, **overrides):
    data = scenario_dict(
        parallel={"tp": 8, "pp": 2, "dp": 2},
        model=model or {"layers": 8},
        global_batch=64,
        micro_batch=2,
        zero=1,
        **overrides,
    )
    return parse_scenario(data)


@pytest.mark.parametrize("kind", ["tp", "pp"])
def test_overlap_moves_time_from_exposed_to_hidden(catalog, kind):
    off = predict(_pp_job(**{f"overlap_{kind}": False}), catalog=catalog)
    on = predict(_pp_job(**{f"overlap_{kind}": True}), catalog=catalog)
    assert off.hidden[kind] == 0.0
    assert on.hidden[kind] > 0.0
    assert on.breakdown[kind] < off.breakdown[kind]
    # Exposed + hidden is the communication the layout needs either way.
    assert on.breakdown[kind] + on.hidden[kind] == pytest.approx(off.breakdown[kind], rel=1e-9)
    assert on.step_time_s < off.step_time_s


def test_dp_overlap_hides_the_buckets_behind_the_backward(catalog):
    # Stage 0 of 2 on one of 8 tp ranks: 4 x 12 x 8192^2 / 8 + embedding 51200 x 8192 / 8
    # = 455 M parameters: 12 buckets of at most 40 M.
    wide = {"layers": 8, "hidden": 8192, "heads": 64}
    off = predict(_pp_job(overlap_dp=False, model=wide), catalog=catalog)
    on = predict(_pp_job(model=wide), catalog=catalog)
    assert off.hidden["dp"] == 0.0
    assert on.breakdown["dp"] < off.breakdown["dp"]
    assert on.hidden["dp"] > 0.0
    assert on.details["dp_buckets"] == 12
