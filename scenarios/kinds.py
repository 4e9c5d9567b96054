"""The registry of run kinds: how each kind computes, splits into chunks and merges.

A kind is a :class:`RunKindSpec`. ``execute`` computes a whole run in one process; a kind that
can be split also has ``split`` (the chunks), ``compute_chunk`` (one chunk, JSON in and out so
any worker can run it) and ``merge`` (exact: the merged result equals ``execute``). Later issues
(failure and power simulations) register their kinds here; services, tasks, the stream and the
floor plan need no change.
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from django.core.exceptions import ValidationError

from scenarios.choices import RunKind

#: Largest cluster a sweep point may ask for (assumed bound keeping one point under ~a minute).
MAX_SWEEP_NODES = 32_768
MAX_SWEEP_POINTS = 64
DEFAULT_SWEEP_POINTS = 8
#: Tokens a time-to-train figure assumes when the job gives none (assumed: a round 1e12).
DEFAULT_SWEEP_TOKENS = 1e12
#: A point beyond which the marginal GPUs deliver less than this share of the per-GPU
#: throughput of the point before is past the knee ("adding GPUs stops paying").
KNEE_MARGINAL_EFFICIENCY = 0.5
MAX_SEARCH_TOP = 100
DEFAULT_SEARCH_CHUNKS = 4


@dataclass
class RunOutput:
    """What a finished run saves and streams.

    Attributes
    ----------
    summary : dict
        JSON summary (plain numbers, small lists).
    arrays : dict[str, ndarray]
        Large arrays stored as ``RunArray`` rows.
    rack_values : dict[str, list[float]]
        Floor-plan metric -> per-rack values (racks by pk) to stream as final partials.
    """

    summary: dict[str, Any]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    rack_values: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class RunContext:
    """Everything a kind needs to compute one run: the run, its design, the validated core
    ``Scenario``, the catalog and the run's options."""

    run: Any
    design: Any
    scenario: Any
    catalog: Any
    options: dict[str, Any]

    @classmethod
    def load(cls, run) -> RunContext:
        """Validate the run's scenario against today's catalog (ValidationError if it broke)."""
        from scenarios.services import scenario_check
        from topology.selectors import catalog_load

        catalog = catalog_load()
        scenario = run.scenario
        core = scenario_check(
            design=scenario.design,
            name=scenario.name,
            job=scenario.job,
            what_if=scenario.what_if,
            catalog=catalog,
        )
        return cls(
            run=run, design=scenario.design, scenario=core, catalog=catalog, options=dict(run.options or {})
        )

    @property
    def n_racks(self) -> int:
        from scenarios.metrics import design_rack_arrays

        return int(design_rack_arrays(self.design).rack_pk.size)

    def fabric(self):
        """The compiled fabric of the scenario: the saved design's (compiled once per design
        version) when the what-if keeps the cluster, else the cluster the what-if describes."""
        from scenarios.sim.network import fabric_with_tier_capacity_scale
        from scenarios.sim.step_time import build_fabric

        if _changes_cluster(self.scenario, self.design):
            if self.design.generator not in _generators():
                raise ValidationError(
                    "what_if: server, NIC speed, oversubscription and node count overrides need a "
                    "generated design (this one was built by hand)"
                )
            return build_fabric(self.scenario, self.catalog)
        fabric = design_fabric(self.design, self.catalog)
        scale = self.scenario.what_if.spine_capacity_scale
        if scale < 1.0:
            fabric = fabric_with_tier_capacity_scale(fabric, scale)
        return fabric


def _generators() -> tuple[str, ...]:
    from scenarios.sim.scenario import GENERATORS

    return GENERATORS


def _changes_cluster(scenario, design) -> bool:
    """Whether the what-if asks for a cluster other than the saved design."""
    from scenarios.services import design_cluster

    w = scenario.what_if
    if w.server or w.nic_gbps is not None or w.oversubscription is not None:
        return True
    return scenario.cluster.nodes != design_cluster(design=design).get("nodes")


_FABRICS: OrderedDict[tuple, Any] = OrderedDict()
FABRIC_CACHE_SIZE = 2


def design_fabric(design, catalog):
    """``compile_plan(design_plan(design))``, cached per design pk, version and update time
    (a 131,072-GPU design takes seconds to load and compile)."""
    from topology.fabric.compiled import compile_plan
    from topology.selectors import design_plan

    key = (design.pk, design.version, design.updated.isoformat() if design.updated else "")
    if key in _FABRICS:
        _FABRICS.move_to_end(key)
        return _FABRICS[key]
    fabric = compile_plan(design_plan(design=design, catalog=catalog))
    _FABRICS[key] = fabric
    while len(_FABRICS) > FABRIC_CACHE_SIZE:
        _FABRICS.popitem(last=False)
    return fabric


