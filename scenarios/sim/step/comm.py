"""Communication of one training step: the per-layer tensor / context / expert collectives,
the data-parallel synchronisation (buckets, ZeRO stages) and the bytes each kind moves.

Split from ``step_time.assemble_step``, which adds these to the compute and the pipeline
schedule; every function broadcasts over candidate layouts (the layout search). The model and
its sources: ``docs/step-time-model.md`` section 3.
"""

from __future__ import annotations

import numpy as np

from scenarios.sim.step.flops import embedding_params, layer_params
from scenarios.sim.step.overlap import (
    bucket_count,
    grad_reduce_exposed_s,
    param_gather_exposed_s,
    tp_overlap_exposed_s,
)

__all__ = ["dp_sync", "layer_comm", "params_updated", "step_volumes"]

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


def layer_comm(
    model, *, b, tp, cp, code, times, comm_time, overlap_tp=False, gather_bytes=2.0
) -> dict[str, np.ndarray]:
    """Exposed (and hidden) tp / cp / ep communication of one layer and one microbatch (s).

    ``gather_bytes`` per element of the tp all-gathers: 1 with fp8, where Transformer Engine
    casts the sequence-parallel shard to fp8 before gathering it; reduce-scatters stay bf16.
    """
    h, s = float(model.hidden), float(model.seq_len)
    tokens = b * s / cp
    activation_bytes = tokens * h * 2.0  # all-gather output / reduce-scatter input per rank
    ag = comm_time("tp", "all_gather", tokens * h * gather_bytes)
    rs = comm_time("tp", "reduce_scatter", activation_bytes)
    tp_forward = 2.0 * TP_OPS_FORWARD * 0.5 * (ag + rs)  # 2 all-gathers + 2 reduce-scatters
    tp_backward = 2.0 * TP_OPS_BACKWARD * 0.5 * (ag + rs)
    total_forward, total_backward = tp_forward, tp_backward
    if overlap_tp:
        # Forward: AG before QKV and MLP-up (ring exchange), RS after the projection and
        # MLP-down (pipelined, last chunk exposed). Backward: AG of the output gradient beside
        # the row-parallel dgrad, RS of the column-parallel dgrad beside its wgrad (bulk).
        qkv, proj, up, down = times.tp_gemms_s
        tp_forward = (
            tp_overlap_exposed_s(ag, qkv, tp, pipelined_tail=False)
            + tp_overlap_exposed_s(rs, proj, tp, pipelined_tail=True)
            + tp_overlap_exposed_s(ag, up, tp, pipelined_tail=False)
            + tp_overlap_exposed_s(rs, down, tp, pipelined_tail=True)
        )
        tp_backward = sum(
            tp_overlap_exposed_s(c, g, tp, pipelined_tail=False)
            for c, g in ((ag, proj), (rs, qkv), (ag, down), (rs, up))
        )
    tp_backward = tp_backward + np.where(code == 2, tp_forward, 0.0)
    total_backward = total_backward + np.where(code == 2, total_forward, 0.0)
    on = tp > 1
    tp_forward, tp_backward = np.where(on, tp_forward, 0.0), np.where(on, tp_backward, 0.0)
    tp_total = np.where(on, total_forward + total_backward, 0.0)

    # Context parallelism (ring attention, Liu et al. 2023): K and V of the whole sequence are
    # gathered in the forward; the backward gathers them again and reduce-scatters their
    # gradients. Overlapped with the attention compute of the layer.
    kv_bytes = b * s * 2.0 * model.kv_hidden / tp * 2.0
    if np.any(cp > 1):
        cp_forward = comm_time("cp", "all_gather", kv_bytes)
        cp_backward = cp_forward + comm_time("cp", "reduce_scatter", kv_bytes)
    else:
        cp_forward = cp_backward = np.zeros_like(kv_bytes)
    attention_f = _attention_share(model, times)
    cp_total = np.where(cp > 1, cp_forward + cp_backward, 0.0)
    cp_forward = np.where(cp > 1, np.maximum(cp_forward - attention_f, 0.0), 0.0)
    cp_backward = np.where(cp > 1, np.maximum(cp_backward - 2.0 * attention_f, 0.0), 0.0)

    # Expert parallelism: dispatch + combine all-to-all in the forward, the same in the backward
    # (sequence-parallel shard of the tokens, top_k copies of each).
    if model.moe is not None:
        a2a_bytes = tokens / tp * model.moe.top_k * h * 2.0
        one_a2a = comm_time("ep", "all_to_all", a2a_bytes)
        ep_forward = 2.0 * one_a2a
        ep_backward = 2.0 * one_a2a + np.where(code == 2, ep_forward, 0.0)
    else:
        a2a_bytes = np.zeros_like(tokens)
        ep_forward = ep_backward = np.zeros_like(tokens)
    return {
        "forward_s": tp_forward + cp_forward + ep_forward,
        "backward_s": tp_backward + cp_backward + ep_backward,
        "tp_s": tp_forward + tp_backward,
        "tp_hidden_s": tp_total - (tp_forward + tp_backward),
        "cp_s": cp_forward + cp_backward,
        "cp_hidden_s": cp_total - (cp_forward + cp_backward),
        "ep_s": ep_forward + ep_backward,
        "tp_ops": np.where(
            tp > 1,
            2.0 * (TP_OPS_FORWARD + TP_OPS_BACKWARD) + np.where(code == 2, 2.0 * TP_OPS_FORWARD, 0.0),
            0.0,
        ),
        "activation_bytes": activation_bytes,
        "kv_bytes": kv_bytes,
        "a2a_bytes": a2a_bytes,
        "a2a_ops": np.where(code == 2, 6.0, 4.0),
    }


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


