"""Step time of a training job on a cluster: ``predict``, the single-scenario entry point.

``predict(scenario, catalog=...)`` builds the fabric from the cluster spec (generator +
compile), places the job's ranks (``placement``, ``layout``), costs its collectives on the
routed fabric (``network.comm_model``), assembles compute, communication and schedule with
``assemble.assemble_step`` (the vectorized heart shared with the layout search), then simulates
the pipeline schedule (``pipeline``) and the stragglers (``stragglers``) of its one layout. The
model and its sources are documented in ``docs/step-time-model.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scenarios.sim.format.scenario import CheckedScenario, Scenario, ScenarioError, checked_scenario
from scenarios.sim.placement import place_job
from scenarios.sim.step.assemble import StepArrays, assemble_step
from scenarios.sim.step.candidates import CandidateLayouts, StackOptions
from scenarios.sim.step.layout import build_layout
from scenarios.sim.step.memory import GIB
from scenarios.sim.step.network import comm_model, fabric_with_capacity_scale, rack_link_utilization
from scenarios.sim.step.pipeline import StageTimeline, pipeline_schedule, simulate_schedule
from scenarios.sim.step.result import MEMORY_KEYS, PIPELINE_KEYS, StepResult
from scenarios.sim.step.stragglers import StragglerEffect, straggler_effect
from scenarios.sim.step.timeline import OpTimes, stage_timeline
from topology.fabric.compiled import compile_plan
from topology.fabric.generators import generate

__all__ = ["StepArrays", "assemble_step", "build_fabric", "cluster_plan", "predict", "scenario_gpu"]


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


def predict(
    scenario: Scenario | CheckedScenario, *, catalog, fabric=None, rng=None, on_progress=None
) -> StepResult:
    """Predict one training step of ``scenario`` on its cluster.

    The job runs on the nodes ``scenarios.sim.placement`` picks (``job.nodes``,
    ``job.placement``, ``job.gpus_per_domain``; default the whole cluster): only their GPUs
    send traffic and draw stragglers. The pipeline part of the step is the simulated Megatron
    schedule (``pipeline.simulate_schedule``), laid out per stage in ``result.timeline``.

    Parameters
    ----------
    scenario : Scenario or CheckedScenario
        Validated against ``catalog`` first (``check_scenario``) unless it is a
        ``CheckedScenario`` of this catalog already.
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
    scenario = checked_scenario(scenario, catalog).scenario
    job = scenario.job
    gpu = scenario_gpu(scenario, catalog)
    _progress(on_progress, 0.0, "building fabric")
    if fabric is None:
        fabric = build_fabric(scenario, catalog)
    placement = _job_placement(fabric, job)
    _progress(on_progress, 0.3, "routing collectives")
    p = job.parallel
    layout = build_layout(tp=p.tp, pp=p.pp, dp=p.dp, cp=p.cp, ep=p.ep, rank_gpu=placement.rank_gpu)
    comm = comm_model(fabric, layout, ecmp=scenario.what_if.ecmp)
    _progress(on_progress, 0.7, "assembling step time")
    arrays = assemble_step(
        job.model,
        CandidateLayouts.of_job(job),
        StackOptions.of_job(job),
        gpu=gpu,
        comm_time=comm.time_s,
        scaleup_ranks=job_scaleup_ranks(fabric, placement),
    )
    simulated = _simulate_step(arrays, scenario, fabric, placement, rng)
    result = _result(scenario, gpu, arrays, simulated, comm, fabric, placement)
    _progress(on_progress, 1.0, "done")
    return result


def scenario_gpu(scenario: Scenario, catalog):
    """The GPU the scenario's job runs on: its what-if GPU, else its server's."""
    server = catalog.server(scenario.effective_cluster().server)
    return catalog.gpu(scenario.what_if.gpu or server.gpu)


def _job_placement(fabric, job):
    """The job's placement on the fabric (``placement.place_job``), which must hold its ranks."""
    placement = place_job(fabric, job)
    if placement.world_size != job.parallel.gpus:
        raise ScenarioError(
            f"job.parallel: dp × tp × pp × cp must equal the job's GPUs on the fabric "
            f"({placement.world_size}) (got {job.parallel.gpus})"
        )
    return placement


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


@dataclass(frozen=True)
class _SimulatedStep:
    """The simulated schedule of one step: its per-stage timeline, the straggler draw, the
    breakdown with the schedule's idle and the stragglers filled in, and two figures for the
    details."""

    timeline: StageTimeline
    stragglers: StragglerEffect
    breakdown: dict[str, float]
    details: dict[str, float]


