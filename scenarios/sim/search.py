"""Layout search: every valid parallel layout of a job on a cluster, best first.

Candidates are all combinations of (tp, pp, cp) dividing the job's GPU count (dp the rest), ep
dividing dp x cp (MoE only), vpp 1..8, micro-batch powers of two, the three recompute modes
and ZeRO 0..3. The job keeps its placement (``job.nodes``, ``job.placement``,
``job.gpus_per_domain``: ``scenarios.sim.placement``), so every candidate runs on the same GPUs.
Validity rules and memory are evaluated on all candidates at once (numpy masks); the survivors'
collectives are costed on the real fabric through ``network.comm_table`` (each distinct group
shape -- pattern, size, rank stride -- is routed once) and their step time comes from the same
``assemble_step`` as ``predict``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scenarios.sim.format.scenario import CheckedScenario, Scenario, ScenarioError, checked_scenario
from scenarios.sim.placement import place_job
from scenarios.sim.step.assemble import assemble_step
from scenarios.sim.step.candidates import CandidateLayouts, StackOptions
from scenarios.sim.step.memory import GIB, memory_per_gpu
from scenarios.sim.step.model import build_fabric, job_scaleup_ranks, job_stragglers, scenario_gpu
from scenarios.sim.step.network import comm_table

__all__ = ["REJECT_REASONS", "SearchResult", "enumerate_candidates", "fitting_layout", "search_layouts"]

MICRO_BATCHES = (1, 2, 4, 8, 16, 32, 64)
MAX_VPP = 8
RECOMPUTE_NAMES = ("none", "selective", "full")

#: Rejection reasons in the order they are tested (a candidate counts under its first failure).
REJECT_REASONS = (
    "tp does not divide heads",
    "tp and kv_heads do not divide one another",
    "cp does not divide seq_len",
    "pp exceeds layers",
    "vpp exceeds layers per stage",
    "vpp > 1 needs pp >= 2",
    "ep does not divide dp x cp or experts",
    "global_batch not a multiple of micro_batch x dp",
    "interleaving needs microbatches divisible by pp",
    "does not fit in GPU memory",
)


@dataclass(frozen=True)
class SearchResult:
    """Outcome of a layout search.

    Attributes
    ----------
    best : list[dict]
        Up to K layouts, fastest first: parallel degrees, micro_batch, recompute, zero,
        step_time_s, mfu, tokens_per_s, memory_gib_per_gpu and the breakdown (s).
    candidates : int
        Layouts considered.
    valid : int
        Layouts that passed every rule and fit in memory.
    rejected : dict[str, int]
        Rejected layouts by first failing rule (``REJECT_REASONS``).
    """

    best: list[dict[str, Any]]
    candidates: int
    valid: int
    rejected: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "best": self.best,
            "candidates": self.candidates,
            "valid": self.valid,
            "rejected": dict(self.rejected),
        }


def _divisors(n: int) -> np.ndarray:
    small = np.arange(1, int(np.sqrt(n)) + 1)
    small = small[n % small == 0]
    return np.unique(np.concatenate([small, n // small]))


def enumerate_candidates(gpus: int, *, moe: bool, global_batch: int) -> dict[str, np.ndarray]:
    """All (tp, pp, cp, dp, ep, vpp, micro_batch, recompute, zero) combinations, as arrays."""
    div = _divisors(gpus)
    tp, pp, cp = np.meshgrid(div, div, div, indexing="ij")
    tp, pp, cp = tp.ravel(), pp.ravel(), cp.ravel()
    keep = gpus % (tp * pp * cp) == 0
    tp, pp, cp = tp[keep], pp[keep], cp[keep]
    dp = gpus // (tp * pp * cp)
    shape = np.arange(tp.size)
    if moe:
        ep_values = _divisors(gpus)
        s_idx, e_idx = np.meshgrid(shape, np.arange(ep_values.size), indexing="ij")
        s_idx, ep = s_idx.ravel(), ep_values[e_idx.ravel()]
        keep = (dp[s_idx] * cp[s_idx]) % ep == 0
        s_idx, ep = s_idx[keep], ep[keep]
    else:
        s_idx, ep = shape, np.ones_like(shape)
    micro = np.array([b for b in MICRO_BATCHES if b <= global_batch])
    grids = np.meshgrid(
        np.arange(s_idx.size),
        np.arange(1, MAX_VPP + 1),
        micro,
        np.arange(3),
        np.arange(4),
        indexing="ij",
    )
    base, vpp, mb, recompute, zero = (g.ravel() for g in grids)
    shape_index = s_idx[base]
    return {
        "tp": tp[shape_index],
        "pp": pp[shape_index],
        "cp": cp[shape_index],
        "dp": dp[shape_index],
        "ep": ep[base],
        "vpp": vpp,
        "micro_batch": mb,
        "recompute": recompute,
        "zero": zero,
    }


def _rule_failures(c: dict[str, np.ndarray], model, global_batch: int) -> list[np.ndarray]:
    """Boolean failure mask per rule of ``REJECT_REASONS[:-1]`` (memory is tested later)."""
    tp, pp, cp, dp, ep, vpp, mb = (c[k] for k in ("tp", "pp", "cp", "dp", "ep", "vpp", "micro_batch"))
    per_stage = -(-model.layers // pp)
    experts = model.moe.experts if model.moe is not None else 1
    batch_ok = global_batch % (mb * dp) == 0
    microbatches = np.where(batch_ok, global_batch // np.maximum(mb * dp, 1), 0)
    return [
        model.heads % tp != 0,
        (model.kv_heads % tp != 0) & (tp % model.kv_heads != 0),
        model.seq_len % cp != 0,
        pp > model.layers,
        vpp > per_stage,
        (vpp > 1) & (pp < 2),
        ((dp * cp) % ep != 0) | (experts % ep != 0) | ((ep > 1) & (model.moe is None)),
        ~batch_ok,
        (vpp > 1) & (microbatches % pp != 0),
    ]


def search_layouts(
    scenario: Scenario | CheckedScenario,
    *,
    catalog,
    fabric=None,
    top_k: int = 10,
    on_progress=None,
    candidates: slice | None = None,
    max_shape_batches: int | None = None,
) -> SearchResult:
    """Search the parallel layouts of ``scenario``'s job on its cluster.

    The scenario's own layout choices are ignored; model, batch, precision, cluster and the
    job's placement on it (its nodes, hence its GPU count) are kept.

    Parameters
    ----------
    scenario : Scenario or CheckedScenario
        Validated against ``catalog`` unless it is a ``CheckedScenario`` of this catalog.
    catalog : Catalog
    fabric : CompiledFabric, optional
    top_k : int
        How many of the fastest layouts to return (>= 1).
    on_progress : callable(fraction, message), optional
    candidates : slice, optional
        Search only this slice of the enumeration (``enumerate_candidates`` order), so that
        workers can split the space; ``merge_search_results`` of the slices' results equals the
        whole search (each slice's top K is exact for the slice; ties break by candidate index).
    max_shape_batches : int, optional
        A quick, approximate search: cost on the fabric only this many batches of the layout
        shapes with the best lower bounds (``SHAPES_PER_BATCH`` shapes each), and return the best
        of those. ``None`` (default) searches until the top K is exact.

    Returns
    -------
    SearchResult
    """

    if top_k < 1:
        raise ScenarioError(f"top: must be ≥ 1 (got {top_k})")
    if max_shape_batches is not None and max_shape_batches < 1:
        raise ScenarioError(f"max_shape_batches: must be ≥ 1 (got {max_shape_batches})")
    scenario = checked_scenario(scenario, catalog).scenario
    job = scenario.job
    gpu = scenario_gpu(scenario, catalog)
    if fabric is None:
        fabric = build_fabric(scenario, catalog)
    placement = place_job(fabric, job)
    c = enumerate_candidates(
        placement.world_size, moe=job.model.moe is not None, global_batch=job.global_batch
    )
    window = candidates or slice(0, c["tp"].size)
    offset = window.indices(c["tp"].size)[0]
    c = {k: v[window] for k, v in c.items()}
    total = c["tp"].size
    stack = StackOptions.of_job(job)
    survivors, rejected = _apply_rules(c, job.model, job.global_batch)
    index, rejected[REJECT_REASONS[-1]] = _fitting(c, survivors, job, stack, gpu)
    if on_progress is not None:
        on_progress(0.3, f"{index.size} layouts fit; costing collectives")
    if index.size == 0:
        return SearchResult(best=[], candidates=total, valid=0, rejected=rejected)
    table = comm_table(fabric, ecmp=scenario.what_if.ecmp, rank_gpu=placement.rank_gpu)
    costing = _Costing(
        job=job,
        stack=stack,
        gpu=gpu,
        straggler_factor=job_stragglers(
            fabric, placement, scenario.what_if, compute_time_s=1.0
        ).expected_step_factor,
        scaleup_ranks=job_scaleup_ranks(fabric, placement),
    )
    kept = _branch_and_bound(costing, c, index, table, top_k, on_progress, max_batches=max_shape_batches)
    if on_progress is not None:
        on_progress(1.0, "done")
    best = _best(costing, c, kept, placement.world_size, top_k, offset)
    return SearchResult(best=best, candidates=total, valid=int(index.size), rejected=rejected)


def _apply_rules(c: dict[str, np.ndarray], model, global_batch: int) -> tuple[np.ndarray, dict[str, int]]:
    """The candidates passing every rule but memory, and the rejected ones by first failure."""
    rejected_mask = np.zeros(c["tp"].size, dtype=bool)
    rejected = {}
    for reason, failed in zip(REJECT_REASONS, _rule_failures(c, model, global_batch), strict=False):
        first = failed & ~rejected_mask
        rejected[reason] = int(first.sum())
        rejected_mask |= failed
    return np.flatnonzero(~rejected_mask), rejected


def _fitting(c, survivors: np.ndarray, job, stack: StackOptions, gpu) -> tuple[np.ndarray, int]:
    """The survivors that fit in the GPU's memory, and how many do not."""
    memory = memory_per_gpu(
        job.model,
        CandidateLayouts.of_columns(job.global_batch, c, survivors),
        hbm_gib=gpu.hbm_gib,
        flash=stack.tiled_attention,
        fp8=stack.fp8,
        fp8_params=stack.fp8_params,
    )
    fits = memory["total"] <= gpu.hbm_gib * GIB
    return survivors[fits], int((~fits).sum())


#: Layout shapes costed per routing round of the branch and bound.
SHAPES_PER_BATCH = 16


@dataclass(frozen=True)
class _Costing:
    """What every evaluation of a search shares: the job, its stack, the GPU, and the straggler
    factor and scale-up width of the job's placement."""

    job: Any
    stack: StackOptions
    gpu: Any
    straggler_factor: float
    scaleup_ranks: float

    def evaluate(self, c, index, comm_time):
        """``assemble_step`` of the candidates ``index``."""
        return assemble_step(
            self.job.model,
            CandidateLayouts.of_columns(self.job.global_batch, c, index),
            self.stack,
            gpu=self.gpu,
            comm_time=comm_time,
            straggler_factor=self.straggler_factor,
            scaleup_ranks=self.scaleup_ranks,
        )


def _free_comm(kind, op, size):
    return np.zeros(np.shape(size))


def _branch_and_bound(
    costing: _Costing, c, index, table, top_k: int, on_progress=None, *, max_batches: int | None = None
) -> list[tuple[np.ndarray, Any]]:
    """The evaluated (candidates, StepArrays) batches that hold the top K.

    Every step-time term is non-decreasing in the collective times, so the step with free
    communication is a lower bound. Layout shapes (tp, pp, dp, cp, ep) are costed on the fabric
    in order of their best bound until no remaining shape can enter the top K (or after
    ``max_batches`` batches: the quick search); the others never need routing. ``on_progress``
    is called after every batch of shapes (a callback raising ``Cancelled`` stops the search
    there).
    """
    bound = costing.evaluate(c, index, _free_comm)
    shape_id, bound_by_shape = _shapes(c, index, bound.step_time_s)
    order = np.argsort(bound_by_shape)
    kept, kept_step = [], []
    threshold = np.inf
    for batch_number, start in enumerate(range(0, order.size, SHAPES_PER_BATCH)):  # shapes, not candidates
        if bound_by_shape[order[start]] > threshold or batch_number == max_batches:
            break
        chosen = np.isin(shape_id, order[start : start + SHAPES_PER_BATCH])
        batch = index[chosen]
        arrays = costing.evaluate(c, batch, _table_comm(table, c, batch))
        kept.append((batch, arrays))
        kept_step.append(arrays.step_time_s)
        steps = np.concatenate(kept_step)
        if steps.size >= top_k:
            threshold = np.partition(steps, top_k - 1)[top_k - 1]
        if on_progress is not None:
            done = min(order.size, start + SHAPES_PER_BATCH)
            on_progress(0.3 + 0.7 * done / order.size, f"{done:,} of {order.size:,} layout shapes costed")
    return kept


def _table_comm(table, c, index):
    degrees = {k: c[k][index] for k in ("tp", "pp", "dp", "cp", "ep")}

    def comm_time(kind, op, size):
        return table.time_s(kind, op, size, **degrees)

    return comm_time


def _shapes(c, index, bound):
    """Shape id per candidate and each shape's smallest lower bound."""
    shape_id = _row_ids([c[k][index] for k in ("tp", "pp", "dp", "cp", "ep")])
    best = np.full(shape_id.max() + 1, np.inf)
    np.minimum.at(best, shape_id, bound)
    return shape_id, best


def _row_ids(columns: list[np.ndarray]) -> np.ndarray:
    """Rank of each row among the distinct rows, as ``np.unique(axis=0, return_inverse=True)``.

    The non-negative columns are packed into one mixed-radix int64 key (the order stays
    lexicographic), which sorts far faster than rows; too wide a key falls back to rows.
    """
    radices = [int(col.max(initial=0)) + 1 for col in columns]
    if any(col.size and col.min() < 0 for col in columns) or float(np.prod(radices, dtype=float)) >= 2.0**62:
        return np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)[1].ravel()
    key = np.zeros(columns[0].shape, np.int64)
    for col, radix in zip(columns, radices, strict=True):  # five columns, not a loop over rows
        key = key * radix + col
    return np.searchsorted(np.unique(key), key)


