"""Exact FLOP and parameter counts of a decoder-only transformer.

Conventions (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", SC'21, Section 5.1 and Appendix): a multiply-add is 2 FLOPs; the backward
pass costs twice the forward; attention scores and context are counted over the full ``s x s``
matrix (no causal halving), as Megatron and Korthikanti et al. count them; the logits layer is
never recomputed. For GPT (gelu MLP of 4h, no GQA) this gives exactly

* no recompute: ``72 B s l h^2 (1 + s/6h + V/12lh)``
* full recompute: ``96 B s l h^2 (1 + s/6h + V/16lh)``

Selective recompute (Korthikanti et al., "Reducing Activation Recomputation in Large
Transformer Models", MLSys'23, Section 5) recomputes only the attention core (scores, softmax,
context), adding its forward FLOPs once more.

Every function accepts numpy arrays for the batch/sequence arguments (broadcasting), so the
layout search evaluates all candidates at once.
"""

from __future__ import annotations

import numpy as np

from scenarios.sim.format.scenario import ModelSpec

__all__ = [
    "hardware_flops_per_step",
    "layer_forward_flops",
    "layer_params",
    "logits_forward_flops",
    "model_flops_per_step",
    "recompute_forward_flops",
    "total_params",
]


def mlp_matrices(model: ModelSpec) -> int:
    """Weight matrices of one MLP: 2 for gelu (up, down), 3 for swiglu (gate, up, down)."""
    return 3 if model.mlp == "swiglu" else 2


def layer_forward_flops(model: ModelSpec, tokens, seq_len=None) -> dict[str, np.ndarray]:
    """Forward FLOPs of one transformer layer, by component.

    Parameters
    ----------
    model : ModelSpec
    tokens : float or ndarray
        Tokens processed (batch x sequence), any shape.
    seq_len : float or ndarray, optional
        Attention span per token (keys attended); defaults to ``model.seq_len``.

    Returns
    -------
    dict of str -> ndarray (FLOPs)
        ``qkv`` (Q, K, V projections, GQA-aware), ``attention`` (scores QK^T and context AV),
        ``proj`` (output projection), ``mlp`` (dense MLP, or the top-k experts plus the router
        for MoE).
    """
    tokens = np.asarray(tokens, dtype=float)
    span = float(model.seq_len) if seq_len is None else np.asarray(seq_len, dtype=float)
    h, kv = float(model.hidden), float(model.kv_hidden)
    out = {
        "qkv": 2.0 * tokens * h * (h + 2.0 * kv),
        "attention": 4.0 * tokens * span * h,
        "proj": 2.0 * tokens * h * h,
    }
    matrices = mlp_matrices(model)
    if model.moe is None:
        out["mlp"] = 2.0 * matrices * tokens * h * model.ffn_hidden
    else:
        moe = model.moe
        router = 2.0 * tokens * h * moe.experts
        out["mlp"] = router + 2.0 * matrices * tokens * h * moe.expert_ffn_hidden * moe.top_k
    return out


def logits_forward_flops(model: ModelSpec, tokens) -> np.ndarray:
    """Forward FLOPs of the output (logits) layer: ``2 T h V``."""
    return 2.0 * np.asarray(tokens, dtype=float) * model.hidden * model.vocab


def recompute_forward_flops(model: ModelSpec, tokens, recompute) -> np.ndarray:
    """Extra forward FLOPs per layer that activation recomputation adds.

    ``full`` recomputes the whole layer; ``selective`` only the attention core; ``none`` nothing.
    ``recompute`` may be an array of mode codes (0 none, 1 selective, 2 full) for the search.
    """
    parts = layer_forward_flops(model, tokens)
    layer = sum(parts.values())
    code = _recompute_code(recompute)
    return np.where(code == 2, layer, np.where(code == 1, parts["attention"], 0.0))


RECOMPUTE_CODES = {"none": 0, "selective": 1, "full": 2}


def _recompute_code(recompute) -> np.ndarray:
    if isinstance(recompute, str):
        return np.asarray(RECOMPUTE_CODES[recompute])
    return np.asarray(recompute)


def model_flops_per_step(model: ModelSpec, global_batch) -> np.ndarray:
    """Model FLOPs of one training step, without recomputation (forward + 2x backward).

    This is the numerator of MFU (Chowdhery et al., PaLM, 2022, Appendix B; Korthikanti et al.).
    """
    tokens = np.asarray(global_batch, dtype=float) * model.seq_len
    layer = sum(layer_forward_flops(model, tokens).values())
    return 3.0 * (model.layers * layer + logits_forward_flops(model, tokens))


def hardware_flops_per_step(model: ModelSpec, global_batch, recompute) -> np.ndarray:
    """FLOPs the GPUs execute in one step: model FLOPs plus the recomputed forward FLOPs."""
    tokens = np.asarray(global_batch, dtype=float) * model.seq_len
    extra = model.layers * recompute_forward_flops(model, tokens, recompute)
    return model_flops_per_step(model, global_batch) + extra


def layer_params(model: ModelSpec) -> dict[str, float]:
    """Parameters of one layer: ``attention``, ``mlp`` (dense, or all experts + router), ``norm``.

    Biases are ignored (< 0.1 % of any model here); norms count scale and shift (2 x 2h).
    """
    h, kv = float(model.hidden), float(model.kv_hidden)
    matrices = mlp_matrices(model)
    if model.moe is None:
        mlp = matrices * h * model.ffn_hidden
        expert = 0.0
    else:
        expert = model.moe.experts * matrices * h * model.moe.expert_ffn_hidden
        mlp = h * model.moe.experts
    return {
        "attention": h * (h + 2.0 * kv) + h * h,
        "mlp": mlp,
        "experts": expert,
        "norm": 4.0 * h,
    }


def embedding_params(model: ModelSpec) -> tuple[float, float]:
    """(input embedding, output layer) parameters.

    GPT-style models (gelu) tie the output layer to the input embedding (Megatron default,
    ``share_embeddings_and_output_weights``); Llama-style models (swiglu) do not (Llama 3
    405B: 405B parameters only add up with two V x h matrices).
    """
    table = float(model.vocab) * model.hidden
    return table, (table if model.mlp == "swiglu" else 0.0)


def total_params(model: ModelSpec) -> float:
    """Total parameters of the model."""
    per_layer = sum(layer_params(model).values())
    embed_in, embed_out = embedding_params(model)
    return model.layers * per_layer + embed_in + embed_out
