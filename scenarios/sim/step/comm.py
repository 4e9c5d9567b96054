"""Communication of one training step: the per-layer tensor / context / expert collectives,
the data-parallel synchronisation (buckets, ZeRO stages) and the bytes each kind moves.

Called by ``step.assemble.assemble_step``, which adds these to the compute and the pipeline
schedule; every function broadcasts over candidate layouts (the layout search). The model and
its sources: ``docs/step-time-model.md`` section 3.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scenarios.sim.step.flops import embedding_params, layer_params
from scenarios.sim.step.overlap import (
    bucket_count,
    grad_reduce_exposed_s,
    param_gather_exposed_s,
    tp_overlap_exposed_s,
)

__all__ = ["DpSync", "LayerComm", "dp_sync", "layer_comm", "params_updated", "step_volumes"]

#: Tensor-parallel collectives per layer with sequence parallelism (Korthikanti et al. 2022,
#: Section 4.2.2): forward all-gather + reduce-scatter around attention and around the MLP;
#: backward the same pair twice. Megatron did not overlap them with compute (SC'21), so they
#: are exposed.
TP_OPS_FORWARD = 2
TP_OPS_BACKWARD = 2
#: Gradient bytes per parameter in the data-parallel reduction: Megatron-LM all-reduces fp32
#: gradients with bf16 (``accumulate_allreduce_grads_in_fp32`` is forced on for bf16 in
#: ``megatron/training/arguments.py``) and the fp16 gradients themselves with fp16.
GRAD_COMM_BYTES = {"bf16": 4.0, "fp8": 4.0, "fp16": 2.0}
PARAM_COMM_BYTES = 2.0


def _dp_kind(cp) -> np.ndarray:
    return np.asarray(cp) > 1


@dataclass(frozen=True)
class LayerComm:
    """tp / cp / ep communication of one layer and one microbatch (s; broadcast over
    candidates), and the bytes behind it (for the step's volumes).

    Attributes
    ----------
    forward_s, backward_s : ndarray
        Exposed communication in the layer's forward and backward (with full recompute, the
        forward's again).
    tp_s, cp_s, ep_s : ndarray
        Exposed per kind, forward + backward.
    tp_hidden_s, cp_hidden_s : ndarray
        Hidden behind compute per kind.
    tp_ops : ndarray
        Tensor-parallel collectives of the layer (all-gathers + reduce-scatters).
    activation_bytes, kv_bytes, a2a_bytes : ndarray
        Per-rank buffer of one tp collective, one cp gather of K and V, one ep all-to-all.
    a2a_ops : ndarray
        All-to-alls of the layer.
    """

    forward_s: np.ndarray
    backward_s: np.ndarray
    tp_s: np.ndarray
    tp_hidden_s: np.ndarray
    cp_s: np.ndarray
    cp_hidden_s: np.ndarray
    ep_s: np.ndarray
    tp_ops: np.ndarray
    activation_bytes: np.ndarray
    kv_bytes: np.ndarray
    a2a_bytes: np.ndarray
    a2a_ops: np.ndarray


@dataclass(frozen=True)
class _KindComm:
    """One kind's communication of a layer: exposed in the forward and backward, and in all
    (before any overlap); the per-rank buffer of one of its collectives."""

    forward_s: np.ndarray
    backward_s: np.ndarray
    total_s: np.ndarray
    buffer_bytes: np.ndarray


def layer_comm(model, layouts, times, *, comm_time, overlap_tp=False, gather_bytes=2.0) -> LayerComm:
    """Exposed (and hidden) tp / cp / ep communication of one layer and one microbatch (s).

    ``layouts`` (``CandidateLayouts``) gives the micro-batch, tp, cp and recompute code;
    ``times`` (``LayerTimes``) the GEMMs and the attention a collective may hide behind.
    ``gather_bytes`` per element of the tp all-gathers: 1 with fp8, where Transformer Engine
    casts the sequence-parallel shard to fp8 before gathering it; reduce-scatters stay bf16.
    """
    tp = _tp_comm(model, layouts, times, comm_time, overlap_tp=overlap_tp, gather_bytes=gather_bytes)
    cp = _cp_comm(model, layouts, times, comm_time)
    ep = _ep_comm(model, layouts, comm_time)
    code = layouts.recompute
    return LayerComm(
        forward_s=tp.forward_s + cp.forward_s + ep.forward_s,
        backward_s=tp.backward_s + cp.backward_s + ep.backward_s,
        tp_s=tp.forward_s + tp.backward_s,
        tp_hidden_s=tp.total_s - (tp.forward_s + tp.backward_s),
        cp_s=cp.forward_s + cp.backward_s,
        cp_hidden_s=cp.total_s - (cp.forward_s + cp.backward_s),
        ep_s=ep.forward_s + ep.backward_s,
        tp_ops=np.where(
            layouts.tp > 1,
            2.0 * (TP_OPS_FORWARD + TP_OPS_BACKWARD) + np.where(code == 2, 2.0 * TP_OPS_FORWARD, 0.0),
            0.0,
        ),
        activation_bytes=tp.buffer_bytes,
        kv_bytes=cp.buffer_bytes,
        a2a_bytes=ep.buffer_bytes,
        a2a_ops=np.where(code == 2, 6.0, 4.0),
    )


def _tp_comm(model, layouts, times, comm_time, *, overlap_tp, gather_bytes) -> _KindComm:
    """Sequence-parallel all-gathers and reduce-scatters of a layer (Korthikanti §4.2.2), with
    comm-GEMM overlap when ``overlap_tp``."""
    h, s = float(model.hidden), float(model.seq_len)
    tokens = layouts.micro_batch * s / layouts.cp
    activation_bytes = tokens * h * 2.0  # all-gather output / reduce-scatter input per rank
    ag = comm_time("tp", "all_gather", tokens * h * gather_bytes)
    rs = comm_time("tp", "reduce_scatter", activation_bytes)
    tp_forward = 2.0 * TP_OPS_FORWARD * 0.5 * (ag + rs)  # 2 all-gathers + 2 reduce-scatters
    tp_backward = 2.0 * TP_OPS_BACKWARD * 0.5 * (ag + rs)
    total_forward, total_backward = tp_forward, tp_backward
    if overlap_tp:
        tp_forward, tp_backward = _tp_overlapped(ag, rs, times.tp_gemms_s, layouts.tp)
    full = layouts.recompute == 2
    tp_backward = tp_backward + np.where(full, tp_forward, 0.0)
    total_backward = total_backward + np.where(full, total_forward, 0.0)
    on = layouts.tp > 1
    return _KindComm(
        forward_s=np.where(on, tp_forward, 0.0),
        backward_s=np.where(on, tp_backward, 0.0),
        total_s=np.where(on, total_forward + total_backward, 0.0),
        buffer_bytes=activation_bytes,
    )


def _tp_overlapped(ag, rs, tp_gemms_s, tp):
    """Exposed tp collectives of a layer's forward and backward with comm-GEMM overlap.

    Forward: AG before QKV and MLP-up (ring exchange), RS after the projection and MLP-down
    (pipelined, last chunk exposed). Backward: AG of the output gradient beside the
    row-parallel dgrad, RS of the column-parallel dgrad beside its wgrad (bulk).
    """
    qkv, proj, up, down = tp_gemms_s
    forward = (
        tp_overlap_exposed_s(ag, qkv, tp, pipelined_tail=False)
        + tp_overlap_exposed_s(rs, proj, tp, pipelined_tail=True)
        + tp_overlap_exposed_s(ag, up, tp, pipelined_tail=False)
        + tp_overlap_exposed_s(rs, down, tp, pipelined_tail=True)
    )
    backward = sum(
        tp_overlap_exposed_s(c, g, tp, pipelined_tail=False)
        for c, g in ((ag, proj), (rs, qkv), (ag, down), (rs, up))
    )
    return forward, backward


def _cp_comm(model, layouts, times, comm_time) -> _KindComm:
    """Context parallelism (ring attention, Liu et al. 2023): K and V of the whole sequence are
    gathered in the forward; the backward gathers them again and reduce-scatters their
    gradients. Overlapped with the attention compute of the layer."""
    cp = layouts.cp
    kv_bytes = layouts.micro_batch * float(model.seq_len) * 2.0 * model.kv_hidden / layouts.tp * 2.0
    if np.any(cp > 1):
        cp_forward = comm_time("cp", "all_gather", kv_bytes)
        cp_backward = cp_forward + comm_time("cp", "reduce_scatter", kv_bytes)
    else:
        cp_forward = cp_backward = np.zeros_like(kv_bytes)
    attention_f = _attention_share(model, times)
    return _KindComm(
        forward_s=np.where(cp > 1, np.maximum(cp_forward - attention_f, 0.0), 0.0),
        backward_s=np.where(cp > 1, np.maximum(cp_backward - 2.0 * attention_f, 0.0), 0.0),
        total_s=np.where(cp > 1, cp_forward + cp_backward, 0.0),
        buffer_bytes=kv_bytes,
    )


def _ep_comm(model, layouts, comm_time) -> _KindComm:
    """Expert parallelism: dispatch + combine all-to-all in the forward, the same in the
    backward (sequence-parallel shard of the tokens, top_k copies of each). Exposed."""
    tokens = layouts.micro_batch * float(model.seq_len) / layouts.cp
    if model.moe is None:
        zeros = np.zeros_like(tokens)
        return _KindComm(forward_s=zeros, backward_s=zeros, total_s=zeros, buffer_bytes=zeros)
    a2a_bytes = tokens / layouts.tp * model.moe.top_k * float(model.hidden) * 2.0
    one_a2a = comm_time("ep", "all_to_all", a2a_bytes)
    ep_forward = 2.0 * one_a2a
    ep_backward = 2.0 * one_a2a + np.where(layouts.recompute == 2, ep_forward, 0.0)
    return _KindComm(
        forward_s=ep_forward, backward_s=ep_backward, total_s=ep_forward + ep_backward, buffer_bytes=a2a_bytes
    )


def _attention_share(model, times) -> np.ndarray:
    """Forward attention-core time of a layer, estimated from its FLOP share of the GEMMs."""
    h, s = float(model.hidden), float(model.seq_len)
    per_token_linear = 2.0 * h * (h + 2.0 * model.kv_hidden) + 2.0 * h * h
    ffn = model.ffn_hidden if model.moe is None else model.moe.expert_ffn_hidden * model.moe.top_k
    per_token_linear += 2.0 * (3 if model.mlp == "swiglu" else 2) * h * ffn
    attention = 4.0 * s * h
    return times.gemm_forward_s * attention / (attention + per_token_linear)


def _dense_and_expert_params(model, *, tp, pp, ep):
    """(dense, expert) parameters per GPU of the busiest stage."""
    per_layer = layer_params(model)
    layers = np.ceil(model.layers / pp)
    embed_in, embed_out = embedding_params(model)
    embedding = np.where(pp > 1, embed_in, embed_in + embed_out)
    dense = layers * ((per_layer["attention"] + per_layer["mlp"]) / tp + per_layer["norm"])
    dense = dense + embedding / tp
    return dense, layers * per_layer["experts"] / (tp * ep)


def params_updated(model, *, tp, pp, dp, cp, ep, zero):
    dense, expert = _dense_and_expert_params(model, tp=tp, pp=pp, ep=ep)
    sharded = zero >= 1
    dense = dense / np.where(sharded, dp * cp, 1.0)
    expert = expert / np.where(sharded, dp * cp / ep, 1.0)
    return dense + expert


@dataclass(frozen=True)
class DpSync:
    """The data-parallel synchronisation of a step (s and bytes; broadcast over candidates).

    Attributes
    ----------
    exposed_s : ndarray
        What the step waits for: end-of-step reduction and gather, and the per-microbatch
        ZeRO 2/3 traffic that does not fit beside the compute.
    time_s : ndarray
        The end-of-step collectives in all (reduction + gather), exposed or not.
    per_microbatch_s : ndarray
        ZeRO 2/3's per-microbatch traffic over the step.
    per_mb_stream_s : ndarray
        One earlier microbatch's stream (the NIC budget DP shares with pipeline sends).
    buckets : ndarray
        Collectives the stage's parameters are split into (1 without overlap).
    grad_op : ndarray of str
        ``all_reduce`` (ZeRO 0) or ``reduce_scatter``.
    dense_kind : ndarray of str
        The group dense gradients reduce over: ``dp``, or ``dp_cp`` with context parallelism.
    dense_grad_bytes, expert_grad_bytes, dense_param_bytes : ndarray
        Bytes per rank and step (for link utilization).
    """

    exposed_s: np.ndarray
    time_s: np.ndarray
    per_microbatch_s: np.ndarray
    per_mb_stream_s: np.ndarray
    buckets: np.ndarray
    grad_op: np.ndarray
    dense_kind: np.ndarray
    dense_grad_bytes: np.ndarray
    expert_grad_bytes: np.ndarray
    dense_param_bytes: np.ndarray


class _DpCollectives:
    """One data-parallel collective over a stage's parameters, split into buckets: the dense
    parameters over dp (dp x cp with context parallelism), the experts over their
    expert-data-parallel group."""

    def __init__(self, model, layouts, comm_time, *, dense, expert, buckets):
        self.model, self.layouts, self.comm_time = model, layouts, comm_time
        self.dense, self.expert, self.buckets = dense, expert, buckets

    def _kind_time(self, op, dense_bytes, expert_bytes):
        cp, ep, comm_time = self.layouts.cp, self.layouts.ep, self.comm_time
        any_cp = bool(np.any(cp > 1))
        t_dense = comm_time("dp", op, dense_bytes)
        if any_cp:
            t_dense = np.where(cp > 1, comm_time("dp_cp", op, dense_bytes), t_dense)
        t_expert = 0.0
        if self.model.moe is not None:
            t_expert = comm_time("dp_cp" if any_cp else "dp", op, expert_bytes)
            if np.any(ep > 1):
                t_expert = np.where(ep > 1, comm_time("edp", op, expert_bytes), t_expert)
        group = self.layouts.dp * cp
        return np.where(group > 1, t_dense, 0.0) + np.where(group / ep > 1, t_expert, 0.0)

    def __call__(self, op, per_param):
        """All buckets of ``op`` moving ``per_param`` bytes per parameter (s)."""
        buckets = self.buckets
        return buckets * self._kind_time(
            op, self.dense * per_param / buckets, self.expert * per_param / buckets
        )


def dp_sync(model, layouts, stack, *, stage_forward_s, stage_backward_s, comm_time) -> DpSync:
    """Exposed data-parallel time per step and the bytes it moves.

    ZeRO 0: all-reduce of the gradients. ZeRO 1/2 (Megatron distributed optimizer):
    reduce-scatter of the gradients, then all-gather of the updated bf16 weights; ZeRO 2 also
    reduce-scatters every earlier microbatch's gradients, ZeRO 3 gathers the weights for the
    forward and the backward of every microbatch (beside that microbatch's compute; the excess
    is exposed). Without ``stack.overlap_dp`` the gradients
    go in one collective after the backward (Megatron-LM 2021-22 ``allreduce_gradients``) and
    the weights in one after the optimizer. With it, Megatron-Core's buckets
    (``overlap.bucket_count``) are reduced as the last microbatch's backward produces them and
    gathered as the next forward needs them (``overlap.grad_reduce_exposed_s`` /
    ``param_gather_exposed_s``): each bucket pays its own collective (latency included), the
    last reduction and the first gather are exposed.

    ``stage_forward_s`` / ``stage_backward_s``: one microbatch on the busiest stage, all its
    chunks (s).
    """
    dense, expert = _dense_and_expert_params(model, tp=layouts.tp, pp=layouts.pp, ep=layouts.ep)
    buckets = _buckets(dense + expert, layouts, stack)
    bucketed = _DpCollectives(model, layouts, comm_time, dense=dense, expert=expert, buckets=buckets)
    grad_bytes = GRAD_COMM_BYTES[stack.precision]
    param_bytes = 1.0 if stack.fp8_params else PARAM_COMM_BYTES
    zero = layouts.zero
    grad_sync = np.where(
        zero == 0, bucketed("all_reduce", grad_bytes), bucketed("reduce_scatter", grad_bytes)
    )
    # ZeRO 3 keeps no full weights between steps: nothing to gather after the optimizer.
    param_sync = np.where((zero >= 1) & (zero < 3), bucketed("all_gather", param_bytes), 0.0)
    if stack.overlap_dp:
        pp, vpp = layouts.pp, layouts.vpp
        grad_exposed = grad_reduce_exposed_s(grad_sync, buckets, stage_backward_s / vpp, pp, vpp)
        param_exposed = param_gather_exposed_s(param_sync, buckets, stage_forward_s / vpp, pp, vpp)
    else:
        grad_exposed, param_exposed = grad_sync, param_sync
    stream = _per_microbatch(layouts, bucketed, grad_bytes, param_bytes, stage_forward_s + stage_backward_s)
    return DpSync(
        exposed_s=grad_exposed + param_exposed + stream["exposed_s"],
        time_s=grad_sync + param_sync,
        per_microbatch_s=stream["total_s"],
        per_mb_stream_s=stream["one_s"],
        buckets=np.broadcast_to(np.asarray(buckets, dtype=float), np.shape(grad_sync)),
        grad_op=np.where(zero == 0, "all_reduce", "reduce_scatter"),
        dense_kind=np.where(_dp_kind(layouts.cp), "dp_cp", "dp"),
        # Bytes per step (for link utilization): ZeRO 2/3 reduce every microbatch's gradients,
        # ZeRO 3 gathers the weights twice per microbatch.
        dense_grad_bytes=dense * grad_bytes * np.where(zero >= 2, layouts.microbatches, 1.0),
        expert_grad_bytes=expert * grad_bytes,
        dense_param_bytes=np.where(zero >= 1, dense * param_bytes, 0.0)
        * np.where(zero >= 3, 2.0 * layouts.microbatches, 1.0),
    )


def _buckets(params, layouts, stack):
    """Collectives a stage's ``params`` are reduced in: the framework's buckets with overlap,
    one without."""
    if not stack.overlap_dp:
        return 1.0
    framework = stack.framework
    return bucket_count(
        params,
        layouts.dp * layouts.cp,
        min_params=framework.bucket_min_params,
        per_dp_rank=framework.bucket_params_per_dp_rank,
    )


def _per_microbatch(layouts, bucketed, grad_bytes, param_bytes, compute_mb) -> dict[str, np.ndarray]:
    """ZeRO 2/3's traffic of every microbatch: exposed, in all, and one earlier microbatch's.

    Sharded gradients (ZeRO >= 2) cannot be accumulated unsharded, so each microbatch's
    backward reduce-scatters them (DeepSpeed reduces every micro-step, FSDP every backward; the
    last microbatch's is the end-of-step reduction); ZeRO 3 gathers the weights for the
    forward and again for the backward (Rajbhandari et al. SC'20 §5: 3x the data-parallel
    volume). They run on one communication stream beside the compute: while a microbatch's
    traffic fits in its compute (forward + backward) the stream keeps up; what exceeds it
    queues and is exposed, microbatch after microbatch. ZeRO 3's first gather (one bucket)
    waits at the start.
    """
    zero, microbatches = layouts.zero, layouts.microbatches
    gather = bucketed("all_gather", param_bytes)
    rs_mb = np.where(zero >= 2, bucketed("reduce_scatter", grad_bytes), 0.0)
    gather_mb = np.where(zero >= 3, gather, 0.0)
    earlier = np.maximum(microbatches - 1.0, 0.0)
    exposed = np.maximum(2.0 * gather_mb + rs_mb - compute_mb, 0.0) * earlier
    exposed = exposed + np.maximum(2.0 * gather_mb - compute_mb, 0.0)  # the last
    exposed = exposed + gather_mb / np.maximum(bucketed.buckets, 1.0)
    return {
        "exposed_s": exposed,
        "total_s": 2.0 * gather_mb * microbatches + rs_mb * earlier,
        "one_s": 2.0 * gather_mb + rs_mb,
    }


def step_volumes(layouts, *, layers, p2p_bytes, comm: LayerComm, dp: DpSync):
    """Per kind and op, the per-rank bytes a step moves (for link utilization).

    ``layers``: layers on the busiest stage; ``p2p_bytes``: one pipeline send.
    """
    m, vpp, cp, ep = layouts.microbatches, layouts.vpp, layouts.cp, layouts.ep
    per_step_layers = m * layers
    half_tp = 0.5 * comm.tp_ops * comm.activation_bytes * per_step_layers
    volumes = {
        "tp": {"all_gather": half_tp, "reduce_scatter": half_tp},
        "pp": {"p2p": 2.0 * m * vpp * p2p_bytes},
        "cp": {
            "all_gather": np.where(cp > 1, 2.0 * comm.kv_bytes * per_step_layers, 0.0),
            "reduce_scatter": np.where(cp > 1, comm.kv_bytes * per_step_layers, 0.0),
        },
        "ep": {"all_to_all": comm.a2a_ops * comm.a2a_bytes * per_step_layers},
    }
    dense_kind = str(np.asarray(dp.dense_kind).flat[0])
    volumes[dense_kind] = {
        "all_reduce": np.where(dp.grad_op == "all_reduce", dp.dense_grad_bytes, 0.0),
        "reduce_scatter": np.where(dp.grad_op == "reduce_scatter", dp.dense_grad_bytes, 0.0),
        "all_gather": dp.dense_param_bytes,
    }
    if np.any(np.asarray(ep) > 1):
        volumes["edp"] = {"all_reduce": dp.expert_grad_bytes}
    return volumes
