"""Communication hidden behind compute, as the training stacks overlap it.

Each overlap is one communication stream beside the compute stream: an op's communication can
start only when its data is ready (gradients of a bucket, the output of a GEMM chunk) and must
end before the compute that needs it (the next forward's parameters). What the overlap cannot
hide is exposed. ``stream_finish_s`` / ``prefetch_delay_s`` are the general per-op forms (used by
the tests on hand-worked cases); the ``*_exposed_s`` functions are their closed forms for equal
buckets, vectorized over candidate layouts. Sources and the hand-worked cases are in
``docs/step-time-model.md`` section 3.

All functions broadcast over candidate arrays.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BUCKET_MIN_PARAMS",
    "BUCKET_PARAMS_PER_DP_RANK",
    "bucket_count",
    "grad_reduce_exposed_s",
    "param_gather_exposed_s",
    "prefetch_delay_s",
    "stream_finish_s",
    "tp_overlap_exposed_s",
]

#: Megatron-Core's default gradient bucket: ``max(40,000,000, 1,000,000 * dp)`` parameters
#: (``megatron/core/distributed/distributed_data_parallel.py``: larger DP groups get larger
#: buckets so that ring chunks stay bandwidth-bound).
BUCKET_MIN_PARAMS = 40e6
BUCKET_PARAMS_PER_DP_RANK = 1e6


def stream_finish_s(ready_s, comm_s) -> np.ndarray:
    """End of a communication stream that runs op ``j`` (duration ``comm_s[..., j]``) as soon as
    it is ready (``ready_s[..., j]``) and the previous op is done: ``max_j (ready_j + sum_{i>=j}
    comm_i)``. Ops along the last axis, in issue order."""
    ready, comm = np.broadcast_arrays(np.asarray(ready_s, float), np.asarray(comm_s, float))
    suffix = np.cumsum(comm[..., ::-1], axis=-1)[..., ::-1]
    return (ready + suffix).max(axis=-1)


def prefetch_delay_s(need_s, comm_s) -> np.ndarray:
    """How long compute waits when its op ``j`` needs communication ``j`` done by ``need_s[j]``
    (times without waiting) and the stream runs the ops back to back from 0:
    ``max(0, max_j (sum_{i<=j} comm_i - need_j))``."""
    need, comm = np.broadcast_arrays(np.asarray(need_s, float), np.asarray(comm_s, float))
    return np.maximum((np.cumsum(comm, axis=-1) - need).max(axis=-1), 0.0)


def bucket_count(
    params, dp, *, min_params=BUCKET_MIN_PARAMS, per_dp_rank=BUCKET_PARAMS_PER_DP_RANK
) -> np.ndarray:
    """Gradient buckets of a stage's ``params``: ``max(min_params, per_dp_rank x dp)`` each
    (default Megatron-Core's; DeepSpeed's ``reduce_bucket_size`` is a flat 5e8)."""
    size = np.maximum(min_params, per_dp_rank * np.asarray(dp, float))
    return np.maximum(np.ceil(np.asarray(params, float) / size), 1.0)


def grad_reduce_exposed_s(total_comm_s, buckets, chunk_backward_s, pp, vpp) -> np.ndarray:
    """Exposed gradient reduction when buckets are reduced as the last microbatch's backward
    produces them (Megatron-Core ``overlap_grad_reduce``, DeepSpeed ``overlap_comm``).

    Stage 0's chunks finish their last backward one after the other: the interleaved schedule's
    last ``p v`` backwards run chunk ``v - 1`` first, ``p`` ops per chunk, so the buckets of the
    ``q``-th chunk to finish (``n / v`` equal buckets of ``total / n``) are ready at
    ``q p t + (j / (n/v)) t`` (``t`` = one chunk's backward), and the stage's backward ends at
    ``E = ((v - 1) p + 1) t``. The stream's finish (``stream_finish_s``) is linear in ``q`` and
    ``j`` within a chunk, so its maximum is at one of four corner buckets; exposed = finish - E,
    at least the last bucket (it is ready at ``E``). Waits for other stages in the cool-down
    would hide more (not counted).
    """
    c_total, n, t, p, v = (np.asarray(x, float) for x in (total_comm_s, buckets, chunk_backward_s, pp, vpp))
    per_chunk = np.maximum(n / v, 1.0)
    c = c_total / (per_chunk * v)
    end = ((v - 1.0) * p + 1.0) * t
    last_start = (v - 1.0) * p * t
    corners = (
        t / per_chunk + c_total,  # first bucket of the first chunk: everything after it
        t + c_total - per_chunk * c + c,  # last bucket of the first chunk
        last_start + t / per_chunk + per_chunk * c,  # first bucket of the last chunk
        end + c,  # the last bucket
    )
    return np.maximum(np.maximum.reduce(corners) - end, 0.0)


def param_gather_exposed_s(total_comm_s, buckets, chunk_forward_s, pp, vpp) -> np.ndarray:
    """Exposed parameter all-gather when the next step's forward prefetches bucket by bucket
    (Megatron-Core ``overlap_param_gather``): the first bucket is always exposed.

    Mirror of ``grad_reduce_exposed_s``: stage 0 runs ``p`` forwards of chunk 0, then of chunk
    1, ...; bucket ``j`` of chunk ``q`` is needed at ``q p t + ((j - 1) / (n/v)) t`` and the
    gathers run back to back from the step's start (``prefetch_delay_s``), maximal at a corner.
    """
    g_total, n, t, p, v = (np.asarray(x, float) for x in (total_comm_s, buckets, chunk_forward_s, pp, vpp))
    per_chunk = np.maximum(n / v, 1.0)
    g = g_total / (per_chunk * v)
    last_need = (v - 1.0) * p * t
    within = (per_chunk - 1.0) / per_chunk * t
    corners = (
        g,  # the first bucket: nothing to hide it behind
        per_chunk * g - within,  # last bucket of chunk 0
        ((v - 1.0) * per_chunk + 1.0) * g - last_need,  # first bucket of the last chunk
        g_total - last_need - within,  # the last bucket
    )
    return np.maximum(np.maximum.reduce(corners), 0.0)


def tp_overlap_exposed_s(comm_s, gemm_s, tp, *, pipelined_tail: bool) -> np.ndarray:
    """Exposed time of one tensor-parallel collective overlapped with its GEMM (Transformer
    Engine comm-GEMM overlap, userbuffers): the GEMM is split into ``tp`` chunks and chunk
    ``i``'s communication runs beside chunk ``i - 1``'s GEMM. An all-gather starts on the local
    shard, so only the excess ``max(comm - gemm, 0)`` shows; a reduce-scatter of the GEMM's
    output must also send the last chunk after it is computed (``pipelined_tail``: + comm/tp).
    """
    c, g, t = (np.asarray(x, float) for x in (comm_s, gemm_s, tp))
    tail = c / t if pipelined_tail else 0.0
    return np.maximum(c - g, 0.0) + tail