@dataclass(frozen=True)
class RunKindSpec:
    """How one kind of run is computed (see the module docstring)."""

    kind: str
    clean_options: Callable[[Any, dict[str, Any]], dict[str, Any]]
    execute: Callable[[RunContext, Any], RunOutput]
    split: Callable[[RunContext], list[dict[str, Any]]] | None = None
    compute_chunk: Callable[[RunContext, dict[str, Any], Any], dict[str, Any]] | None = None
    merge: Callable[[RunContext, list[dict[str, Any]]], RunOutput] | None = None


def _options_error(key: str, message: str) -> ValidationError:
    return ValidationError({f"options.{key}": f"options.{key}: {message}"})


def _reject_unknown_options(options: dict[str, Any], known: set[str]) -> None:
    unknown = sorted(set(options) - known)
    if unknown:
        raise _options_error(unknown[0], f"unknown option (known: {', '.join(sorted(known)) or 'none'})")


def _int_option(options, key, default, lo, hi) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise _options_error(key, f"must be an integer from {lo} to {hi:,} (got {value!r})")
    return value


# --- step ------------------------------------------------------------------------------------------


def step_clean_options(scenario, options: dict[str, Any]) -> dict[str, Any]:
    """A step-time run takes no options."""
    _reject_unknown_options(options, set())
    return {}


def step_execute(context: RunContext, progress) -> RunOutput:
    """Predict one step on the scenario's fabric; store per-link, per-rack and per-GPU arrays."""
    from scenarios.sim.step_time import predict

    progress(0.0, "compiling fabric")
    fabric = context.fabric()
    result = predict(context.scenario, catalog=context.catalog, fabric=fabric, on_progress=progress)
    n_racks = context.n_racks
    aligned = int(fabric.n_racks) == n_racks
    rack_slowdown = np.ones(int(fabric.n_racks))
    np.maximum.at(rack_slowdown, np.asarray(fabric.gpu_rack), np.asarray(result.gpu_slowdown, dtype=float))
    summary = result.summary()
    summary["racks_aligned"] = aligned
    arrays = {
        "link_utilization": np.asarray(result.link_utilization, dtype=np.float32),
        "rack_link_utilization": np.asarray(result.rack_link_utilization, dtype=np.float32),
        "gpu_slowdown": np.asarray(result.gpu_slowdown, dtype=np.float32),
        "rack_slowdown": rack_slowdown.astype(np.float32),
    }
    rack_values = {}
    if aligned:
        rack_values = {
            "link_util": _rounded(arrays["rack_link_utilization"]),
            "slowdown": _rounded(arrays["rack_slowdown"]),
        }
    return RunOutput(summary=summary, arrays=arrays, rack_values=rack_values)


def _rounded(values: np.ndarray, decimals: int = 3) -> list[float]:
    return np.round(np.asarray(values, dtype=float), decimals).tolist()


# --- sweep -----------------------------------------------------------------------------------------


def sweep_clean_options(scenario, options: dict[str, Any]) -> dict[str, Any]:
    """``{"nodes": [int, ...] (default: powers of two up to the design), "batch": "fixed" (the
    job's global batch at every size; strong scaling) | "scaled" (microbatches per pipeline
    kept; weak scaling), "tokens": float (time-to-train; default the job's or 1e12),
    "chunk_size": points per chunk (default 2)}``."""
    _reject_unknown_options(options, {"nodes", "batch", "tokens", "chunk_size"})
    batch = options.get("batch", "fixed")
    if batch not in ("fixed", "scaled"):
        raise _options_error("batch", f"must be fixed or scaled (got {batch!r})")
    nodes = options.get("nodes")
    if nodes is None:
        nodes = default_sweep_nodes(scenario, batch=batch)
    if (
        not isinstance(nodes, list | tuple)
        or not nodes
        or not all(
            isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_SWEEP_NODES for n in nodes
        )
    ):
        raise _options_error(
            "nodes", f"must be a list of node counts from 1 to {MAX_SWEEP_NODES:,} (got {nodes!r})"
        )
    nodes = sorted(set(nodes))
    if len(nodes) > MAX_SWEEP_POINTS:
        raise _options_error("nodes", f"must have at most {MAX_SWEEP_POINTS} points (got {len(nodes)})")
    tokens = options.get("tokens", scenario.job.tokens or DEFAULT_SWEEP_TOKENS)
    if isinstance(tokens, bool) or not isinstance(tokens, int | float) or not 0 < tokens <= 1e18:
        raise _options_error("tokens", f"must be a number of tokens > 0 (got {tokens!r})")
    return {
        "nodes": nodes,
        "batch": batch,
        "tokens": float(tokens),
        "chunk_size": _int_option(options, "chunk_size", 2, 1, MAX_SWEEP_POINTS),
    }


