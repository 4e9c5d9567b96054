"""The vectorized heart of the step-time model, shared by ``predict`` and the layout search:
compute, communication and schedule of a training step for any number of candidate layouts.

``assemble_step`` reads top-down: ``step_compute`` (a layer's compute and tp / cp / ep
communication, the busiest pipeline stage), ``step_communication`` (pipeline sends and the
data-parallel synchronisation, sharing a NIC), ``step_schedule`` (exposed sends and bubble),
then the breakdown, what stayed hidden, memory, FLOPs and the details. Every value broadcasts
over the candidates of ``CandidateLayouts``. The model and its sources are documented in
``docs/step-time-model.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from scenarios.sim.step.candidates import CandidateLayouts, StackOptions
from scenarios.sim.step.comm import DpSync, LayerComm, dp_sync, layer_comm, params_updated, step_volumes
from scenarios.sim.step.efficiency import ComputeRates, LayerTimes, layer_times, optimizer_time_s
from scenarios.sim.step.flops import hardware_flops_per_step, model_flops_per_step
from scenarios.sim.step.memory import memory_per_gpu
from scenarios.sim.step.pipeline import bubble_fraction, stage_layers
from scenarios.sim.step.result import BREAKDOWN_KEYS, PIPELINE_KEYS

__all__ = [
    "StepArrays",
    "StepComm",
    "StepCompute",
    "StepSchedule",
    "assemble_step",
    "step_communication",
    "step_compute",
    "step_schedule",
]

CommTime = Callable[[str, str, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class StepArrays:
    """Everything ``assemble_step`` computes, one entry per candidate (broadcast shape)."""

    step_time_s: np.ndarray
    breakdown: dict[str, np.ndarray]
    #: Seconds per step each communication kind spends hidden behind compute (overlap).
    hidden: dict[str, np.ndarray]
    memory: dict[str, np.ndarray]
    model_flops: np.ndarray
    hardware_flops: np.ndarray
    volumes: dict[str, dict[str, np.ndarray]]
    details: dict[str, np.ndarray]


@dataclass(frozen=True)
class StepCompute:
    """One layer and one microbatch on the busiest pipeline stage (s; broadcast over candidates).

    Attributes
    ----------
    times : LayerTimes
        A layer's compute (and the output layer's).
    layer_comm : LayerComm
        A layer's tp / cp / ep communication.
    layers : ndarray
        Layers on the busiest stage (the last one when its output layer makes it the busiest).
    logits_forward_s, logits_backward_s : ndarray
        The output layer's forward and backward when it runs on the busiest stage, else 0.
    """

    times: LayerTimes
    layer_comm: LayerComm
    layers: np.ndarray
    logits_forward_s: np.ndarray
    logits_backward_s: np.ndarray

    @property
    def forward_s(self) -> np.ndarray:
        """One microbatch's forward on the stage, all its chunks, communication included."""
        return self.layers * (self.times.forward_s + self.layer_comm.forward_s) + self.logits_forward_s

    @property
    def backward_s(self) -> np.ndarray:
        """One microbatch's backward (and recompute) on the stage, communication included."""
        times = self.times
        layer = times.backward_s + times.recompute_s + self.layer_comm.backward_s
        return self.layers * layer + self.logits_backward_s

    @property
    def compute_s(self) -> np.ndarray:
        """One microbatch's compute on the stage (no communication)."""
        times = self.times
        per_layer = times.forward_s + times.backward_s + times.recompute_s
        return self.layers * per_layer + (self.logits_forward_s + self.logits_backward_s)