def dp_sync(
    model,
    *,
    tp,
    pp,
    dp,
    cp,
    ep,
    vpp,
    zero,
    precision,
    stage_f,
    stage_b,
    overlap,
    microbatches,
    comm_time,
    stack,
):
    """Exposed data-parallel time per step and the bytes it moves.

    ZeRO 0: all-reduce of the gradients. ZeRO 1/2 (Megatron distributed optimizer):
    reduce-scatter of the gradients, then all-gather of the updated bf16 weights; ZeRO 2 also
    reduce-scatters every earlier microbatch's gradients, ZeRO 3 gathers the weights for the
    forward and the backward of every microbatch (beside that microbatch's compute; the excess
    is exposed). Without ``overlap`` the gradients
    go in one collective after the backward (Megatron-LM 2021-22 ``allreduce_gradients``) and
    the weights in one after the optimizer. With it, Megatron-Core's buckets
    (``overlap.bucket_count``) are reduced as the last microbatch's backward produces them and
    gathered as the next forward needs them (``overlap.grad_reduce_exposed_s`` /
    ``param_gather_exposed_s``): each bucket pays its own collective (latency included), the
    last reduction and the first gather are exposed.
    """
    dense, expert = _dense_and_expert_params(model, tp=tp, pp=pp, ep=ep)
    grad_bytes = GRAD_COMM_BYTES[precision]
    dense_kind = np.where(_dp_kind(cp), "dp_cp", "dp")
    group = dp * cp
    any_cp = bool(np.any(cp > 1))
    any_ep = bool(np.any(ep > 1))

    def kind_time(op, dense_bytes, expert_bytes):
        t_dense = comm_time("dp", op, dense_bytes)
        if any_cp:
            t_dense = np.where(cp > 1, comm_time("dp_cp", op, dense_bytes), t_dense)
        t_expert = 0.0
        if model.moe is not None:
            t_expert = comm_time("dp_cp" if any_cp else "dp", op, expert_bytes)
            if any_ep:
                t_expert = np.where(ep > 1, comm_time("edp", op, expert_bytes), t_expert)
        return np.where(group > 1, t_dense, 0.0) + np.where(group / ep > 1, t_expert, 0.0)

    buckets = 1.0
    if overlap:
        buckets = bucket_count(
            dense + expert,
            group,
            min_params=stack.bucket_min_params,
            per_dp_rank=stack.bucket_params_per_dp_rank,
        )
    param_bytes = 1.0 if (precision == "fp8" and stack.fp8_params) else PARAM_COMM_BYTES

    def bucketed(op, per_param):
        return buckets * kind_time(op, dense * per_param / buckets, expert * per_param / buckets)

    grad_sync = np.where(
        zero == 0, bucketed("all_reduce", grad_bytes), bucketed("reduce_scatter", grad_bytes)
    )
    # ZeRO 3 keeps no full weights between steps: nothing to gather after the optimizer.
    param_sync = np.where((zero >= 1) & (zero < 3), bucketed("all_gather", param_bytes), 0.0)
    if overlap:
        grad_exposed = grad_reduce_exposed_s(grad_sync, buckets, stage_b / vpp, pp, vpp)
        param_exposed = param_gather_exposed_s(param_sync, buckets, stage_f / vpp, pp, vpp)
    else:
        grad_exposed, param_exposed = grad_sync, param_sync
    # Every microbatch: sharded gradients (ZeRO >= 2) cannot be accumulated unsharded, so each
    # microbatch's backward reduce-scatters them (DeepSpeed reduces every micro-step, FSDP every
    # backward; the last microbatch's is the end-of-step reduction above); ZeRO 3 gathers the
    # weights for the forward and again for the backward (Rajbhandari et al. SC'20 §5: 3x the
    # data-parallel volume). They run on one communication stream beside the compute: while a
    # microbatch's traffic fits in its compute (forward + backward) the stream keeps up; what
    # exceeds it queues and is exposed, microbatch after microbatch. ZeRO 3's first gather
    # (one bucket) waits at the start.
    gather = bucketed("all_gather", param_bytes)
    rs_mb = np.where(zero >= 2, bucketed("reduce_scatter", grad_bytes), 0.0)
    gather_mb = np.where(zero >= 3, gather, 0.0)
    earlier = np.maximum(microbatches - 1.0, 0.0)
    compute_mb = stage_f + stage_b
    per_mb_exposed = np.maximum(2.0 * gather_mb + rs_mb - compute_mb, 0.0) * earlier
    per_mb_exposed = per_mb_exposed + np.maximum(2.0 * gather_mb - compute_mb, 0.0)  # the last
    per_mb_exposed = per_mb_exposed + gather_mb / np.maximum(buckets, 1.0)
    per_mb_total = 2.0 * gather_mb * microbatches + rs_mb * earlier
    exposed = grad_exposed + param_exposed + per_mb_exposed
    volume = {
        "grad_op": np.where(zero == 0, "all_reduce", "reduce_scatter"),
        # Bytes per step (for link utilization): ZeRO 2/3 reduce every microbatch's gradients,
        # ZeRO 3 gathers the weights twice per microbatch.
        "dense_grad_bytes": dense * grad_bytes * np.where(zero >= 2, microbatches, 1.0),
        "expert_grad_bytes": expert * grad_bytes,
        "dense_param_bytes": np.where(zero >= 1, dense * param_bytes, 0.0)
        * np.where(zero >= 3, 2.0 * microbatches, 1.0),
        "time_s": grad_sync + param_sync,
        "per_microbatch_s": per_mb_total,
        # One earlier microbatch's stream (the NIC budget DP shares with pipeline sends).
        "per_mb_stream_s": 2.0 * gather_mb + rs_mb,
        "buckets": np.broadcast_to(np.asarray(buckets, dtype=float), np.shape(grad_sync)),
        "dense_kind": dense_kind,
    }
    return exposed, volume