def default_sweep_nodes(scenario, *, batch: str = "fixed") -> list[int]:
    """Node counts from one model replica up to the scenario's cluster, doubling (the largest
    ``DEFAULT_SWEEP_POINTS`` that fit the batch rule), always including the cluster itself."""
    p = scenario.job.parallel
    per_server = _gpus_per_server(scenario)
    replica = p.tp * p.pp * p.cp
    unit = math.lcm(replica, per_server) // per_server
    top = max(scenario.cluster.nodes, unit)
    nodes, n = [], unit
    while n <= top:
        nodes.append(n)
        n *= 2
    nodes.append(scenario.cluster.nodes)
    ok = [n for n in sorted(set(nodes)) if _sweep_job(scenario, n, batch)[1] == ""]
    return ok[-DEFAULT_SWEEP_POINTS:] or [scenario.cluster.nodes]


_GPUS_PER_SERVER: dict[str, int] = {}


def _gpus_per_server(scenario) -> int:
    from topology.selectors import catalog_load

    slug = scenario.effective_cluster().server
    if slug not in _GPUS_PER_SERVER:
        _GPUS_PER_SERVER[slug] = catalog_load().server(slug).gpus_per_server
    return _GPUS_PER_SERVER[slug]


def _sweep_job(scenario, nodes: int, batch: str):
    """(scenario at ``nodes``, error text) -- dp follows the GPU count."""
    from scenarios.sim.scenario import ScenarioError, check_job

    job, p = scenario.job, scenario.job.parallel
    gpus = nodes * _gpus_per_server(scenario)
    replica = p.tp * p.pp * p.cp
    if gpus % replica:
        return None, f"{gpus} GPUs are not a multiple of tp × pp × cp ({replica})"
    dp = gpus // replica
    global_batch = job.global_batch if batch == "fixed" else job.microbatches * job.micro_batch * dp
    new_job = replace(job, global_batch=global_batch, parallel=replace(p, dp=dp))
    try:
        check_job(new_job)
    except ScenarioError as exc:
        return None, str(exc)
    # Tiers, scalable-unit size and switch were sized for the design; let the generator size
    # them for this cluster.
    cluster = replace(scenario.cluster, nodes=nodes, tiers=None, su_nodes=None, switch=None)
    return replace(scenario, cluster=cluster, job=new_job), ""


def sweep_point(context: RunContext, index: int, nodes: int) -> dict[str, Any]:
    """One point of the scaling curve (a prediction on a freshly generated cluster)."""
    from scenarios.sim.step_time import predict

    options = context.options
    scenario, error = _sweep_job(context.scenario, nodes, options["batch"])
    point: dict[str, Any] = {
        "index": index,
        "nodes": nodes,
        "gpus": nodes * _gpus_per_server(context.scenario),
    }
    if scenario is not None:
        try:
            result = predict(scenario, catalog=context.catalog)
        except ValueError as exc:  # ScenarioError, FabricError: this size cannot be built
            error = str(exc)
    if error:
        return {**point, "error": error}
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


def sweep_split(context: RunContext) -> list[dict[str, Any]]:
    """Chunks of ``chunk_size`` points: ``{"points": [[index, nodes], ...]}``."""
    nodes = context.options["nodes"]
    size = context.options["chunk_size"]
    points = [[i, n] for i, n in enumerate(nodes)]
    return [{"points": points[i : i + size]} for i in range(0, len(points), size)]


def sweep_compute_chunk(context: RunContext, chunk: dict[str, Any], progress) -> dict[str, Any]:
    """The points of one chunk, publishing each as it finishes."""
    total = len(context.options["nodes"])
    out = []
    for index, nodes in chunk["points"]:
        progress.check_cancelled()
        point = sweep_point(context, index, nodes)
        out.append(point)
        progress.item_done(total, f"{nodes} nodes done", partial={"point": _point_brief(point)})
    return {"points": out}


def _point_brief(point: dict[str, Any]) -> dict[str, Any]:
    keys = ("index", "nodes", "gpus", "step_time_s", "tokens_per_s", "mfu", "time_to_train_days", "error")
    return {k: point[k] for k in keys if k in point}


