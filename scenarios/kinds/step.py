"""Step time: one prediction of a training step on the scenario's fabric, with per-link,
per-rack and per-GPU results for the floor plan."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from scenarios.charts import step as step_charts
from scenarios.charts.base import chart
from scenarios.kinds.base import Figure, RunKind, RunOutput, count, duration_days, percent, seconds
from scenarios.metrics import Metric, rack_list
from scenarios.storage import run_array

#: Floor-plan metrics of a step prediction (the layout search opens on the first too).
LINK_UTIL = Metric(
    name="link_util",
    label="Scale-out link utilization (hottest link)",
    unit="fraction of link capacity",
    scale=(0.0, 1.0),
    array="rack_link_utilization",
    description="Mean utilization over a step of the busiest scale-out link in the rack.",
)
SLOWDOWN = Metric(
    name="slowdown",
    label="Slow / straggler nodes (worst GPU slowdown)",
    unit="× nominal compute time",
    scale=(1.0, 1.5),
    array="rack_slowdown",
    description="Largest mean compute-time factor of the rack's GPUs (1 = nominal).",
)
JOB = Metric(
    name="job",
    label="GPUs in the job",
    unit="fraction of the rack's GPUs",
    scale=(0.0, 1.0),
    array="rack_job_share",
    description="Share of the rack's GPUs the job uses; 0 = idle (a hot spare), no data = no GPUs.",
)


def stored_timeline(run):
    """The run's per-stage timeline rebuilt from its stored arrays (None before it has one)."""
    from scenarios.sim.step.pipeline import StageTimeline

    names = ("timeline_kind", "timeline_start_s", "timeline_duration_s", "timeline_microbatch")
    names += ("timeline_chunk", "timeline_n_phases", "gpu_stage")
    arrays = {name: run_array(run=run, name=name) for name in names}
    if any(value is None for value in arrays.values()):
        return None
    summary = run.summary or {}
    parallel = (run.scenario.job or {}).get("parallel") or {}
    return StageTimeline.from_compact_arrays(
        arrays,
        step_time_s=float(summary.get("step_time_s") or 0.0),
        vpp=int(parallel.get("vpp") or 1),
        microbatches=round((summary.get("details") or {}).get("microbatches") or 1),
    )


#: What the summary of an infeasible prediction keeps: the memory that does not fit and the
#: job's size -- no step time, MFU, throughput or time to train of a job that cannot run.
INFEASIBLE_KEYS = ("memory_gib_per_gpu", "fits", "memory_headroom_gib", "memory", "gpus", "feasible")