def _best(costing: _Costing, c, kept, gpus: int, top_k: int, offset: int) -> list[dict[str, Any]]:
    """The ``top_k`` fastest of the evaluated candidates as result rows."""
    index = np.concatenate([batch for batch, _ in kept])
    rows = [arrays for _, arrays in kept]
    step = np.concatenate([np.asarray(a.step_time_s) for a in rows])
    memory = np.concatenate([np.asarray(a.memory["total"]) for a in rows])
    breakdown = {k: np.concatenate([np.asarray(a.breakdown[k]) for a in rows]) for k in rows[0].breakdown}
    model_flops = float(rows[0].model_flops)
    job = costing.job
    # Fastest first; ties: less memory, then enumeration order (so any slicing agrees).
    order = np.lexsort((index, memory, step))[:top_k]
    peak = costing.gpu.peak_tflops(job.precision) * 1e12
    out = []
    for i in order:  # the top K rows, not the candidates
        j = index[i]
        out.append(
            {
                **_layout_row(c, j),
                "step_time_s": float(step[i]),
                "mfu": float(model_flops / step[i] / gpus / peak),
                "tokens_per_s": float(job.global_batch * job.model.seq_len / step[i]),
                "memory_gib_per_gpu": float(memory[i] / GIB),
                "breakdown": {k: float(v[i]) for k, v in breakdown.items()},
                "candidate": int(offset + j),
            }
        )
    return out


