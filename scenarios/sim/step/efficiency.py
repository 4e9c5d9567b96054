"""Compute-time model: how long a GPU takes for one layer of one microbatch.

Each GEMM of the layer (with the per-GPU shape after tensor / context / expert parallelism) runs
at ``peak * gemm_max * g(M) * g(N) * g(K)`` with ``g(x) = x / (x + gemm_half_dim)`` (small
dimensions waste tensor-core tiles and waves), but never faster than its operands can be read
from HBM (roofline, Williams et al., CACM 2009). Element-wise work (layer norms, bias-dropout-
add, activation functions, softmax of non-flash attention) is memory-bound: its bytes over the
achievable HBM bandwidth ``hbm_tbps * hbm_fraction``. The three constants per GPU type live in
the catalog's ``efficiency`` mapping (see ``docs/step-time-model.md`` for their fit).

The attention core depends on the kernel (``job.attention``): ``standard`` materialises the
``s x s`` scores (two batched GEMMs with the head dimension as a shape, plus softmax traffic);
``fused`` (cuDNN / FlashAttention-3 class) keeps each tile on chip and runs at the GEMM rate of
its query and key extents; ``flash`` (FlashAttention-2) does the same on Ampere but uses none of
Hopper's or Blackwell's newer tensor-core instructions there, so it reaches only the GPU's
``flash2_fraction`` of the fused rate.

All functions broadcast over candidate arrays (micro-batch, tp, cp, ep, recompute mode).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from scenarios.sim.format.scenario import ModelSpec

__all__ = ["ComputeRates", "EfficiencyParams", "LayerTimes", "layer_times", "optimizer_time_s"]

#: Bytes per activation element moved by kernels (bf16/fp16; fp8 GEMM outputs are bf16 too).
ACTIVATION_BYTES = 2.0

#: Element-wise HBM traffic of one layer's forward, bytes per element of the ``h``-wide
#: activations: 2 layer norms (read + write, 4 B each) and 2 fused bias-dropout-add (read two
#: inputs, write the output and a 1-byte mask: 7 B each), following the kernels listed by
#: Korthikanti et al. 2022, Section 4.1.
NORM_RESIDUAL_BYTES_PER_HIDDEN = 22.0
#: Activation function: gelu reads and writes the f-wide tensor (4 B/element); swiglu reads gate
#: and up and writes their product (6 B/element).
ACT_BYTES_PER_FFN = {"gelu": 4.0, "swiglu": 6.0}
#: Non-flash attention: fused scale-mask-softmax + dropout per score element: read 2 B, write the
#: probabilities 2 B, the dropout mask 1 B and the dropped probabilities 2 B (Korthikanti et al.
#: 2022, Section 4.1 lists the same tensors for the activation memory).
SOFTMAX_BYTES_PER_SCORE = 7.0
#: Backward element-wise traffic relative to forward (assumed: gradient kernels read the saved
#: input and the incoming gradient and write the outgoing gradient, about twice the forward).
BACKWARD_ELEMENTWISE_RATIO = 2.0
#: FlashAttention's backward runs 5 GEMMs against 2 in the forward (it recomputes the scores):
#: Dao, "FlashAttention-2", 2023, Algorithm 2.
FLASH_BACKWARD_RATIO = 2.5
#: FlashAttention tiles the score matrix in blocks of 128 rows/columns and skips the blocks a
#: causal mask hides entirely, so it executes about half of the ``s x s`` work of a causal
#: (decoder) layer: Dao, "FlashAttention-2", 2023, Section 3.1.1 ("Causal masking": about 1.7-1.8x
#: faster than without skipping). The standard fused-softmax kernels compute the full square.
FLASH_BLOCK = 128.0
#: fp8 (Transformer Engine): casting a GEMM input to fp8 reads 2 B and writes 1 B per element;
#: the amax of delayed scaling is computed in the same kernel (TE fuses cast + amax). Applied to
#: the inputs of the four linear GEMMs of a layer (QKV, projection, MLP up, MLP down); the
#: backward casts the output gradients likewise (the element-wise 2x of the backward).
FP8_CAST_BYTES = 3.0
#: Adam step HBM traffic per parameter it updates: read fp32 master, m, v and grad (16 B),
#: write master, m, v (12 B) and the bf16 copy (2 B).
ADAM_BYTES_PER_PARAM = 30.0

#: FlashAttention-2 on H100 reaches 35 % of the bf16 peak where FlashAttention-3 reaches 75 %
#: (Shah et al., "FlashAttention-3", 2024, Section 1 and Figure 5): 0.47 of the fused rate. The
#: default for a GPU without its own figure.
FLASH2_FRACTION_HOPPER = 0.47

#: Defaults for a GPU whose catalog entry has no calibrated constants (assumed: the H100 fit,
#: see topology/fixtures/catalog.yaml).
DEFAULT_EFFICIENCY = {
    "gemm_max": 0.605,
    "gemm_half_dim": 128.0,
    "hbm_fraction": 0.7,
    "flash2_fraction": FLASH2_FRACTION_HOPPER,
}

#: Attention kernels (``job.attention``) that never write the score matrix to HBM.
TILED_ATTENTION = ("flash", "fused")


@dataclass(frozen=True)
class EfficiencyParams:
    """Calibrated constants of one GPU type (see module docstring)."""

    gemm_max: float
    gemm_half_dim: float
    hbm_fraction: float
    flash2_fraction: float = FLASH2_FRACTION_HOPPER

    @classmethod
    def from_mapping(cls, efficiency: Mapping[str, float] | None) -> EfficiencyParams:
        values = dict(DEFAULT_EFFICIENCY)
        values.update({k: float(v) for k, v in (efficiency or {}).items() if k in values})
        return cls(**values)


@dataclass(frozen=True)
class LayerTimes:
    """Per-GPU time of one layer for one microbatch (s); arrays broadcast over candidates.

    Attributes
    ----------
    forward_s, backward_s, recompute_s : ndarray
        One layer's forward, backward and recompute (extra forward) time.
    logits_forward_s, logits_backward_s : ndarray
        The output layer (on the last pipeline stage).
    gemm_forward_s, elementwise_forward_s : ndarray
        Split of ``forward_s`` into tensor-core and memory-bound work (for the breakdown).
    tp_gemms_s : tuple of 4 ndarray
        Forward time of the GEMMs next to the layer's 4 tensor-parallel collectives (QKV after
        an all-gather, output projection before a reduce-scatter, MLP up after an all-gather,
        MLP down before a reduce-scatter): what comm-GEMM overlap can hide them behind.
    """

    forward_s: np.ndarray
    backward_s: np.ndarray
    recompute_s: np.ndarray
    logits_forward_s: np.ndarray
    logits_backward_s: np.ndarray
    gemm_forward_s: np.ndarray
    elementwise_forward_s: np.ndarray
    tp_gemms_s: tuple = ()


def _g(x, half: float):
    x = np.asarray(x, dtype=float)
    return x / (x + half)


def gemm_time_s(m, n, k, *, batch, peak_flops: float, hbm_bytes_per_s: float, eff):
    """Time of ``batch`` GEMMs of shape (m x k) @ (k x n), each FLOP counted as 2 per MAC.

    Parameters
    ----------
    m, n, k, batch : float or ndarray
        Shapes (broadcast).
    peak_flops : float
        Dense tensor-core peak of the precision (FLOP/s).
    hbm_bytes_per_s : float
        Achievable HBM bandwidth (B/s).
    eff : EfficiencyParams

    Returns
    -------
    ndarray
        Seconds (roofline: the slower of compute at the shape's efficiency and operand traffic).
    """
    m, n, k, batch = (np.asarray(v, dtype=float) for v in (m, n, k, batch))
    flops = 2.0 * m * n * k * batch
    rate = peak_flops * eff.gemm_max * _g(m, eff.gemm_half_dim) * _g(n, eff.gemm_half_dim)
    rate = rate * _g(k, eff.gemm_half_dim)
    traffic = ACTIVATION_BYTES * (m * k + k * n + m * n) * batch
    return np.maximum(flops / rate, traffic / hbm_bytes_per_s)


@dataclass(frozen=True)
class ComputeRates:
    """What one GPU computes with (a job's precision on a GPU type).

    Attributes
    ----------
    peak_tflops : float
        Dense peak of the job's precision (TFLOP/s).
    hbm_tbps : float
        Datasheet HBM bandwidth (TB/s).
    eff : EfficiencyParams
    bf16_peak_tflops : float, optional
        Given for fp8 jobs: Transformer Engine runs the linear GEMMs in fp8 (``peak_tflops``)
        but the attention core (FlashAttention / fused attention) and the output layer in bf16,
        and casts every linear GEMM input to fp8 (``FP8_CAST_BYTES``).
    """

    peak_tflops: float
    hbm_tbps: float
    eff: EfficiencyParams
    bf16_peak_tflops: float | None = None

    @classmethod
    def of_gpu(cls, gpu, precision: str) -> ComputeRates:
        """A catalog GPU's rates for ``precision`` (its calibrated ``efficiency`` constants)."""
        return cls(
            peak_tflops=gpu.peak_tflops(precision),
            hbm_tbps=gpu.hbm_tbps,
            eff=EfficiencyParams.from_mapping(gpu.efficiency),
            bf16_peak_tflops=gpu.peak_tflops("bf16") if precision == "fp8" else None,
        )

    @property
    def fp8(self) -> bool:
        return self.bf16_peak_tflops is not None

    @property
    def hbm_bytes_per_s(self) -> float:
        """Achievable HBM bandwidth (B/s)."""
        return self.hbm_tbps * 1e12 * self.eff.hbm_fraction

    def gemm_s(self, m, n, k, batch=1.0):
        """A GEMM at the job's precision (``gemm_time_s``)."""
        peak = self.peak_tflops * 1e12
        return gemm_time_s(
            m, n, k, batch=batch, peak_flops=peak, hbm_bytes_per_s=self.hbm_bytes_per_s, eff=self.eff
        )

    @property
    def bf16_peak_flops(self) -> float:
        """The bf16 peak (FLOP/s) of the attention core and the output layer."""
        return (self.bf16_peak_tflops if self.fp8 else self.peak_tflops) * 1e12

    def gemm_bf16_s(self, m, n, k, batch=1.0):
        """A GEMM at the bf16 peak (the same as ``gemm_s`` unless the job runs in fp8)."""
        peak = self.bf16_peak_flops
        return gemm_time_s(
            m, n, k, batch=batch, peak_flops=peak, hbm_bytes_per_s=self.hbm_bytes_per_s, eff=self.eff
        )


@dataclass(frozen=True)
class _LayerShape:
    """Per-GPU extents of one layer for one microbatch (broadcast over candidates)."""

    b: np.ndarray
    tp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    tokens: np.ndarray  # tokens whose activations live on this GPU (before the tp split)
    heads_local: np.ndarray

    @classmethod
    def of(cls, model: ModelSpec, layouts) -> _LayerShape:
        b, tp, cp, ep = (
            np.asarray(v, dtype=float) for v in (layouts.micro_batch, layouts.tp, layouts.cp, layouts.ep)
        )
        return cls(
            b=b, tp=tp, cp=cp, ep=ep, tokens=b * float(model.seq_len) / cp, heads_local=model.heads / tp
        )


def layer_times(
    model: ModelSpec, layouts, rates: ComputeRates, *, attention: str = "flash", overlap_tp: bool = False
) -> LayerTimes:
    """Per-GPU compute time of one layer for one microbatch.

    Parameters
    ----------
    model : ModelSpec
    layouts : CandidateLayouts
        Its micro-batch size (sequences), tp, cp, ep and recompute code (0 none, 1 selective,
        2 full), broadcast over candidates.
    rates : ComputeRates
        Peaks, HBM bandwidth and calibrated constants of the GPU (with fp8: both peaks).
    attention : {"flash", "fused", "standard"}
        The attention kernel (module docstring). The tiled ones (flash, fused) have no s^2
        element-wise traffic and recompute the scores in the backward.
    overlap_tp : bool
        Comm-GEMM overlap: the four linear GEMMs of the forward and their input-gradient GEMMs
        of the backward run as ``tp`` chunks of ``tokens / tp`` rows, one per ring step
        (Wang et al., "Overlap Communication with Dependent Computation via Decomposition",
        ASPLOS'23, Section 3; Transformer Engine userbuffers ring exchange), each at the
        efficiency of its smaller shape; the weight-gradient GEMMs stay whole.

    Returns
    -------
    LayerTimes
    """
    shape = _LayerShape.of(model, layouts)
    flash = attention in TILED_ATTENTION
    whole = _linear_gemms_s(model, shape, rates, 1.0)
    split = _linear_gemms_s(model, shape, rates, shape.tp) if overlap_tp else whole
    linear, linear_whole = sum(split), sum(whole)
    core = _attention_core_s(model, shape, rates, attention)
    elementwise, softmax = _elementwise_s(model, shape, rates, flash=flash)

    forward = linear + core + elementwise + softmax
    core_backward = core * (FLASH_BACKWARD_RATIO if flash else 2.0)
    backward = linear + linear_whole + core_backward + BACKWARD_ELEMENTWISE_RATIO * (elementwise + softmax)
    # Selective recompute re-runs the attention core; FlashAttention already does so inside
    # its backward, so it adds nothing there.
    selective = 0.0 if flash else core + softmax
    code = np.asarray(layouts.recompute)
    recompute_s = np.where(code == 2, forward, np.where(code == 1, selective, 0.0))
    logits_fwd = rates.gemm_bf16_s(shape.tokens, model.vocab / shape.tp, float(model.hidden))
    return LayerTimes(
        forward_s=np.asarray(forward),
        backward_s=np.asarray(backward),
        recompute_s=np.asarray(recompute_s),
        logits_forward_s=np.asarray(logits_fwd),
        logits_backward_s=np.asarray(2.0 * logits_fwd),
        gemm_forward_s=np.asarray(linear + core),
        elementwise_forward_s=np.asarray(elementwise + softmax),
        tp_gemms_s=split,
    )


def _linear_gemms_s(model: ModelSpec, shape: _LayerShape, rates: ComputeRates, split) -> tuple:
    """(QKV, projection, MLP up, MLP down) forward time, each GEMM run as ``split`` chunks of
    rows (comm-GEMM overlap; 1: whole)."""
    h, kv = float(model.hidden), float(model.kv_hidden)
    tokens, tp = shape.tokens, shape.tp

    def chunked(m, n, k, batch=1.0):
        return rates.gemm_s(m / split, n, k, batch * split)

    pair = chunked(tokens, (h + 2 * kv) / tp, h), chunked(tokens, h, h / tp)
    return (*pair, *_mlp_time(model, chunked, tokens, tp, shape.ep))


def _attention_core_s(model: ModelSpec, shape: _LayerShape, rates: ComputeRates, attention: str):
    """Forward time of the attention core (scores and context) of one layer."""
    s, cp, batch = float(model.seq_len), shape.cp, shape.b * shape.heads_local
    if attention in TILED_ATTENTION:
        core = tiled_attention_time_s(
            s / cp, s, model.head_dim, batch=batch, peak_flops=rates.bf16_peak_flops, eff=rates.eff
        )
        return core / (rates.eff.flash2_fraction if attention == "flash" else 1.0)
    core = rates.gemm_bf16_s(s / cp, s, model.head_dim, batch)
    return core + rates.gemm_bf16_s(s / cp, model.head_dim, s, batch)


def _elementwise_s(model: ModelSpec, shape: _LayerShape, rates: ComputeRates, *, flash: bool):
    """Memory-bound forward work of one layer (s): norms, residuals, activation and fp8 casts;
    and the softmax of a non-tiled attention kernel."""
    h, s, tokens, tp = float(model.hidden), float(model.seq_len), shape.tokens, shape.tp
    norm_bytes = NORM_RESIDUAL_BYTES_PER_HIDDEN * tokens * h / tp
    act_bytes = ACT_BYTES_PER_FFN[model.mlp] * tokens * _active_ffn(model) / tp
    softmax_bytes = (
        0.0 if flash else SOFTMAX_BYTES_PER_SCORE * shape.b * shape.heads_local * (s / shape.cp) * s
    )
    cast_bytes = FP8_CAST_BYTES * tokens * (3.0 * h + _active_ffn(model)) / tp if rates.fp8 else 0.0
    hbm = rates.hbm_bytes_per_s
    return (norm_bytes + act_bytes + cast_bytes) / hbm, softmax_bytes / hbm


def tiled_attention_time_s(rows, cols, head_dim, *, batch, peak_flops: float, eff):
    """Forward time of a tiled (fused) attention core: scores and context of ``rows`` queries
    against ``cols`` keys, for ``batch`` heads x sequences, causal.

    Each ``128 x head_dim`` tile stays in shared memory and both GEMMs run on it, so the head
    dimension is the whole inner tile, not a wasted one: only the query and key extents pay
    ``g`` (FlashAttention-3 reaches 75 % of the H100 bf16 peak at head dimension 128, the rate
    of a large GEMM: Shah et al. 2024, Figure 5). The kernel skips the blocks above the causal
    diagonal (``causal_block_fraction``).
    """
    rows, cols, batch = (np.asarray(v, dtype=float) for v in (rows, cols, batch))
    flops = 4.0 * rows * cols * head_dim * batch * causal_block_fraction(rows)
    rate = peak_flops * eff.gemm_max * _g(rows, eff.gemm_half_dim) * _g(cols, eff.gemm_half_dim)
    return flops / rate


def causal_block_fraction(rows) -> np.ndarray:
    """Fraction of the score blocks a causal FlashAttention kernel computes for ``rows`` query
    rows per GPU: the lower triangle including the diagonal blocks, ``(n + 1) / 2n`` of ``n x n``
    blocks. With context parallelism Megatron balances the causal work across ranks (each holds
    two mirrored chunks), so the fraction of the local square is the same."""
    n = np.maximum(np.ceil(np.asarray(rows, dtype=float) / FLASH_BLOCK), 1.0)
    return (n + 1.0) / (2.0 * n)


def _active_ffn(model: ModelSpec) -> float:
    """Width of the MLP hidden activations a token produces (top_k experts for MoE)."""
    if model.moe is None:
        return float(model.ffn_hidden)
    return float(model.moe.expert_ffn_hidden * model.moe.top_k)


def _mlp_time(model: ModelSpec, gemm, tokens, tp, ep):
    """(up, down) time of the MLP GEMMs (dense, or router + the local experts after the
    all-to-all)."""
    h = float(model.hidden)
    up_width = 2.0 if model.mlp == "swiglu" else 1.0
    if model.moe is None:
        f = float(model.ffn_hidden)
        return gemm(tokens, up_width * f / tp, h), gemm(tokens, h, f / tp)
    moe = model.moe
    local_experts = moe.experts / ep
    tokens_per_expert = tokens * moe.top_k / local_experts
    f = float(moe.expert_ffn_hidden)
    up = gemm(tokens_per_expert, up_width * f / tp, h, local_experts) + gemm(tokens, moe.experts, h)
    return up, gemm(tokens_per_expert, h, f / tp, local_experts)


def optimizer_time_s(params_updated, *, hbm_tbps: float, eff: EfficiencyParams):
    """Adam step time of the parameters one GPU updates (memory-bound), seconds."""
    hbm = hbm_tbps * 1e12 * eff.hbm_fraction
    return ADAM_BYTES_PER_PARAM * np.asarray(params_updated, dtype=float) / hbm
