"""Memory per GPU: weights, gradients, optimizer state, activations, framework reserve.

The accounting follows Megatron-LM's own estimator (``megatron/training/theoretical_memory_usage.py``,
NVIDIA/Megatron-LM, read at d98e8a6) and the paper it implements (Korthikanti et al. 2022,
"Reducing Activation Recomputation in Large Transformer Models", MLSys'23), with the peak taken on
the first pipeline stage, where it is largest. Each term is in ``docs/step-time-model.md`` §5.

Sources
-------
* Bytes per parameter for mixed-precision Adam: bf16/fp16 weights (2 B), fp32 gradient
  accumulation buffer (``main_grad``, 4 B), fp32 master weights + Adam m and v (12 B): 18 B per
  parameter; Megatron's distributed optimizer shards the 12 B over the data-parallel ranks,
  ``6 + 12 / dp`` (``num_bytes_per_parameter`` in the estimator; Megatron-Core shards over the
  dp x cp group, ``get_data_parallel_group(with_context_parallel=True)``). ZeRO (Rajbhandari et
  al., SC'20) stage 2 also shards the gradients, stage 3 also the weights. Expert parameters shard
  over their own expert-data-parallel group (``dp x cp / ep``).
* Activations per layer and microbatch: Korthikanti et al., Section 4: ``s b h (34 + 5 a s / h)``
  bytes without parallelism; ``/t`` with tensor + sequence parallelism; selective recompute drops
  the ``5 a s / h`` term; full recompute keeps only the layer input ``2 s b h / t``. The ``34`` is
  generalised term by term to GQA, any MLP width, swiglu and models trained without dropout (see
  ``activation_bytes_per_layer``). FlashAttention (Dao et al., 2022) stores Q, K, V, the output
  and one fp32 log-sum-exp per head and token instead of the ``s x s`` scores.
* In-flight microbatches: stage 0 runs its warm-up forwards before its first backward; Megatron's
  interleaved schedule warms up ``2 (p - 1) + (v - 1) p`` virtual microbatches
  (``get_pp_rank_microbatches``), so ``p v + p - 1`` chunk forwards are alive at the peak:
  ``p (1 + (p - 1) / (p v))`` microbatches of the whole stage (Korthikanti Section 4.2.3, the
  estimator's ``interleaved_schedule_memory_penalty``). Counted here chunk by chunk, so a first
  chunk that holds only the embedding (below) stores nothing for its in-flight forwards.
* Stage balance: when the layers leave two spare slots (``p ceil(l / p) - l >= 2``) the first
  stage takes one layer fewer for the embedding, as the last does for the output layer (Llama 3,
  Dubey et al. 2024 §3.3.2: "we reduce one Transformer layer each from the first and the last
  stages ... the first model chunk on the first stage has only the embedding"; Megatron-Core's
  ``--account-for-embedding-in-pipeline-split`` / ``--account-for-loss-in-pipeline-split``).
  The embedding's output is sent on and freed (Megatron ``deallocate_output_tensor``).
* Output layer with ``pp = 1``: the inputs to the output layer and the fp32 cross-entropy,
  ``4 s b h (1 + V / h) / t`` (the estimator's ``pp == 1`` term).
* Reserve: CUDA context, library workspaces and NCCL buffers (fixed, assumed) plus allocator
  fragmentation as a fraction of the activation memory (``FRAGMENTATION``, see there).
"""

from __future__ import annotations

import numpy as np

from scenarios.sim.format.scenario import ModelSpec
from scenarios.sim.step.flops import embedding_params, layer_params

__all__ = [
    "GIB",
    "activation_bytes_per_layer",
    "first_stage_layers",
    "in_flight_layer_microbatches",
    "in_flight_microbatches",
    "memory_per_gpu",
]