def sweep_merge(context: RunContext, results: list[dict[str, Any]]) -> RunOutput:
    """Order the points and derive speedup, per-GPU efficiency and the knee (exact: pure
    arithmetic on the chunk results, the same for any chunking)."""
    points = sorted((p for r in results for p in r["points"]), key=lambda p: p["index"])
    ok = [p for p in points if not p["error"]]
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
        best = min(ok, key=lambda p: (p["time_to_train_days"], p["gpus"]))
    summary = {
        "points": points,
        "batch": context.options["batch"],
        "tokens": context.options["tokens"],
        "knee_gpus": knee if ok else None,
        "best_time_to_train_gpus": best["gpus"] if ok else None,
        "failed_points": len(points) - len(ok),
    }
    return RunOutput(summary=summary)


def sweep_execute(context: RunContext, progress) -> RunOutput:
    """The whole sweep in one process (what the chunked run must equal)."""
    every = {"points": [[i, n] for i, n in enumerate(context.options["nodes"])]}
    return sweep_merge(context, [sweep_compute_chunk(context, every, progress)])


# --- layout search -----------------------------------------------------------------------------


def search_clean_options(scenario, options: dict[str, Any]) -> dict[str, Any]:
    """``{"top": best layouts to keep (default 10), "chunks": candidate slices (default 4)}``."""
    _reject_unknown_options(options, {"top", "chunks"})
    return {
        "top": _int_option(options, "top", 10, 1, MAX_SEARCH_TOP),
        "chunks": _int_option(options, "chunks", DEFAULT_SEARCH_CHUNKS, 1, 64),
    }


def _search_candidates(context: RunContext) -> dict[str, np.ndarray]:
    from scenarios.sim.search import enumerate_candidates

    job = context.scenario.job
    gpus = context.scenario.cluster.nodes * _gpus_per_server(context.scenario)
    return enumerate_candidates(gpus, moe=job.model.moe is not None, global_batch=job.global_batch)


def search_split(context: RunContext) -> list[dict[str, Any]]:
    """Contiguous candidate slices ``{"start", "stop"}`` in enumeration order."""
    total = int(_search_candidates(context)["tp"].size)
    chunks = max(1, min(context.options["chunks"], total))
    edges = np.linspace(0, total, chunks + 1).round().astype(int)
    return [{"start": int(a), "stop": int(b)} for a, b in itertools.pairwise(edges)]


def search_compute_chunk(context: RunContext, chunk: dict[str, Any], progress) -> dict[str, Any]:
    """Search candidates ``start:stop`` with the core; exact for the slice, so the merge of all
    slices equals the unsplit search."""
    from scenarios.sim.search import search_layouts

    progress.check_cancelled()
    result = search_layouts(
        context.scenario,
        catalog=context.catalog,
        fabric=context.fabric(),
        top_k=context.options["top"],
        candidates=slice(chunk["start"], chunk["stop"]),
    )
    progress.item_done(context.options["chunks"], f"candidates {chunk['start']:,}–{chunk['stop']:,} searched")
    return result.to_dict()


def search_merge(context: RunContext, results: list[dict[str, Any]]) -> RunOutput:
    """The best ``top`` of all slices and the summed counts (``merge_search_results``)."""
    from scenarios.sim.search import SearchResult, merge_search_results

    merged = merge_search_results([SearchResult(**r) for r in results], top_k=context.options["top"])
    return RunOutput(summary=merged.to_dict())


def search_execute(context: RunContext, progress) -> RunOutput:
    """The whole search as one slice (what the chunked run must equal)."""
    total = int(_search_candidates(context)["tp"].size)
    one = RunContext(**{**context.__dict__, "options": {**context.options, "chunks": 1}})
    return search_merge(one, [search_compute_chunk(one, {"start": 0, "stop": total}, progress)])


RUN_KINDS: dict[str, RunKindSpec] = {
    RunKind.STEP: RunKindSpec(kind=RunKind.STEP, clean_options=step_clean_options, execute=step_execute),
    RunKind.SWEEP: RunKindSpec(
        kind=RunKind.SWEEP,
        clean_options=sweep_clean_options,
        execute=sweep_execute,
        split=sweep_split,
        compute_chunk=sweep_compute_chunk,
        merge=sweep_merge,
    ),
    RunKind.SEARCH: RunKindSpec(
        kind=RunKind.SEARCH,
        clean_options=search_clean_options,
        execute=search_execute,
        split=search_split,
        compute_chunk=search_compute_chunk,
        merge=search_merge,
    ),
}


def run_kind(kind: str) -> RunKindSpec:
    """The spec of a kind, or ValidationError ``{"kind": ...}`` naming the known ones."""
    try:
        return RUN_KINDS[kind]
    except KeyError:
        raise ValidationError(
            {"kind": f"kind: must be one of {', '.join(RUN_KINDS)} (got {kind!r})"}
        ) from None