@dataclass(frozen=True)
class StepComm:
    """The step's pipeline sends and data-parallel synchronisation (s; broadcast over candidates).

    Attributes
    ----------
    p2p_bytes : ndarray
        One pipeline send's buffer per rank.
    p2p_comm_s : ndarray
        One send (0 without pipeline parallelism).
    p2p_s : ndarray
        What one send exposes: with overlap what exceeds the shorter op, plus its share of the
        wait when DP and PP share a NIC.
    congestion_s : ndarray
        That wait over the step (``details.dp_pp_congestion_s``).
    dp : DpSync
    """

    p2p_bytes: np.ndarray
    p2p_comm_s: np.ndarray
    p2p_s: np.ndarray
    congestion_s: np.ndarray
    dp: DpSync


@dataclass(frozen=True)
class StepSchedule:
    """The pipeline schedule's exposed sends and its fill / drain idle over a step (s)."""

    pp_s: np.ndarray
    bubble_fraction: np.ndarray
    bubble_s: np.ndarray


def assemble_step(
    model,
    layouts: CandidateLayouts,
    stack: StackOptions,
    *,
    gpu,
    comm_time: CommTime,
    straggler_factor: float = 1.0,
    scaleup_ranks: float = np.inf,
) -> StepArrays:
    """Step time and its breakdown, vectorized over candidate layouts.

    Parameters
    ----------
    model : ModelSpec
    layouts : CandidateLayouts
        The candidates (broadcast together): degrees, batch split, recompute, ZeRO.
    stack : StackOptions
        Precision, attention kernel, overlaps and the framework's buckets and fp8 layout.
    gpu : GpuSpec
        Peaks, HBM and the calibrated ``efficiency`` constants.
    comm_time : callable(kind, op, bytes) -> ndarray
        Time (s) of one collective per rank buffer ``bytes`` (ndarray, candidates' shape) for
        kind in tp/cp/ep/pp/dp/dp_cp/edp; ``CommModel.time_s`` for a single layout.
    straggler_factor : float
        ``E[max over the job's GPUs]`` of the per-step time factor (``job_stragglers``): the
        pipeline part of the step is stretched by it. 1 leaves the term 0 (``predict`` fills
        it from its own draw after simulating the schedule).
    scaleup_ranks : float
        The job's ranks per scale-up domain (``job_scaleup_ranks``): a data-parallel group
        wider than that (``tp cp dp``) and a pipeline share the GPUs' NICs (default: never).

    Returns
    -------
    StepArrays
    """
    rates = ComputeRates.of_gpu(gpu, stack.precision)
    compute = step_compute(model, layouts, stack, rates, comm_time)
    comm = step_communication(
        model, layouts, stack, compute, comm_time=comm_time, scaleup_ranks=scaleup_ranks
    )
    schedule = step_schedule(layouts, compute, comm)
    updated = params_updated(
        model, tp=layouts.tp, pp=layouts.pp, dp=layouts.dp, cp=layouts.cp, ep=layouts.ep, zero=layouts.zero
    )
    optimizer_s = optimizer_time_s(updated, hbm_tbps=rates.hbm_tbps, eff=rates.eff)
    breakdown = _breakdown(layouts, compute, comm, schedule, optimizer_s, straggler_factor)
    memory = memory_per_gpu(
        model,
        layouts,
        hbm_gib=gpu.hbm_gib,
        flash=stack.tiled_attention,
        fp8=stack.fp8,
        fp8_params=stack.fp8_params,
    )
    return StepArrays(
        step_time_s=sum(breakdown[k] for k in BREAKDOWN_KEYS),
        breakdown=breakdown,
        hidden=_hidden(layouts, compute, comm, np.shape(schedule.bubble_s)),
        memory=memory,
        model_flops=model_flops_per_step(model, layouts.global_batch),
        hardware_flops=hardware_flops_per_step(model, layouts.global_batch, layouts.recompute),
        volumes=step_volumes(
            layouts, layers=compute.layers, p2p_bytes=comm.p2p_bytes, comm=compute.layer_comm, dp=comm.dp
        ),
        details=_details(layouts, compute, comm, schedule),
    )


