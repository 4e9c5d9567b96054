"""Training-framework presets (``job.framework``): what a stack overlaps, which kernels and fp8
recipe it runs and how it lays memory out, set together, each after the release it follows.

A preset fills the job keys it governs (``overlap_dp``, ``overlap_tp``, ``overlap_pp``,
``attention``, ``precision``) only where the scenario does not name them: explicit job keys
override a preset. Default (no ``framework``): ``megatron-2022`` for fp16 jobs (the Megatron-LM +
Apex stack of 2020-22, which every fp16 row of the calibration set ran) and ``megatron-core``
otherwise (what a bf16 / fp8 job launched today with Megatron-LM's documented flags runs).
The table with sources is in ``docs/step-time-model.md`` section 8.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_FRAMEWORK", "FRAMEWORKS", "Framework", "default_framework"]


@dataclass(frozen=True)
class Framework:
    """One stack's settings.

    Attributes
    ----------
    name, release, source : str
        Preset key, the release it follows, and where each setting comes from.
    overlap_dp, overlap_tp, overlap_pp : bool
        Bucketed DP reduction / gather, TP comm-GEMM overlap, pipeline-send overlap.
    attention : str or None
        ``flash`` / ``fused`` / ``standard``; None: by precision (``scenario.default_attention``).
    precision : str or None
        Precision the preset trains in when the job does not say (None: the job default).
    bucket_min_params, bucket_params_per_dp_rank : float
        Gradient bucket size ``max(min, per_rank x dp)`` parameters.
    fp8_params : bool
        With fp8: weights kept and all-gathered in fp8 (no bf16 copy beside the fp8 one).
    fp8 : bool
        Whether the stack trains in fp8 at all (Transformer Engine).
    """

    name: str
    release: str
    source: str
    overlap_dp: bool
    overlap_tp: bool
    overlap_pp: bool
    attention: str | None
    precision: str | None
    bucket_min_params: float
    bucket_params_per_dp_rank: float
    fp8_params: bool
    fp8: bool


FRAMEWORKS: dict[str, Framework] = {
    f.name: f
    for f in (
        Framework(
            name="megatron-2022",
            release="Megatron-LM v2.x-v3.0 (NVIDIA/Megatron-LM, 2021-22) with Apex fused kernels",
            source=(
                "Narayanan et al. SC'21 and Korthikanti et al. MLSys'23 code: train_step all-reduces "
                "the gradients after the backward (local DDP allreduce_gradients), blocking "
                "send/recv, no TP overlap, fused scale-mask-softmax attention; no fp8"
            ),
            overlap_dp=False,
            overlap_tp=False,
            overlap_pp=False,
            attention="standard",
            precision=None,
            bucket_min_params=float("inf"),
            bucket_params_per_dp_rank=0.0,
            fp8_params=False,
            fp8=False,
        ),
        Framework(
            name="megatron-core",
            release="Megatron-Core core_r0.9-r0.13 (2024-25) via Megatron-LM pretrain_gpt.py",
            source=(
                "Megatron-LM README flags --use-distributed-optimizer --overlap-grad-reduce "
                "--overlap-param-gather; overlap_p2p_comm on by default (arguments.py "
                "--no-overlap-p2p-communication); --tp-comm-overlap off by default (needs "
                "userbuffers); buckets max(40M, 1M x dp) (distributed_data_parallel.py); "
                "Transformer Engine fused (flash) attention; fp8 via TE delayed scaling"
            ),
            overlap_dp=True,
            overlap_tp=False,
            overlap_pp=True,
            attention="flash",
            precision=None,
            bucket_min_params=40e6,
            bucket_params_per_dp_rank=1e6,
            fp8_params=False,
            fp8=True,
        ),
        Framework(
            name="nemo-fp8",
            release="NeMo 2.0 (24.12-25.04) performance recipes with Transformer Engine 1.x-2.x",
            source=(
                "nemo/collections/llm/recipes llama3 performance mode: tp_comm_overlap, "
                "overlap_grad_reduce, overlap_param_gather, overlap_p2p_comm; bf16_with_fp8_mixed "
                "(TE delayed scaling, hybrid E4M3 forward / E5M2 backward, amax history); "
                "fp8_param_gather (weights kept and gathered in fp8); Transformer Engine's "
                "FusedAttention (cuDNN flash kernels), the backend TE selects on sm90 and newer"
            ),
            overlap_dp=True,
            overlap_tp=True,
            overlap_pp=True,
            attention="fused",
            precision="fp8",
            bucket_min_params=40e6,
            bucket_params_per_dp_rank=1e6,
            fp8_params=True,
            fp8=True,
        ),
        Framework(
            name="deepspeed",
            release="DeepSpeed 0.14-0.16 ZeRO (with Megatron-DeepSpeed for tp / pp)",
            source=(
                "DeepSpeed config docs: zero_optimization.overlap_comm, reduce_bucket_size 5e8 "
                "elements; pipeline engine with blocking send/recv; Megatron-2021-style TP "
                "without overlap; flash-attn 2 in Megatron-DeepSpeed; no fp8"
            ),
            overlap_dp=True,
            overlap_tp=False,
            overlap_pp=False,
            attention="flash",
            precision=None,
            bucket_min_params=5e8,
            bucket_params_per_dp_rank=0.0,
            fp8_params=False,
            fp8=False,
        ),
    )
}
DEFAULT_FRAMEWORK = "megatron-core"


def default_framework(precision: str) -> str:
    """The preset of a job that names none: the 2021-22 Megatron-LM stack for fp16 (as
    ``default_attention`` assumes), Megatron-Core otherwise."""
    return "megatron-2022" if precision == "fp16" else DEFAULT_FRAMEWORK
