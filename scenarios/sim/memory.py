"""Memory per GPU: weights, gradients, optimizer state, activations, framework reserve.

Sources
-------
* Bytes per parameter for mixed-precision Adam: bf16/fp16 weights (2 B), fp32 gradient
  accumulation buffer (4 B), fp32 master weights + Adam m and v (12 B): 18 B per parameter
  (Megatron-LM ``docs/source/distrib_optimizer.md``, "bf16 param, fp32 grads" row). ZeRO
  (Rajbhandari et al., SC'20) stage 1 shards the 12 B of optimizer state over the data-parallel
  ranks, stage 2 also the gradients, stage 3 also the weights.
* Activations per layer and microbatch: Korthikanti et al. 2022 (MLSys'23), Section 4:
  ``s b h (34 + 5 a s / h)`` bytes without parallelism; ``/t`` with tensor + sequence
  parallelism; selective recompute drops the ``5 a s / h`` term; full recompute keeps only the
  layer input ``2 s b h / t``. The ``34`` is generalised term by term here to GQA (K, V of width
  kv_heads x head_dim), any MLP width and swiglu (see ``activation_bytes_per_layer``).
  FlashAttention (Dao et al., 2022) never stores the ``s x s`` scores either.
* In-flight microbatches: with 1F1B the first stage holds ``p`` microbatches; interleaving with
  ``v`` virtual stages multiplies that by ``1 + (p - 1) / (p v)`` (Korthikanti et al., Section
  4.2.3). Fewer microbatches than stages cap it at ``m``.
"""

from __future__ import annotations

import numpy as np

from scenarios.sim.flops import embedding_params, layer_params
from scenarios.sim.scenario import ModelSpec

__all__ = [
    "GIB",
    "activation_bytes_per_layer",
    "in_flight_microbatches",
    "memory_per_gpu",
    "reserve_bytes",
]

GIB = 2.0**30
WEIGHT_BYTES = 2.0
GRAD_BYTES = 4.0
OPTIMIZER_BYTES = 12.0
#: CUDA context, NCCL buffers, allocator fragmentation (assumed: ~2.5 GiB fixed plus 5 % of
#: HBM; PyTorch's caching allocator typically leaves a few GiB unusable on 80 GB parts).
RESERVE_FIXED_GIB = 2.5
RESERVE_FRACTION = 0.05


def activation_bytes_per_layer(
    model: ModelSpec, *, micro_batch, tp, cp=1, recompute=0, flash: bool = True
) -> np.ndarray:
    """Activation bytes one layer keeps for one microbatch on one GPU.

    Korthikanti's ``34 s b h`` is, per term: attention 11 (QKV input 2, Q 2, K 2, V 2, projection
    input 2, dropout mask 1), MLP 19 (input 2, gelu input 8, gelu output 8, dropout mask 1),
    norms 4. Generalised: K and V take ``2 * kv_hidden``; the MLP keeps ``4 f`` (gelu: input and
    output of the activation) or ``6 f`` (swiglu: gate, up, product) per token.
    """
    b, tp, cp = (np.asarray(v, dtype=float) for v in (micro_batch, tp, cp))
    code = np.asarray(recompute)
    h, kv, s = float(model.hidden), float(model.kv_hidden), float(model.seq_len)
    sbh = s / cp * b * h
    per_token_ffn = 6.0 if model.mlp == "swiglu" else 4.0
    if model.moe is None:
        ffn = model.ffn_hidden
    else:
        ffn = model.moe.expert_ffn_hidden * model.moe.top_k
    tokens = s / cp * b
    linear = (7.0 + 3.0 + 4.0) * sbh + 4.0 * tokens * kv + per_token_ffn * tokens * ffn
    scores = 0.0 if flash else 5.0 * model.heads * (s / cp) * s * b
    full_layer = (linear + scores) / tp
    kept = np.where(code == 2, 2.0 * sbh / tp, np.where(code == 1, linear / tp, full_layer))
    return np.asarray(kept)


def in_flight_microbatches(pp, vpp, microbatches) -> np.ndarray:
    """Microbatches whose activations the first stage holds at its peak (1F1B / interleaved)."""
    p, v, m = (np.asarray(x, dtype=float) for x in (pp, vpp, microbatches))
    interleave = np.where(v > 1, 1.0 + (p - 1.0) / (p * v), 1.0)
    return np.minimum(p * interleave, m)


def reserve_bytes(hbm_gib: float) -> float:
    """Framework reserve (bytes) of a GPU with ``hbm_gib`` of memory (assumed, see above)."""
    return (RESERVE_FIXED_GIB + RESERVE_FRACTION * hbm_gib) * GIB


def stage_params(model: ModelSpec, *, tp, pp, ep=1):
    """Parameters one GPU of the busiest (first) pipeline stage holds.

    Dense parameters split over tp; expert parameters over tp x ep; the first stage holds
    ``ceil(layers / pp)`` layers and the input embedding (the output layer of the last stage is
    the same size or smaller).
    """
    tp, pp, ep = (np.asarray(v, dtype=float) for v in (tp, pp, ep))
    per_layer = layer_params(model)
    layers = np.ceil(model.layers / pp)
    dense = per_layer["attention"] + per_layer["mlp"]
    embed_in, embed_out = embedding_params(model)
    embedding = np.where(pp > 1, embed_in, embed_in + embed_out)
    return layers * (dense / tp + per_layer["experts"] / (tp * ep) + per_layer["norm"]) + embedding / tp


def memory_per_gpu(
    model: ModelSpec,
    *,
    micro_batch,
    tp,
    pp,
    dp,
    cp=1,
    ep=1,
    vpp=1,
    microbatches,
    recompute=0,
    zero=0,
    flash: bool = True,
    hbm_gib: float,
) -> dict[str, np.ndarray]:
    """Memory (bytes) on one GPU of the first pipeline stage, by component.

    Returns
    -------
    dict of str -> ndarray
        ``weights, gradients, optimizer, activations, reserve, total`` in bytes (broadcast over
        candidate arrays).
    """
    params = stage_params(model, tp=tp, pp=pp, ep=ep)
    shard = np.asarray(dp, dtype=float) * np.asarray(cp, dtype=float)
    z = np.asarray(zero)
    weights = params * WEIGHT_BYTES / np.where(z >= 3, shard, 1.0)
    grads = params * GRAD_BYTES / np.where(z >= 2, shard, 1.0)
    optimizer = params * OPTIMIZER_BYTES / np.where(z >= 1, shard, 1.0)
    per_layer = activation_bytes_per_layer(
        model, micro_batch=micro_batch, tp=tp, cp=cp, recompute=recompute, flash=flash
    )
    layers = np.ceil(model.layers / np.asarray(pp, dtype=float))
    in_flight = in_flight_microbatches(pp, vpp, microbatches)
    activations = per_layer * layers * in_flight
    # Full recompute rebuilds one layer's complete activations at a time during backward.
    full_layer = activation_bytes_per_layer(
        model, micro_batch=micro_batch, tp=tp, cp=cp, recompute=0, flash=flash
    )
    activations = activations + np.where(np.asarray(recompute) == 2, full_layer, 0.0)
    reserve = np.full(np.shape(activations), reserve_bytes(hbm_gib))
    total = weights + grads + optimizer + activations + reserve
    return {
        "weights": weights,
        "gradients": grads,
        "optimizer": optimizer,
        "activations": activations,
        "reserve": reserve,
        "total": total,
    }
