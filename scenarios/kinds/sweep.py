"""Scaling sweep: the same job on clusters of several sizes (generated like the design), with
speedup, per-GPU efficiency, the knee where adding GPUs stops paying and the fastest time to
train. Points are split into chunks any worker computes; the merge is pure arithmetic."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from django import forms
from django.core.exceptions import ValidationError

from scenarios.charts import sweep as sweep_charts
from scenarios.charts.base import chart
from scenarios.kinds.base import (
    Figure,
    RunKind,
    RunOutput,
    count,
    gpus,
    int_option,
    options_error,
    reject_unknown_options,
)
from scenarios.scenario_file import is_generated
from scenarios.sim.format.errors import ScenarioError
from utilities.errors import preview

#: Largest cluster a sweep point may ask for (assumed bound keeping one point under ~a minute).
MAX_SWEEP_NODES = 32_768
MAX_SWEEP_POINTS = 64
DEFAULT_SWEEP_POINTS = 8
#: Tokens a time-to-train figure assumes when the job gives none (assumed: a round 1e12).
DEFAULT_SWEEP_TOKENS = 1e12
#: A point beyond which the marginal GPUs deliver less than this share of the per-GPU
#: throughput of the point before is past the knee ("adding GPUs stops paying").
KNEE_MARGINAL_EFFICIENCY = 0.5


class SweepOptions(forms.Form):
    nodes = forms.CharField(
        required=False, label="Node counts", help_text="comma separated, e.g. 32, 64, 128, 256"
    )

    def clean_nodes(self) -> list[int]:
        text = self.cleaned_data.get("nodes") or ""
        try:
            counts = [int(p) for p in text.replace(";", ",").split(",") if p.strip()]
        except ValueError:
            raise ValidationError("must be whole numbers separated by commas") from None
        if any(c < 1 for c in counts):
            raise ValidationError("every node count must be ≥ 1")
        return sorted(set(counts))


class SweepKind(RunKind):
    name = "sweep"
    label = "Scaling sweep"
    options_form = SweepOptions
    default_metric = "rack_power"
    panel_template = "scenarios/kinds/sweep_panel.html"
    script = "js/kinds/sweep.js"
    figures = (
        Figure("knee_gpus", "Adding GPUs stops paying at", gpus, pick=lambda s: knee_inside(s)),
        Figure(
            "still_scaling_gpus",
            "Still scaling at the largest size tried",
            gpus,
            pick=lambda s: still_scaling(s),
        ),
        Figure("best_time_to_train_gpus", "Fastest to train at", gpus),
        Figure("points", "Sweep points", count),
        Figure("failed_points", "Failed points", count),
        Figure(
            "infeasible_points",
            "Points that do not fit",
            count,
            pick=lambda s: s.get("infeasible_points") or None,
        ),
    )

    # --- options ------------------------------------------------------------------------------

    def clean_options(self, scenario, options: dict[str, Any], *, design=None) -> dict[str, Any]:
        """``{"nodes": [int, ...] (default: powers of two up to the design), "batch": "fixed" (the
        job's global batch at every size; strong scaling) | "scaled" (microbatches per pipeline
        kept; weak scaling), "tokens": float (time-to-train; default the job's or 1e12),
        "chunk_size": points per chunk (default 2)}``."""
        reject_unknown_options(options, {"nodes", "batch", "tokens", "chunk_size"})
        if design is not None and not is_generated(design):
            raise options_error(
                "nodes", f"a sweep builds clusters like the design, but {design.name!r} was built by hand"
            )
        batch = options.get("batch", "fixed")
        if batch not in ("fixed", "scaled"):
            raise options_error("batch", f"must be fixed or scaled (got {preview(batch)})")
        nodes = options.get("nodes")
        if nodes is None:
            from topology.selectors import catalog_load

            nodes = default_sweep_nodes(scenario, gpus_per_server(scenario, catalog_load()), batch=batch)
        if (
            not isinstance(nodes, list | tuple)
            or not nodes
            or not all(
                isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_SWEEP_NODES for n in nodes
            )
        ):
            raise options_error(
                "nodes",
                f"must be a list of node counts from 1 to {MAX_SWEEP_NODES:,} (got {preview(nodes)})",
            )
        nodes = sorted(set(nodes))
        if len(nodes) > MAX_SWEEP_POINTS:
            raise options_error("nodes", f"must have at most {MAX_SWEEP_POINTS} points (got {len(nodes)})")
        tokens = options.get("tokens", scenario.job.tokens or DEFAULT_SWEEP_TOKENS)
        if isinstance(tokens, bool) or not isinstance(tokens, int | float) or not 0 < tokens <= 1e18:
            raise options_error(
                "tokens", f"must be a number of tokens from 1 to 1e18 (got {preview(tokens)})"
            )
        return {
            "nodes": nodes,
            "batch": batch,
            "tokens": float(tokens),
            "chunk_size": int_option(options, "chunk_size", 2, 1, MAX_SWEEP_POINTS),
        }

    # --- computing ------------------------------------------------------------------------------

    def split(self, context) -> list[dict[str, Any]]:
        """Chunks of ``chunk_size`` points: ``{"points": [[index, nodes], ...]}``."""
        nodes = context.options["nodes"]
        size = context.options["chunk_size"]
        points = [[i, n] for i, n in enumerate(nodes)]
        return [{"points": points[i : i + size]} for i in range(0, len(points), size)]

    def compute_chunk(self, context, chunk: dict[str, Any], progress) -> dict[str, Any]:
        """The points of one chunk, publishing each as it finishes."""
        total = len(context.options["nodes"])
        out = []
        for index, nodes in chunk["points"]:
            progress.check_cancelled()
            point = sweep_point(context, index, nodes, on_progress=progress.poll)
            out.append(point)
            progress.item_done(total, f"{nodes} nodes done", partial={"point": _point_brief(point)})
        return {"points": out}

    def merge_partial(self, stored: dict[str, Any], partial: dict[str, Any]) -> dict[str, Any]:
        """The points done so far, by index (``{"points": [...]}``)."""
        points = {p["index"]: p for p in stored.get("points") or []}
        if partial.get("point"):
            points[partial["point"]["index"]] = partial["point"]
        return {"points": [points[i] for i in sorted(points)]}

    def partial_figures(self, partial: dict[str, Any]) -> list[dict[str, str]]:
        points = partial.get("points") or []
        if not points:
            return []
        done = [p for p in points if usable(p)]
        out = [{"key": "points_done", "label": "Points done so far", "text": count(points)}]
        if done:
            fastest = min(done, key=lambda p: p.get("time_to_train_days") or float("inf"))
            out.append(
                {"key": "fastest_so_far", "label": "Fastest to train so far", "text": gpus(fastest["gpus"])}
            )
        return out

    def merge(self, context, results: list[dict[str, Any]]) -> RunOutput:
        """Order the points and derive speedup, per-GPU efficiency and the knee (exact: pure
        arithmetic on the chunk results, the same for any chunking)."""
        points = sorted((p for r in results for p in r["points"]), key=lambda p: p["index"])
        ok = [p for p in points if usable(p)]
        unfit = [p for p in points if p.get("infeasible")]
        if unfit and not ok:  # no size can run the job: the run is infeasible, saying why
            reasons = [f"{p['nodes']} nodes: {'; '.join(p['infeasible'])}" for p in unfit[:8]]
            summary = {
                "points": points,
                "failed_points": len(points) - len(unfit),
                "infeasible_points": len(unfit),
            }
            return RunOutput(summary=summary, infeasible=reasons)
        if points and not ok:  # nothing to show: the run failed, saying why each point did
            raise ScenarioError(
                "every sweep point failed: "
                + "; ".join(f"{p.get('nodes', '?')} nodes: {p['error']}" for p in points[:8])
                + (f"; … {len(points) - 8} more" if len(points) > 8 else "")
            )
        knee = best = None
        if ok:
            base = ok[0]
            base_per_gpu = base["tokens_per_s"] / base["gpus"]
            for p in ok:
                p["speedup"] = p["tokens_per_s"] / base["tokens_per_s"]
                p["efficiency"] = (p["tokens_per_s"] / p["gpus"]) / base_per_gpu
            knee = ok[-1]["gpus"]
            for prev, cur in itertools.pairwise(ok):
                marginal = (cur["tokens_per_s"] - prev["tokens_per_s"]) / (cur["gpus"] - prev["gpus"])
                if marginal < KNEE_MARGINAL_EFFICIENCY * prev["tokens_per_s"] / prev["gpus"]:
                    knee = prev["gpus"]
                    break
            best = min(ok, key=lambda p: (p["time_to_train_days"], p["gpus"]))["gpus"]
        summary = {
            "points": points,
            "batch": context.options["batch"],
            "tokens": context.options["tokens"],
            "knee_gpus": knee,
            "best_time_to_train_gpus": best,
            "failed_points": len(points) - len(ok) - len(unfit),
            "infeasible_points": len(unfit),
        }
        return RunOutput(summary=summary)

    def execute(self, context, progress) -> RunOutput:
        """The whole sweep in one process (what the chunked run must equal)."""
        every = {"points": [[i, n] for i, n in enumerate(context.options["nodes"])]}
        return self.merge(context, [self.compute_chunk(context, every, progress)])

    # --- showing --------------------------------------------------------------------------------

    def charts(self, run) -> list[dict[str, Any]]:
        summary = run.summary or {}
        points = [p for p in summary.get("points") or [] if usable(p)]
        figure = sweep_charts.scaling_figure(points, knee_inside(summary))
        return [chart("scaling", "Scaling curve", figure)]

    def compare_charts(self, runs: Sequence) -> list[dict[str, Any]]:
        return []


def usable(point: dict[str, Any]) -> bool:
    """Whether a sweep point counts in the curve: computed, and its job fits (an infeasible
    point is shown with its reason, never in the knee, the speedup or the fastest time)."""
    return not point.get("error") and not point.get("infeasible")


def _ok_gpus(summary: dict[str, Any]) -> list[int]:
    return sorted(p["gpus"] for p in summary.get("points") or () if usable(p) and p.get("gpus"))


def knee_inside(summary: dict[str, Any]) -> int | None:
    """The knee's GPU count when the sweep found one inside its range (before its largest point)."""
    knee, sizes = summary.get("knee_gpus"), _ok_gpus(summary)
    return knee if knee is not None and sizes and knee < sizes[-1] else None


def still_scaling(summary: dict[str, Any]) -> int | None:
    """The largest size tried when every step up still paid (no knee inside the range)."""
    sizes = _ok_gpus(summary)
    return sizes[-1] if sizes and knee_inside(summary) is None else None


def default_sweep_nodes(scenario, per_server: int, *, batch: str = "fixed") -> list[int]:
    """Node counts from one model replica up to the scenario's cluster, doubling (the largest
    ``DEFAULT_SWEEP_POINTS`` that fit the batch rule), always including the cluster itself."""
    p = scenario.job.parallel
    replica = p.tp * p.pp * p.cp
    unit = math.lcm(replica, per_server) // per_server
    size = scenario.effective_cluster().nodes
    top = max(size, unit)
    nodes, n = [], unit
    while n <= top:
        nodes.append(n)
        n *= 2
    nodes.append(size)
    ok = [n for n in sorted(set(nodes)) if _sweep_job(scenario, n, batch, per_server)[1] == ""]
    return ok[-DEFAULT_SWEEP_POINTS:] or [size]


def gpus_per_server(scenario, catalog) -> int:
    return catalog.server(scenario.effective_cluster().server).gpus_per_server


def _sweep_job(scenario, nodes: int, batch: str, per_server: int):
    """(scenario at ``nodes``, error text) -- dp follows the GPU count."""
    from scenarios.sim.format.scenario import ScenarioError, check_job

    job, p = scenario.job, scenario.job.parallel
    gpus_at = nodes * per_server
    replica = p.tp * p.pp * p.cp
    if gpus_at % replica:
        return None, f"{gpus_at} GPUs are not a multiple of tp × pp × cp ({replica})"
    dp = gpus_at // replica
    global_batch = job.global_batch if batch == "fixed" else job.microbatches * job.micro_batch * dp
    # Each point is a whole generated cluster: the job uses all of it.
    new_job = replace(
        job, global_batch=global_batch, parallel=replace(p, dp=dp), nodes=None, gpus_per_domain=None
    )
    try:
        check_job(new_job)
    except ScenarioError as exc:
        return None, str(exc)
    # Tiers, scalable-unit size and switch were sized for the design; let the generator size
    # them for this cluster.
    cluster = replace(scenario.cluster, nodes=nodes, tiers=None, su_nodes=None, switch=None)
    return replace(scenario, cluster=cluster, job=new_job, what_if=replace(scenario.what_if, nodes=None)), ""


def sweep_point(context, index: int, nodes: int, on_progress=None) -> dict[str, Any]:
    """One point of the scaling curve (a prediction on a freshly generated cluster);
    ``on_progress`` is the core's callback (a cancel raises through it)."""
    from scenarios.sim.step.model import predict

    options = context.options
    per_server = gpus_per_server(context.scenario, context.catalog)
    scenario, error = _sweep_job(context.scenario, nodes, options["batch"], per_server)
    point: dict[str, Any] = {"index": index, "nodes": nodes, "gpus": nodes * per_server}
    if scenario is not None:
        try:
            result = predict(scenario, catalog=context.catalog, on_progress=on_progress)
        except ValueError as exc:  # ScenarioError, FabricError: this size cannot be built
            error = str(exc)
    if error:
        return {**point, "error": error}
    if not result.feasible:  # its step time and throughput describe a job that cannot run
        return {
            **point,
            "error": "",
            "infeasible": list(result.infeasible),
            "fits": False,
            "memory_gib_per_gpu": result.memory_gib_per_gpu,
        }
    return {
        **point,
        "dp": scenario.job.parallel.dp,
        "global_batch": scenario.job.global_batch,
        "step_time_s": result.step_time_s,
        "tokens_per_s": result.tokens_per_s,
        "mfu": result.mfu,
        "model_tflops_per_gpu": result.model_tflops_per_gpu,
        "memory_gib_per_gpu": result.memory_gib_per_gpu,
        "fits": bool(result.fits),
        "max_link_utilization": float(np.max(result.link_utilization, initial=0.0)),
        "breakdown": dict(result.breakdown),
        "time_to_train_days": options["tokens"] / result.tokens_per_s / 86400.0,
        "error": "",
    }


def _point_brief(point: dict[str, Any]) -> dict[str, Any]:
    keys = ("index", "nodes", "gpus", "step_time_s", "tokens_per_s", "mfu", "time_to_train_days", "error")
    keys += ("infeasible",)
    return {k: point[k] for k in keys if k in point}


KIND = SweepKind()