GIB = 2.0**30
WEIGHT_BYTES = 2.0
GRAD_BYTES = 4.0
OPTIMIZER_BYTES = 12.0
#: CUDA context and loaded kernels (~0.5-1 GiB on Hopper), cuBLAS / cuDNN workspaces and NCCL's
#: per-channel, per-peer buffers (``NCCL_BUFFSIZE`` = 4 MiB by default, NCCL environment-variable
#: documentation) over the job's tp / cp / pp / dp communicators. Assumed: no published total.
RESERVE_FIXED_GIB = 2.5
#: Memory the caching allocator holds but cannot reuse, as a fraction of the activations (the
#: allocations that come and go every step). GMLake (Guo et al., ASPLOS'24) measures 15 % on
#: average (up to 33 %) with PyTorch's splitting allocator on eight LLMs on A100-80GB under
#: recompute / ZeRO / offload; current stacks set ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments``
#: (PyTorch >= 2.1), which maps segments contiguously and removes most of it. 10 % is assumed
#: between the two.
FRAGMENTATION = 0.10
#: Transformer Engine's fp8 weight cache: the fp8 weight and its fp8 transpose, 1 B each
#: (``Float8Tensor`` with its transpose cache; kept across the microbatches of a step).
FP8_WEIGHT_COPY_BYTES = 2.0
#: FlashAttention keeps one fp32 log-sum-exp per head and token for its backward (Dao et al.).
FLASH_LSE_BYTES = 4.0


def _has_dropout(model: ModelSpec) -> bool:
    """GPT / Megatron models train with dropout; the swiglu (Llama) family trains without it
    (Touvron et al. 2023; Dubey et al. 2024 list no dropout), so stores no masks."""
    return model.mlp != "swiglu"


