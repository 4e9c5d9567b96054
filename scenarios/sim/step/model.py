"""Step time of a training job on a cluster: assemble compute, communication and schedule.

``predict(scenario, catalog=...)`` builds the fabric from the cluster spec (generator +
compile), places the job's ranks (``placement``, ``layout``), costs its collectives on the
routed fabric (``network.comm_model``), and combines them with the per-layer compute model
(``efficiency``), the simulated pipeline schedule (``pipeline``), memory (``memory``) and
stragglers (``stragglers``). ``assemble_step`` is the vectorized heart shared with the layout search:
every argument may be an array over candidates. The model and its sources are documented in
``docs/step-time-model.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from scenarios.sim.format.frameworks import DEFAULT_FRAMEWORK, FRAMEWORKS, Framework
from scenarios.sim.format.scenario import Scenario, ScenarioError, check_scenario
from scenarios.sim.placement import place_job
from scenarios.sim.step.comm import dp_sync, layer_comm, params_updated, step_volumes
from scenarios.sim.step.efficiency import TILED_ATTENTION, EfficiencyParams, layer_times, optimizer_time_s
from scenarios.sim.step.flops import (
    RECOMPUTE_CODES,
    hardware_flops_per_step,
    model_flops_per_step,
)
from scenarios.sim.step.layout import build_layout
from scenarios.sim.step.memory import GIB, memory_per_gpu
from scenarios.sim.step.network import comm_model, fabric_with_capacity_scale, rack_link_utilization
from scenarios.sim.step.pipeline import (
    bubble_fraction,
    pipeline_schedule,
    simulate_schedule,
    stage_layers,
    stage_timeline,
)
from scenarios.sim.step.result import BREAKDOWN_KEYS, MEMORY_KEYS, PIPELINE_KEYS, StepResult
from scenarios.sim.step.stragglers import straggler_effect
from topology.fabric.compiled import compile_plan
from topology.fabric.generators import generate

__all__ = ["StepArrays", "assemble_step", "predict"]

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


def assemble_step(
    model,
    *,
    micro_batch,
    global_batch: int,
    tp,
    pp,
    dp,
    cp,
    ep,
    vpp,
    recompute,
    zero,
    precision: str,
    attention: str,
    overlap_dp: bool,
    gpu,
    eff: EfficiencyParams,
    comm_time: CommTime,
    overlap_tp: bool = False,
    overlap_pp: bool = False,
    framework: Framework | None = None,
    straggler_factor: float = 1.0,
    scaleup_ranks: float = np.inf,
) -> StepArrays:
    """Step time and its breakdown, vectorized over candidate layouts.

    Parameters
    ----------
    model : ModelSpec
    micro_batch, tp, pp, dp, cp, ep, vpp, recompute, zero : int or ndarray
        Candidate parameters (broadcast together); ``recompute`` as codes 0/1/2.
    global_batch : int
    precision : {"bf16", "fp16", "fp8"}
    attention : {"flash", "fused", "standard"}
        The attention kernel (``efficiency.layer_times``).
    overlap_dp : bool
        Data-parallel reduction / gather overlapped bucket by bucket.
    gpu : GpuSpec
    eff : EfficiencyParams
    comm_time : callable(kind, op, bytes) -> ndarray
        Time (s) of one collective per rank buffer ``bytes`` (ndarray, candidates' shape) for
        kind in tp/cp/ep/pp/dp/dp_cp/edp; ``CommModel.time_s`` for a single layout.
    overlap_tp, overlap_pp : bool
        Tensor-parallel collectives overlapped with their GEMMs (Transformer Engine comm-GEMM
        overlap); pipeline sends overlapped with the next op's compute.
    framework : Framework, optional
        The stack's bucket sizes and fp8 weight layout (default ``megatron-core``); its overlap
        and kernel choices arrive through the arguments above (the job may override them).
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
    b, tp, pp, dp, cp, ep, vpp = (np.asarray(v, dtype=float) for v in (micro_batch, tp, pp, dp, cp, ep, vpp))
    code = np.asarray(recompute)
    m = global_batch / (b * dp)
    stack = framework or FRAMEWORKS[DEFAULT_FRAMEWORK]
    fp8 = precision == "fp8"
    times = layer_times(
        model,
        micro_batch=b,
        tp=tp,
        cp=cp,
        ep=ep,
        recompute=code,
        attention=attention,
        overlap_tp=overlap_tp,
        peak_tflops=gpu.peak_tflops(precision),
        hbm_tbps=gpu.hbm_tbps,
        eff=eff,
        bf16_peak_tflops=gpu.peak_tflops("bf16") if fp8 else None,
    )
    comm = layer_comm(
        model,
        b=b,
        tp=tp,
        cp=cp,
        code=code,
        times=times,
        comm_time=comm_time,
        overlap_tp=overlap_tp,
        gather_bytes=1.0 if fp8 else 2.0,
    )

    inner, last = stage_layers(model.layers, pp.astype(np.int64))
    layer_f = times.forward_s + comm["forward_s"]
    layer_b = times.backward_s + times.recompute_s + comm["backward_s"]
    inner_total = inner * (layer_f + layer_b)
    last_total = last * (layer_f + layer_b) + times.logits_forward_s + times.logits_backward_s
    last_busiest = last_total >= inner_total
    stage_layer_count = np.where(last_busiest, last, inner)
    logits_s = np.where(last_busiest, times.logits_forward_s + times.logits_backward_s, 0.0)
    stage_f = stage_layer_count * layer_f + np.where(last_busiest, times.logits_forward_s, 0.0)
    stage_b = stage_layer_count * layer_b + np.where(last_busiest, times.logits_backward_s, 0.0)

    compute_per_mb = stage_layer_count * (times.forward_s + times.backward_s + times.recompute_s) + logits_s
    p2p_bytes = b * model.seq_len / cp * model.hidden * 2.0 / tp
    p2p_total = np.where(pp > 1, comm_time("pp", "p2p", p2p_bytes), 0.0)
    # With overlap (Megatron-Core overlap_p2p_comm) a chunk's send runs beside the next op's
    # compute, so only what exceeds the shorter op shows.
    shortest_op = np.minimum(stage_f, stage_b) / vpp
    p2p_s = np.maximum(p2p_total - shortest_op, 0.0) if overlap_pp else p2p_total
    dp_s, dp_volume = dp_sync(
        model,
        tp=tp,
        pp=pp,
        dp=dp,
        cp=cp,
        ep=ep,
        vpp=vpp,
        zero=np.asarray(zero),
        precision=precision,
        stage_f=stage_f,
        stage_b=stage_b,
        overlap=overlap_dp,
        microbatches=m,
        comm_time=comm_time,
        stack=stack,
    )
    # DP and PP on one NIC: when both groups leave the scale-up domain, the sends a microbatch
    # hides behind its compute share the link with that microbatch's ZeRO 2/3 stream; what no
    # longer fits in the compute window waits, spread over the step's sends.
    shares_nic = (pp > 1) & (tp * cp * dp > scaleup_ranks)
    hidden_sends = np.where(shares_nic, 2.0 * vpp * (p2p_total - p2p_s), 0.0)
    stream, window = dp_volume["per_mb_stream_s"], stage_f + stage_b
    congestion = np.maximum(m - 1.0, 0.0) * (
        np.maximum(stream + hidden_sends - window, 0.0) - np.maximum(stream - window, 0.0)
    )
    p2p_s = p2p_s + congestion / (2.0 * m * vpp)
    # The schedule with per-chunk ops (t_f/v + p2p) and (t_b/v + p2p) takes (m v + p - 1) op
    # pairs (pipeline.pipeline_time_s; equal to the simulated Megatron order, test_pipeline):
    # every op's own send is "pp" (2 m v sends per stage), the (p - 1) idle op pairs of fill
    # and drain are the bubble, (p - 1) / (v m) of the busy time.
    pp_exposed = 2.0 * m * vpp * p2p_s
    bubble = bubble_fraction(pp, vpp, m) * (m * (stage_f + stage_b) + pp_exposed)

    memory = memory_per_gpu(
        model,
        micro_batch=b,
        tp=tp,
        pp=pp,
        dp=dp,
        cp=cp,
        ep=ep,
        vpp=vpp,
        microbatches=m,
        recompute=code,
        zero=zero,
        flash=attention in TILED_ATTENTION,
        hbm_gib=gpu.hbm_gib,
        fp8=fp8,
        fp8_params=fp8 and stack.fp8_params,
    )
    updated = params_updated(model, tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, zero=np.asarray(zero))
    breakdown = {
        "compute": m * compute_per_mb,
        "tp": m * stage_layer_count * comm["tp_s"],
        "cp": m * stage_layer_count * comm["cp_s"],
        "ep": m * stage_layer_count * comm["ep_s"],
        "pp": pp_exposed,
        "bubble": bubble,
        "dp": dp_s,
        "optimizer": optimizer_time_s(updated, hbm_tbps=gpu.hbm_tbps, eff=eff),
    }
    pipeline = sum(breakdown[k] for k in PIPELINE_KEYS)
    breakdown["straggler"] = (straggler_factor - 1.0) * pipeline
    breakdown = {
        k: np.broadcast_to(np.asarray(v, dtype=float), np.shape(bubble)) for k, v in breakdown.items()
    }
    step = sum(breakdown[k] for k in BREAKDOWN_KEYS)
    per_step_layers = m * stage_layer_count
    hidden = {
        "tp": per_step_layers * comm["tp_hidden_s"],
        "cp": per_step_layers * comm["cp_hidden_s"],
        "ep": np.zeros_like(bubble),
        "pp": 2.0 * m * vpp * (p2p_total - p2p_s),
        "dp": dp_volume["time_s"] + dp_volume["per_microbatch_s"] - dp_s,
    }
    hidden = {
        k: np.broadcast_to(np.maximum(np.asarray(v, dtype=float), 0.0), np.shape(bubble))
        for k, v in hidden.items()
    }
    volumes = step_volumes(
        m=m,
        vpp=vpp,
        layers=stage_layer_count,
        p2p_bytes=p2p_bytes,
        comm=comm,
        dp_volume=dp_volume,
        cp=cp,
        ep=ep,
    )
    return StepArrays(
        step_time_s=step,
        breakdown=breakdown,
        hidden=hidden,
        memory=memory,
        model_flops=model_flops_per_step(model, global_batch),
        hardware_flops=hardware_flops_per_step(model, global_batch, code),
        volumes=volumes,
        details={
            "microbatches": m,
            "stage_layers": stage_layer_count,
            "bubble_fraction": bubble_fraction(pp, vpp, m),
            "layer_forward_s": times.forward_s,
            "layer_backward_s": times.backward_s,
            "layer_recompute_s": times.recompute_s,
            "layer_gemm_forward_s": times.gemm_forward_s,
            "layer_elementwise_forward_s": times.elementwise_forward_s,
            "layer_tp_comm_s": comm["tp_s"],
            # One microbatch on the busiest stage, all its chunks (what the timeline splits).
            "stage_forward_compute_s": stage_layer_count * times.forward_s
            + np.where(last_busiest, times.logits_forward_s, 0.0),
            "stage_forward_comm_s": stage_layer_count * comm["forward_s"],
            "stage_backward_compute_s": stage_layer_count * (times.backward_s + times.recompute_s)
            + np.where(last_busiest, times.logits_backward_s, 0.0),
            "stage_backward_comm_s": stage_layer_count * comm["backward_s"],
            "p2p_s": p2p_s,
            "p2p_comm_s": p2p_total,
            "dp_comm_s": dp_volume["time_s"],
            "dp_buckets": dp_volume["buckets"],
            "dp_microbatch_stream_s": stream,
            "dp_pp_congestion_s": congestion,
        },
    )


# --- the single-scenario entry point -------------------------------------------------------


def _progress(on_progress, fraction: float, message: str) -> None:
    if on_progress is not None:
        on_progress(fraction, message)


def cluster_plan(cluster, catalog):
    """Generate the ``FabricPlan`` a scenario's ``cluster:`` describes (``ScenarioError`` naming
    the cluster when the generator cannot build it)."""

    try:
        return generate(cluster.generator, catalog=catalog, **cluster.generator_kwargs())
    except ValueError as exc:
        raise ScenarioError(f"cluster: {exc}") from None


def build_fabric(scenario: Scenario, catalog):
    """Generate and compile the scenario's cluster (with what-if capacity changes applied)."""

    plan = cluster_plan(scenario.effective_cluster(), catalog)
    fabric = compile_plan(plan)
    scale = scenario.what_if.spine_capacity_scale
    if scale < 1.0:
        fabric = fabric_with_capacity_scale(fabric, np.asarray(fabric.link_tier) >= 1, scale)
    return fabric


def predict(scenario: Scenario, *, catalog, fabric=None, rng=None, on_progress=None) -> StepResult:
    """Predict one training step of ``scenario`` on its cluster.

    The job runs on the nodes ``scenarios.sim.placement`` picks (``job.nodes``,
    ``job.placement``, ``job.gpus_per_domain``; default the whole cluster): only their GPUs
    send traffic and draw stragglers. The pipeline part of the step is the simulated Megatron
    schedule (``pipeline.simulate_schedule``), laid out per stage in ``result.timeline``.

    Parameters
    ----------
    scenario : Scenario
    catalog : topology.fabric.specs.Catalog
    fabric : CompiledFabric, optional
        Pre-compiled fabric of the scenario's cluster (built from ``scenario.cluster`` when
        omitted; what-if capacity changes are then applied too).
    rng : numpy.random.Generator or int, optional
        Randomness for the straggler draws (default: ``what_if.seed``).
    on_progress : callable(fraction: float, message: str), optional

    Returns
    -------
    StepResult

    Raises
    ------
    ScenarioError
    """

    check_scenario(scenario, catalog)
    job, what_if = scenario.job, scenario.what_if
    server = catalog.server(scenario.effective_cluster().server)
    gpu = catalog.gpu(what_if.gpu or server.gpu)
    eff = EfficiencyParams.from_mapping(gpu.efficiency)
    _progress(on_progress, 0.0, "building fabric")
    if fabric is None:
        fabric = build_fabric(scenario, catalog)
    p = job.parallel
    placement = place_job(fabric, job)
    if placement.world_size != p.gpus:
        raise ScenarioError(
            f"job.parallel: dp × tp × pp × cp must equal the job's GPUs on the fabric "
            f"({placement.world_size}) (got {p.gpus})"
        )
    _progress(on_progress, 0.3, "routing collectives")
    layout = build_layout(tp=p.tp, pp=p.pp, dp=p.dp, cp=p.cp, ep=p.ep, rank_gpu=placement.rank_gpu)
    comm = comm_model(fabric, layout, ecmp=what_if.ecmp)
    _progress(on_progress, 0.7, "assembling step time")
    arrays = assemble_step(
        job.model,
        micro_batch=job.micro_batch,
        global_batch=job.global_batch,
        tp=p.tp,
        pp=p.pp,
        dp=p.dp,
        cp=p.cp,
        ep=p.ep,
        vpp=p.vpp,
        recompute=RECOMPUTE_CODES[job.recompute],
        zero=job.zero,
        precision=job.precision,
        attention=job.attention,
        overlap_dp=job.overlap_dp,
        overlap_tp=job.overlap_tp,
        overlap_pp=job.overlap_pp,
        framework=FRAMEWORKS[job.framework],
        scaleup_ranks=job_scaleup_ranks(fabric, placement),
        gpu=gpu,
        eff=eff,
        comm_time=comm.time_s,
    )
    breakdown = {k: float(v) for k, v in arrays.breakdown.items()}
    timeline, stragglers, schedule_details = _step_timeline(
        arrays, breakdown, job, what_if, fabric, placement, rng
    )
    step = timeline.step_time_s
    volumes = {
        kind: {op: float(np.asarray(v)) for op, v in ops.items()} for kind, ops in arrays.volumes.items()
    }
    link_util = comm.link_utilization(volumes, step)
    result = _result(
        scenario,
        gpu,
        arrays,
        breakdown,
        timeline,
        link_util,
        rack_link_utilization(fabric, link_util),
        placement.gpu_values(stragglers.per_gpu_slowdown, 1.0),
        comm,
        schedule_details,
    )
    _progress(on_progress, 1.0, "done")
    return result


#: Relative difference between the simulated schedule and the closed form below which the two
#: are the same number summed in another order (they agree exactly in exact arithmetic for the
#: uniform op durations used here; tests/sim/test_pipeline.py).
SCHEDULE_CLOSED_FORM_RTOL = 1e-9


def job_scaleup_ranks(fabric, placement) -> int:
    """The job's ranks per scale-up domain (the fewest any of its domains holds): consecutive
    ranks fill a domain first, so a group of more ranks than that leaves it over the NICs."""
    domains = np.asarray(fabric.gpu_domain)[placement.rank_gpu]
    return int(np.unique(domains, return_counts=True)[1].min())


def job_stragglers(fabric, placement, what_if, *, compute_time_s: float, rng=None):
    """The straggler draw of a job (``stragglers.straggler_effect``) over the GPUs it runs on:
    its ``what_if`` spread, steps and seed, and only the slow nodes it uses (idle nodes slow no
    one). ``predict`` and the layout search share it, so their straggler terms agree."""

    slow = np.asarray(what_if.slow_nodes, dtype=np.int64)
    return straggler_effect(
        np.asarray(fabric.gpu_node)[placement.rank_gpu],
        compute_time_s=compute_time_s,
        spread=what_if.straggler_spread,
        slow_nodes=slow[np.isin(slow, placement.nodes)].tolist(),
        slow_factor=what_if.slow_node_factor,
        n_steps=what_if.steps,
        rng=what_if.seed if rng is None else rng,
    )


def _step_timeline(arrays, breakdown, job, what_if, fabric, placement, rng):
    """Simulate the pipeline schedule, draw the stragglers, lay out the per-stage timeline.

    The breakdown's bubble becomes the schedule's idle (closed form + any difference, returned as
    ``schedule_minus_closed_form_s`` for the details) and its straggler term is filled in. After the
    schedule every stage waits for stragglers (the gradient reduction needs the slowest
    replica), then runs the exposed dp synchronisation, then the optimizer (which needs the
    reduced gradients).
    """
    p, v, m = job.parallel, job.parallel.vpp, job.microbatches
    detail = {k: float(np.asarray(val)) for k, val in arrays.details.items()}
    per_op = {
        "forward_compute_s": detail["stage_forward_compute_s"] / v,
        "forward_comm_s": detail["stage_forward_comm_s"] / v,
        "backward_compute_s": detail["stage_backward_compute_s"] / v,
        "backward_comm_s": detail["stage_backward_comm_s"] / v,
        "p2p_s": detail["p2p_s"],
    }
    schedule = pipeline_schedule(p.pp, v, m)
    op_start, op_end = simulate_schedule(
        schedule,
        per_op["forward_compute_s"] + per_op["forward_comm_s"] + per_op["p2p_s"],
        per_op["backward_compute_s"] + per_op["backward_comm_s"] + per_op["p2p_s"],
    )
    pipeline = float(op_end.max())
    closed = sum(breakdown[k] for k in PIPELINE_KEYS)
    difference = pipeline - closed
    if abs(difference) > SCHEDULE_CLOSED_FORM_RTOL * closed:
        breakdown["bubble"] += difference
    stragglers = job_stragglers(fabric, placement, what_if, compute_time_s=pipeline, rng=rng)
    breakdown["straggler"] = float(stragglers.time_s)
    stage_of_rank = np.arange(placement.world_size) // (p.tp * p.cp * p.dp)
    timeline = stage_timeline(
        schedule,
        **per_op,
        tail_s=(
            ("straggler", breakdown["straggler"]),
            ("dp", breakdown["dp"]),
            ("optimizer", breakdown["optimizer"]),
        ),
        gpu_stage=placement.gpu_values(stage_of_rank, -1),
        op_start_s=op_start,
    )
    return timeline, stragglers, {"schedule_minus_closed_form_s": difference, "pipeline_s": pipeline}


def _result(scenario, gpu, arrays, breakdown, timeline, link_util, rack_util, slowdown, comm, extra):
    job = scenario.job
    step = timeline.step_time_s
    gpus = job.parallel.gpus
    model_flops = float(arrays.model_flops)
    hardware_flops = float(arrays.hardware_flops)
    tokens_per_s = job.global_batch * job.model.seq_len / step
    memory = {k: float(arrays.memory[k]) / GIB for k in MEMORY_KEYS}
    total_gib = float(arrays.memory["total"]) / GIB
    details = {k: float(np.asarray(v)) for k, v in arrays.details.items()}
    details.update(extra)
    details["comm_busbw_gbytes_per_s"] = {k: float(v) for k, v in comm.bw_gbytes_per_s.items()}
    model_tflops = model_flops / step / gpus / 1e12
    return StepResult(
        name=scenario.name,
        step_time_s=step,
        model_tflops_per_gpu=model_tflops,
        hardware_tflops_per_gpu=hardware_flops / step / gpus / 1e12,
        mfu=model_tflops / gpu.peak_tflops(job.precision),
        tokens_per_s=tokens_per_s,
        memory_gib_per_gpu=total_gib,
        fits=total_gib <= gpu.hbm_gib,
        memory_headroom_gib=float(arrays.memory["headroom"]) / GIB,
        hidden={k: float(np.asarray(v)) for k, v in arrays.hidden.items()},
        memory=memory,
        breakdown=breakdown,
        time_to_train_days=(job.tokens / tokens_per_s / 86400.0 if job.tokens else None),
        gpus=gpus,
        link_utilization=np.asarray(link_util, dtype=float),
        rack_link_utilization=np.asarray(rack_util, dtype=float),
        gpu_slowdown=np.asarray(slowdown, dtype=float),
        timeline=timeline,
        details=details,
    )