def _layout_row(c, j: int) -> dict[str, Any]:
    """Candidate ``j``'s layout as plain values (recompute by name)."""
    row = {k: int(c[k][j]) for k in ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch")}
    row["recompute"] = RECOMPUTE_NAMES[int(c["recompute"][j])]
    row["zero"] = int(c["zero"][j])
    return row


def merge_search_results(results: list[SearchResult], *, top_k: int) -> SearchResult:
    """Combine the results of disjoint candidate slices into the result of their union."""
    rows = sorted(
        (row for r in results for row in r.best),
        key=lambda row: (row["step_time_s"], row["memory_gib_per_gpu"], row["candidate"]),
    )
    return SearchResult(
        best=rows[:top_k],
        candidates=sum(r.candidates for r in results),
        valid=sum(r.valid for r in results),
        rejected={reason: sum(r.rejected.get(reason, 0) for r in results) for reason in REJECT_REASONS},
    )


def fitting_layout(scenario: Scenario | CheckedScenario, *, catalog, fabric=None, on_progress=None):
    """The fastest layout of ``scenario``'s job that fits in memory and passes every rule (a
    ``SearchResult.best`` row), or None when none does: what an infeasible job would run as."""
    result = search_layouts(scenario, catalog=catalog, fabric=fabric, top_k=1, on_progress=on_progress)
    return result.best[0] if result.best else None