def activation_bytes_per_layer(
    model: ModelSpec, *, micro_batch, tp, cp=1, recompute=0, flash: bool = True, fp8: bool = False
) -> np.ndarray:
    """Activation bytes one layer keeps for one microbatch on one GPU.

    Korthikanti's ``34 s b h`` is, per term: attention 11 (QKV input 2, Q 2, K 2, V 2, projection
    input 2, dropout mask 1), MLP 19 (input 2, gelu input 8, gelu output 8, dropout mask 1),
    norms 4. Generalised: K and V take ``2 * kv_hidden``; the MLP keeps ``4 f`` (gelu: input and
    output of the activation) or ``6 f`` (swiglu: gate, up, product) per token; without dropout
    the two 1-byte masks and the score-dropout terms go. Scores: softmax output 2 B, its dropout
    mask 1 B and dropout output 2 B per element (``5 a s / h``), 2 B without dropout; with
    FlashAttention none, only the log-sum-exp. With fp8 Transformer Engine saves the inputs of
    the QKV, MLP-up and MLP-down GEMMs as their fp8 casts (1 B instead of 2 B: ``h + h + f``
    per token fewer); the projection's input is FlashAttention's own bf16 output and stays.
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
    masks = 2.0 if _has_dropout(model) else 0.0  # attention-output and MLP-output dropout
    linear = (6.0 + 2.0 + 4.0 + masks) * sbh + 4.0 * tokens * kv + per_token_ffn * tokens * ffn
    if fp8:
        linear = linear - tokens * (2.0 * h + ffn)
    if flash:
        scores = FLASH_LSE_BYTES * model.heads * tokens
    else:
        scores = (5.0 if _has_dropout(model) else 2.0) * model.heads * (s / cp) * s * b
    full_layer = (linear + scores) / tp
    selective = (linear + (scores if flash else 0.0)) / tp
    kept = np.where(code == 2, 2.0 * sbh / tp, np.where(code == 1, selective, full_layer))
    return np.asarray(kept)


def first_stage_layers(layers: int, pp) -> np.ndarray:
    """Transformer layers on the first pipeline stage (one fewer when two slots are spare)."""
    p = np.asarray(pp, dtype=np.int64)
    per_stage = -(-layers // p)
    spare = p * per_stage - layers
    first = per_stage - (spare >= 2)
    return np.where(p == 1, layers, first).astype(float)


def _warmup_forwards(pp, vpp, microbatches):
    """Chunk forwards stage 0 has run when its first backward starts (Megatron's warm-up + 1)."""
    p, v, m = (np.asarray(x, dtype=float) for x in (pp, vpp, microbatches))
    interleaved = np.minimum(2.0 * (p - 1.0) + (v - 1.0) * p + 1.0, m * v)
    return np.where(v > 1, interleaved, np.minimum(p, m))


def in_flight_microbatches(pp, vpp, microbatches) -> np.ndarray:
    """Whole-stage microbatches the first stage holds at its peak with equal chunks:
    ``p (1 + (p - 1) / (p v))``, at most ``m`` (Korthikanti Section 4.2.3)."""
    return _warmup_forwards(pp, vpp, microbatches) / np.asarray(vpp, dtype=float)


def in_flight_layer_microbatches(first_layers, pp, vpp, microbatches) -> np.ndarray:
    """(layer, microbatch) activation sets alive on stage 0 at its peak.

    Stage 0's ``first_layers`` are spread over its ``v`` chunks with the fewest on chunk 0 (the
    embedding's); virtual forward ``k`` runs chunk ``(k mod p v) // p`` (Megatron's schedule
    table with group size ``p``). Sums, over the in-flight forwards, the layers of their chunk.
    """
    p, v = (np.asarray(x, dtype=float) for x in (pp, vpp))
    n = np.asarray(first_layers, dtype=float)
    k = _warmup_forwards(pp, vpp, microbatches)
    base = np.floor(n / v)
    rem = n - base * v  # chunks v - rem .. v - 1 hold one layer more
    cycles = np.floor(k / (p * v))
    tail = k - cycles * p * v
    return k * base + cycles * p * rem + np.clip(tail - (v - rem) * p, 0.0, rem * p)


def stage_params(model: ModelSpec, *, tp, pp, ep=1):
    """(dense, expert) parameters one GPU of the first pipeline stage holds.

    Dense parameters split over tp; expert parameters over tp x ep; the first stage holds
    ``first_stage_layers`` layers and the input embedding (with ``pp = 1`` also the output layer).
    """
    tp, pp, ep = (np.asarray(v, dtype=float) for v in (tp, pp, ep))
    per_layer = layer_params(model)
    layers = first_stage_layers(model.layers, pp)
    dense = per_layer["attention"] + per_layer["mlp"]
    embed_in, embed_out = embedding_params(model)
    embedding = np.where(pp > 1, embed_in, embed_in + embed_out)
    dense_total = layers * (dense / tp + per_layer["norm"]) + embedding / tp
    return dense_total, layers * per_layer["experts"] / (tp * ep)


def memory_per_gpu(
    model: ModelSpec,
    layouts,
    *,
    hbm_gib: float,
    flash: bool = True,
    fp8: bool = False,
    fp8_params: bool = False,
) -> dict[str, np.ndarray]:
    """Memory (bytes) on one GPU of the first pipeline stage, by component.

    ``layouts`` (``CandidateLayouts``) gives the micro-batch, the degrees, the microbatches per
    pipeline, the recompute code and the ZeRO stage of every candidate. With ``fp8``
    Transformer Engine keeps an fp8 copy of every linear weight and its transpose (for the
    backward GEMMs) beside the bf16 weight: +2 B per layer-matrix parameter
    (``FP8_WEIGHT_COPY_BYTES``); with ``fp8_params`` the weight lives in fp8 only (1 B + its
    1 B transpose, the bf16 copy's 2 B), so the weights cost what bf16 ones do.

    Returns
    -------
    dict of str -> ndarray
        ``weights, gradients, optimizer, activations, reserve, total`` in bytes, and
        ``headroom`` (HBM minus total; negative when it does not fit), broadcast over candidate
        arrays.
    """
    sharded = _sharded_bytes(model, layouts)
    weights = sharded(WEIGHT_BYTES, 3)
    if fp8 and not fp8_params:
        weights = weights + FP8_WEIGHT_COPY_BYTES * _layer_matrices(model, layouts)
    grads = sharded(GRAD_BYTES, 2)
    optimizer = sharded(OPTIMIZER_BYTES, 1)
    activations = _activations(model, layouts, flash=flash, fp8=fp8)
    reserve = RESERVE_FIXED_GIB * GIB + FRAGMENTATION * activations
    total = weights + grads + optimizer + activations + reserve
    shape = np.broadcast_shapes(*(np.shape(x) for x in (weights, grads, optimizer, activations)))
    out = {
        "weights": weights,
        "gradients": grads,
        "optimizer": optimizer,
        "activations": activations,
        "reserve": reserve,
        "total": total,
    }
    out = {k: np.broadcast_to(np.asarray(v, dtype=float), shape) for k, v in out.items()}
    out["headroom"] = hbm_gib * GIB - out["total"]
    return out


def _sharded_bytes(model: ModelSpec, layouts):
    """``bytes(per_param, stage)``: a first-stage GPU's bytes of a state kept ``per_param``
    bytes per parameter, sharded over dp x cp (experts over dp x cp / ep) from ZeRO ``stage`` on."""
    dense, expert = stage_params(model, tp=layouts.tp, pp=layouts.pp, ep=layouts.ep)
    shard = np.asarray(layouts.dp, dtype=float) * np.asarray(layouts.cp, dtype=float)
    expert_shard = np.maximum(shard / np.asarray(layouts.ep, dtype=float), 1.0)
    z = np.asarray(layouts.zero)

    def sharded(per_param, stage):
        return per_param * (
            dense / np.where(z >= stage, shard, 1.0) + expert / np.where(z >= stage, expert_shard, 1.0)
        )

    return sharded


def _layer_matrices(model: ModelSpec, layouts):
    """Parameters of the first stage's linear-layer matrices on one GPU (fp8 weight copies)."""
    per_layer_params = layer_params(model)
    matrices = per_layer_params["attention"] + per_layer_params["mlp"]
    tp, ep = np.asarray(layouts.tp, float), np.asarray(layouts.ep, float)
    return first_stage_layers(model.layers, layouts.pp) * (
        matrices / tp + per_layer_params["experts"] / (tp * ep)
    )


def _activations(model: ModelSpec, layouts, *, flash: bool, fp8: bool):
    """Activation bytes stage 0 holds at its peak: its in-flight (layer, microbatch) sets, one
    whole layer while full recompute rebuilds it, and with ``pp = 1`` the output layer's."""
    b, tp, cp, recompute = layouts.micro_batch, layouts.tp, layouts.cp, layouts.recompute
    per_layer = activation_bytes_per_layer(
        model, micro_batch=b, tp=tp, cp=cp, recompute=recompute, flash=flash, fp8=fp8
    )
    pp, vpp, microbatches = layouts.pp, layouts.vpp, layouts.microbatches
    alive = in_flight_layer_microbatches(first_stage_layers(model.layers, pp), pp, vpp, microbatches)
    activations = per_layer * alive
    # Full recompute rebuilds one layer's complete activations at a time during backward.
    full_layer = activation_bytes_per_layer(
        model, micro_batch=b, tp=tp, cp=cp, recompute=0, flash=flash, fp8=fp8
    )
    activations = activations + np.where(np.asarray(recompute) == 2, full_layer, 0.0)
    b, t, c = (np.asarray(x, dtype=float) for x in (b, tp, cp))
    sbh = model.seq_len / c * b * model.hidden
    logits = 4.0 * sbh * (1.0 + model.vocab / model.hidden) / t
    return activations + np.where(np.asarray(pp, dtype=float) == 1, logits, 0.0)