def step_compute(model, layouts: CandidateLayouts, stack: StackOptions, rates, comm_time) -> StepCompute:
    """A layer's compute and tp / cp / ep communication, and the busiest pipeline stage: the
    last one when its layers and the output layer take at least an inner stage's time."""
    times = layer_times(model, layouts, rates, attention=stack.attention, overlap_tp=stack.overlap_tp)
    comm = layer_comm(
        model,
        layouts,
        times,
        comm_time=comm_time,
        overlap_tp=stack.overlap_tp,
        gather_bytes=1.0 if stack.fp8 else 2.0,
    )
    inner, last = stage_layers(model.layers, layouts.pp.astype(np.int64))
    layer_f = times.forward_s + comm.forward_s
    layer_b = times.backward_s + times.recompute_s + comm.backward_s
    inner_total = inner * (layer_f + layer_b)
    last_total = last * (layer_f + layer_b) + times.logits_forward_s + times.logits_backward_s
    last_busiest = last_total >= inner_total
    return StepCompute(
        times=times,
        layer_comm=comm,
        layers=np.where(last_busiest, last, inner),
        logits_forward_s=np.where(last_busiest, times.logits_forward_s, 0.0),
        logits_backward_s=np.where(last_busiest, times.logits_backward_s, 0.0),
    )


def step_communication(
    model, layouts: CandidateLayouts, stack: StackOptions, compute: StepCompute, *, comm_time, scaleup_ranks
) -> StepComm:
    """Pipeline sends (every microbatch and chunk sends its activations on and its gradient
    back) and the data-parallel synchronisation, which share a NIC when both leave the
    scale-up domain."""
    tp, pp, dp, cp, vpp = layouts.tp, layouts.pp, layouts.dp, layouts.cp, layouts.vpp
    m = layouts.microbatches
    stage_f, stage_b = compute.forward_s, compute.backward_s
    p2p_bytes = layouts.micro_batch * model.seq_len / cp * model.hidden * 2.0 / tp
    p2p_total = np.where(pp > 1, comm_time("pp", "p2p", p2p_bytes), 0.0)
    # With overlap (Megatron-Core overlap_p2p_comm) a chunk's send runs beside the next op's
    # compute, so only what exceeds the shorter op shows.
    shortest_op = np.minimum(stage_f, stage_b) / vpp
    p2p_s = np.maximum(p2p_total - shortest_op, 0.0) if stack.overlap_pp else p2p_total
    sync = dp_sync(
        model, layouts, stack, stage_forward_s=stage_f, stage_backward_s=stage_b, comm_time=comm_time
    )
    # DP and PP on one NIC: when both groups leave the scale-up domain, the sends a microbatch
    # hides behind its compute share the link with that microbatch's ZeRO 2/3 stream; what no
    # longer fits in the compute window waits, spread over the step's sends.
    shares_nic = (pp > 1) & (tp * cp * dp > scaleup_ranks)
    hidden_sends = np.where(shares_nic, 2.0 * vpp * (p2p_total - p2p_s), 0.0)
    stream, window = sync.per_mb_stream_s, stage_f + stage_b
    congestion = np.maximum(m - 1.0, 0.0) * (
        np.maximum(stream + hidden_sends - window, 0.0) - np.maximum(stream - window, 0.0)
    )
    return StepComm(
        p2p_bytes=p2p_bytes,
        p2p_comm_s=p2p_total,
        p2p_s=p2p_s + congestion / (2.0 * m * vpp),
        congestion_s=congestion,
        dp=sync,
    )