def _simulate_step(arrays, scenario, fabric, placement, rng) -> _SimulatedStep:
    """Simulate the pipeline schedule, draw the stragglers, lay out the per-stage timeline.

    The breakdown's bubble becomes the schedule's idle (closed form + any difference, returned as
    ``schedule_minus_closed_form_s`` for the details) and its straggler term is filled in. After the
    schedule every stage waits for stragglers (the gradient reduction needs the slowest
    replica), then runs the exposed dp synchronisation, then the optimizer (which needs the
    reduced gradients).
    """
    job = scenario.job
    p = job.parallel
    breakdown = {k: float(value) for k, value in arrays.breakdown.items()}
    ops = _op_times(arrays, p.vpp)
    schedule = pipeline_schedule(p.pp, p.vpp, job.microbatches)
    op_start, op_end = simulate_schedule(schedule, ops.forward_s, ops.backward_s)
    pipeline = float(op_end.max())
    closed = sum(breakdown[k] for k in PIPELINE_KEYS)
    difference = pipeline - closed
    if abs(difference) > SCHEDULE_CLOSED_FORM_RTOL * closed:
        breakdown["bubble"] += difference
    stragglers = job_stragglers(fabric, placement, scenario.what_if, compute_time_s=pipeline, rng=rng)
    breakdown["straggler"] = float(stragglers.time_s)
    stage_of_rank = np.arange(placement.world_size) // (p.tp * p.cp * p.dp)
    timeline = stage_timeline(
        schedule,
        ops,
        tail_s=tuple((kind, breakdown[kind]) for kind in ("straggler", "dp", "optimizer")),
        gpu_stage=placement.gpu_values(stage_of_rank, -1),
        op_start_s=op_start,
    )
    details = {"schedule_minus_closed_form_s": difference, "pipeline_s": pipeline}
    return _SimulatedStep(timeline=timeline, stragglers=stragglers, breakdown=breakdown, details=details)


def _op_times(arrays, vpp: int) -> OpTimes:
    """One op's (one chunk of one microbatch) compute, exposed communication and send (s)."""
    detail = {k: float(np.asarray(val)) for k, val in arrays.details.items()}
    return OpTimes(
        forward_compute_s=detail["stage_forward_compute_s"] / vpp,
        forward_comm_s=detail["stage_forward_comm_s"] / vpp,
        backward_compute_s=detail["stage_backward_compute_s"] / vpp,
        backward_comm_s=detail["stage_backward_comm_s"] / vpp,
        p2p_s=detail["p2p_s"],
    )


def _result(scenario, gpu, arrays, simulated: _SimulatedStep, comm, fabric, placement) -> StepResult:
    job = scenario.job
    timeline, breakdown = simulated.timeline, simulated.breakdown
    step = timeline.step_time_s
    volumes = {
        kind: {op: float(np.asarray(v)) for op, v in ops.items()} for kind, ops in arrays.volumes.items()
    }
    link_util = comm.link_utilization(volumes, step)
    gpus = job.parallel.gpus
    tokens_per_s = job.global_batch * job.model.seq_len / step
    total_gib = float(arrays.memory["total"]) / GIB
    model_tflops = float(arrays.model_flops) / step / gpus / 1e12
    return StepResult(
        name=scenario.name,
        step_time_s=step,
        model_tflops_per_gpu=model_tflops,
        hardware_tflops_per_gpu=float(arrays.hardware_flops) / step / gpus / 1e12,
        mfu=model_tflops / gpu.peak_tflops(job.precision),
        tokens_per_s=tokens_per_s,
        memory_gib_per_gpu=total_gib,
        fits=total_gib <= gpu.hbm_gib,
        infeasible=memory_infeasible(total_gib, gpu),
        memory_headroom_gib=float(arrays.memory["headroom"]) / GIB,
        hidden={k: float(np.asarray(v)) for k, v in arrays.hidden.items()},
        memory={k: float(arrays.memory[k]) / GIB for k in MEMORY_KEYS},
        breakdown=breakdown,
        time_to_train_days=(job.tokens / tokens_per_s / 86400.0 if job.tokens else None),
        gpus=gpus,
        link_utilization=np.asarray(link_util, dtype=float),
        rack_link_utilization=np.asarray(rack_link_utilization(fabric, link_util), dtype=float),
        gpu_slowdown=np.asarray(
            placement.gpu_values(simulated.stragglers.per_gpu_slowdown, 1.0), dtype=float
        ),
        timeline=timeline,
        details=_result_details(arrays, simulated, comm),
    )


def memory_infeasible(need_gib: float, gpu) -> tuple[str, ...]:
    """``("memory: 922 GiB per GPU needed, 80 GiB on h100-sxm",)`` when ``need_gib`` (the peak
    of a first-stage GPU) exceeds the GPU's HBM, else ``()``."""
    if need_gib <= gpu.hbm_gib:
        return ()
    return (f"memory: {_gib(need_gib)} per GPU needed, {_gib(gpu.hbm_gib)} on {gpu.slug}",)


def _gib(value: float) -> str:
    return f"{value:,.0f} GiB" if value >= 100 else f"{value:.1f} GiB".replace(".0 GiB", " GiB")


def _result_details(arrays, simulated: _SimulatedStep, comm) -> dict:
    details = {k: float(np.asarray(v)) for k, v in arrays.details.items()}
    details.update(simulated.details)
    details["comm_busbw_gbytes_per_s"] = {k: float(v) for k, v in comm.bw_gbytes_per_s.items()}
    return details