class StepKind(RunKind):
    name = "step"
    label = "Step time"
    metrics = (LINK_UTIL, SLOWDOWN, JOB)
    default_metric = LINK_UTIL.name
    figures = (
        Figure("step_time_s", "Step time", seconds, lower_is_better=True),
        Figure("mfu", "MFU", percent, lower_is_better=False),
        Figure("model_tflops_per_gpu", "Model TFLOP/s per GPU", lambda v: f"{v:.0f}", lower_is_better=False),
        Figure("tokens_per_s", "Tokens/s", lambda v: f"{v:,.0f}", lower_is_better=False),
        Figure("time_to_train_days", "Time to train", duration_days, lower_is_better=True),
        Figure("memory_gib_per_gpu", "Memory per GPU", lambda v: f"{v:.1f} GiB", lower_is_better=True),
        Figure("fits", "Fits in HBM", lambda v: "yes" if v else "no"),
        Figure("memory_headroom_gib", "HBM headroom", lambda v: f"{v:+.1f} GiB", lower_is_better=False),
        Figure("max_link_utilization", "Hottest link", lambda v: percent(v, 0), lower_is_better=True),
        Figure("gpus", "GPUs", count),
        Figure("idle_gpus", "Idle GPUs (not in the job)", count),
    )
    state_keys = ("racks_aligned",)

    def execute(self, context, progress) -> RunOutput:
        """Predict one step on the scenario's fabric; store per-link, per-rack and per-GPU arrays
        and the per-stage timeline."""
        from scenarios.sim.step.model import predict

        progress(0.0, "compiling fabric")
        fabric = context.fabric()
        result = predict(context.checked, catalog=context.catalog, fabric=fabric, on_progress=progress)
        if not result.feasible:
            return self._infeasible(context, result, progress)
        aligned = int(fabric.n_racks) == context.n_racks
        gpu_rack = np.asarray(fabric.gpu_rack)
        rack_slowdown = np.ones(int(fabric.n_racks))
        np.maximum.at(rack_slowdown, gpu_rack, np.asarray(result.gpu_slowdown, dtype=float))
        in_job = np.asarray(result.timeline.gpu_stage) >= 0
        rack_gpus = np.bincount(gpu_rack, minlength=int(fabric.n_racks))
        rack_job = np.divide(
            np.bincount(gpu_rack, weights=in_job.astype(float), minlength=int(fabric.n_racks)),
            rack_gpus,
            out=np.full(int(fabric.n_racks), np.nan),
            where=rack_gpus > 0,
        )
        summary = result.summary()
        summary["racks_aligned"] = aligned
        summary["job_gpus"] = int(in_job.sum())
        summary["idle_gpus"] = int((~in_job).sum())
        arrays = {
            "link_utilization": np.asarray(result.link_utilization, dtype=np.float32),
            LINK_UTIL.array: np.asarray(result.rack_link_utilization, dtype=np.float32),
            "gpu_slowdown": np.asarray(result.gpu_slowdown, dtype=np.float32),
            SLOWDOWN.array: rack_slowdown.astype(np.float32),
            JOB.array: rack_job.astype(np.float32),
            **result.timeline.compact_arrays(),
        }
        rack_values = {}
        if aligned:
            rack_values = {
                LINK_UTIL.name: rack_list(arrays[LINK_UTIL.array]),
                SLOWDOWN.name: rack_list(arrays[SLOWDOWN.array]),
                JOB.name: rack_list(rack_job),
            }
        return RunOutput(summary=summary, arrays=arrays, rack_values=rack_values)

    def _infeasible(self, context, result, progress) -> RunOutput:
        """The output of a job that cannot run: why, its memory, and the fastest layout of the
        layout search that fits (``summary["would_fit"]``, None when none does)."""
        from scenarios.sim.search import fitting_layout

        progress(0.5, "does not fit: searching a layout that does")
        row = fitting_layout(
            context.checked,
            catalog=context.catalog,
            fabric=context.fabric(),
            on_progress=lambda fraction, stage: progress(0.5 + 0.5 * fraction, stage),
        )
        full = result.summary()
        summary = {key: full[key] for key in INFEASIBLE_KEYS}
        summary["hbm_gib"] = result.memory_gib_per_gpu + result.memory_headroom_gib  # the GPU's HBM
        keep = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "recompute", "zero", "memory_gib_per_gpu")
        summary["would_fit"] = {k: row[k] for k in keep} if row else None
        return RunOutput(summary=summary, infeasible=list(result.infeasible))

    def charts(self, run) -> list[dict[str, Any]]:
        summary = run.summary or {}
        label = f"#{run.pk}"
        if summary.get("infeasible"):  # no step to break down: only the memory that does not fit
            figure = step_charts.memory_figure([label], [summary], step_charts.hbm_gib(summary))
            return [chart("memory", "Memory per GPU", figure)]
        out = [
            chart("breakdown", "Step-time breakdown", step_charts.breakdown_figure([label], [summary])),
        ]
        if any((summary.get("hidden") or {}).values()):
            out.append(
                chart("overlap", "Communication: exposed and hidden", step_charts.overlap_figure(summary))
            )
        timeline = stored_timeline(run)
        if timeline is not None:
            out.append(chart("timeline", "Pipeline timeline", step_charts.timeline_figure(timeline)))
        out.append(
            chart(
                "memory",
                "Memory per GPU",
                step_charts.memory_figure([label], [summary], step_charts.hbm_gib(summary)),
            )
        )
        utilization = run_array(run=run, name="link_utilization")
        if utilization is not None and utilization.size:
            out.append(
                chart("link-util", "Link utilization", step_charts.link_utilization_figure(utilization))
            )
        return out

    def compare_charts(self, runs: Sequence) -> list[dict[str, Any]]:
        labels = [f"#{r.pk} {r.scenario_name}" for r in runs]
        summaries = [r.summary or {} for r in runs]
        return [
            chart(
                "compare-breakdown", "Step-time breakdown", step_charts.breakdown_figure(labels, summaries)
            ),
            chart("compare-memory", "Memory per GPU", step_charts.memory_figure(labels, summaries)),
        ]

    def floor_metric(self, run) -> str:
        if (run.summary or {}).get("infeasible"):  # no link or rack figures: the design's power
            return "rack_power"
        if (run.scenario.what_if or {}).get("slow_nodes"):
            return SLOWDOWN.name
        return self.default_metric


KIND = StepKind()