def step_schedule(layouts: CandidateLayouts, compute: StepCompute, comm: StepComm) -> StepSchedule:
    """The schedule with per-chunk ops (t_f/v + p2p) and (t_b/v + p2p) takes (m v + p - 1) op
    pairs (pipeline.pipeline_time_s; equal to the simulated Megatron order, test_pipeline):
    every op's own send is "pp" (2 m v sends per stage), the (p - 1) idle op pairs of fill and
    drain are the bubble, (p - 1) / (v m) of the busy time."""
    m, vpp = layouts.microbatches, layouts.vpp
    pp_exposed = 2.0 * m * vpp * comm.p2p_s
    fraction = bubble_fraction(layouts.pp, vpp, m)
    busy = m * (compute.forward_s + compute.backward_s) + pp_exposed
    return StepSchedule(pp_s=pp_exposed, bubble_fraction=fraction, bubble_s=fraction * busy)


def _breakdown(layouts, compute, comm, schedule, optimizer_s, straggler_factor) -> dict[str, np.ndarray]:
    """Seconds per step by ``BREAKDOWN_KEYS``, broadcast to the candidates' shape."""
    m, layers, per_layer = layouts.microbatches, compute.layers, compute.layer_comm
    breakdown = {
        "compute": m * compute.compute_s,
        "tp": m * layers * per_layer.tp_s,
        "cp": m * layers * per_layer.cp_s,
        "ep": m * layers * per_layer.ep_s,
        "pp": schedule.pp_s,
        "bubble": schedule.bubble_s,
        "dp": comm.dp.exposed_s,
        "optimizer": optimizer_s,
    }
    pipeline = sum(breakdown[k] for k in PIPELINE_KEYS)
    breakdown["straggler"] = (straggler_factor - 1.0) * pipeline
    shape = np.shape(schedule.bubble_s)
    return {k: np.broadcast_to(np.asarray(v, dtype=float), shape) for k, v in breakdown.items()}


def _hidden(layouts, compute, comm, shape) -> dict[str, np.ndarray]:
    """Seconds per step each communication kind runs hidden behind compute (``OVERLAP_KEYS``),
    broadcast to ``shape``."""
    m, vpp = layouts.microbatches, layouts.vpp
    per_step_layers = m * compute.layers
    dp = comm.dp
    hidden = {
        "tp": per_step_layers * compute.layer_comm.tp_hidden_s,
        "cp": per_step_layers * compute.layer_comm.cp_hidden_s,
        "ep": np.zeros(shape),
        "pp": 2.0 * m * vpp * (comm.p2p_comm_s - comm.p2p_s),
        "dp": dp.time_s + dp.per_microbatch_s - dp.exposed_s,
    }
    return {k: np.broadcast_to(np.maximum(np.asarray(v, dtype=float), 0.0), shape) for k, v in hidden.items()}


def _details(layouts, compute, comm, schedule) -> dict[str, np.ndarray]:
    """The intermediate figures of the "explain" view and the timeline."""
    times, per_layer, layers = compute.times, compute.layer_comm, compute.layers
    return {
        "microbatches": layouts.microbatches,
        "stage_layers": layers,
        "bubble_fraction": schedule.bubble_fraction,
        "layer_forward_s": times.forward_s,
        "layer_backward_s": times.backward_s,
        "layer_recompute_s": times.recompute_s,
        "layer_gemm_forward_s": times.gemm_forward_s,
        "layer_elementwise_forward_s": times.elementwise_forward_s,
        "layer_tp_comm_s": per_layer.tp_s,
        # One microbatch on the busiest stage, all its chunks (what the timeline splits).
        "stage_forward_compute_s": layers * times.forward_s + compute.logits_forward_s,
        "stage_forward_comm_s": layers * per_layer.forward_s,
        "stage_backward_compute_s": layers * (times.backward_s + times.recompute_s)
        + compute.logits_backward_s,
        "stage_backward_comm_s": layers * per_layer.backward_s,
        "p2p_s": comm.p2p_s,
        "p2p_comm_s": comm.p2p_comm_s,
        "dp_comm_s": comm.dp.time_s,
        "dp_buckets": comm.dp.buckets,
        "dp_microbatch_stream_s": comm.dp.per_mb_stream_s,
        "dp_pp_congestion_s": comm.congestion_s,
    }