def step_volumes(*, m, vpp, layers, p2p_bytes, comm, dp_volume, cp, ep):
    """Per kind and op, the per-rank bytes a step moves (for link utilization)."""
    per_step_layers = m * layers
    half_tp = 0.5 * comm["tp_ops"] * comm["activation_bytes"] * per_step_layers
    volumes = {
        "tp": {"all_gather": half_tp, "reduce_scatter": half_tp},
        "pp": {"p2p": 2.0 * m * vpp * p2p_bytes},
        "cp": {
            "all_gather": np.where(cp > 1, 2.0 * comm["kv_bytes"] * per_step_layers, 0.0),
            "reduce_scatter": np.where(cp > 1, comm["kv_bytes"] * per_step_layers, 0.0),
        },
        "ep": {"all_to_all": comm["a2a_ops"] * comm["a2a_bytes"] * per_step_layers},
    }
    grad_ops = dp_volume["grad_op"]
    dense_kind = str(np.asarray(dp_volume["dense_kind"]).flat[0])
    dense_grad = dp_volume["dense_grad_bytes"]
    volumes[dense_kind] = {
        "all_reduce": np.where(grad_ops == "all_reduce", dense_grad, 0.0),
        "reduce_scatter": np.where(grad_ops == "reduce_scatter", dense_grad, 0.0),
        "all_gather": dp_volume["dense_param_bytes"],
    }
    if np.any(np.asarray(ep) > 1):
        volumes["edp"] = {"all_reduce": dp_volume["expert_grad_bytes"]}
    return volumes
