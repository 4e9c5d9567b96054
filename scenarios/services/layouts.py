"""A layout proposed for a job on a design: what the scenario form fills in when a model preset
is chosen, so a newcomer starts from a layout that fits in GPU memory (a quick layout search of
the core, ``scenarios.sim.search``, keeping the best layout)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.core.exceptions import ValidationError

from scenarios.kinds.context import RunContext
from scenarios.scenario_file import field_of, scenario_dict

#: Layout keys a proposal sets in ``job`` (the rest of the job is kept).
PROPOSED_JOB_KEYS = ("micro_batch", "recompute", "zero")
PROPOSED_DEGREES = ("tp", "pp", "dp", "cp", "ep", "vpp")
#: Batches of the most promising layout shapes the quick search costs on the fabric: a proposal
#: within about a second on thousands of GPUs (the full search is the "Layout search" run).
QUICK_SHAPE_BATCHES = 4


@dataclass(frozen=True)
class LayoutProposal:
    """The fastest layout of a job that fits: its degrees and job keys, the memory it needs per
    GPU and the GPU's HBM (GiB), its predicted step time and MFU; ``layout`` is ``None`` when no
    layout fits (``reason`` says why)."""

    layout: dict[str, Any] | None
    memory_gib_per_gpu: float | None
    hbm_gib: float
    gpu: str
    gpus: int
    step_time_s: float | None = None
    mfu: float | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "memory_gib_per_gpu": self.memory_gib_per_gpu,
            "hbm_gib": self.hbm_gib,
            "gpu": self.gpu,
            "gpus": self.gpus,
            "step_time_s": self.step_time_s,
            "mfu": self.mfu,
            "reason": self.reason,
        }


def layout_propose(
    *, design, job: Mapping[str, Any], what_if: Mapping[str, Any] | None = None, catalog=None
) -> LayoutProposal:
    """The fastest layout of ``job`` (its own layout ignored) on ``design`` with the what-if's
    cluster that fits in GPU memory.

    Raises
    ------
    ValidationError
        ``{field path: message}`` when the job or what-if cannot be simulated at all.
    """
    from scenarios.sim.format.scenario import ScenarioError, check_scenario, parse_scenario
    from scenarios.sim.placement import scenario_job_gpus
    from scenarios.sim.search import search_layouts
    from scenarios.sim.step.model import scenario_gpu
    from topology.selectors import catalog_load

    catalog = catalog_load() if catalog is None else catalog
    base = {k: v for k, v in dict(job).items() if k != "parallel"}  # the search sets the layout
    try:
        probe = parse_scenario(_document(design, base, what_if))
        gpus = scenario_job_gpus(probe, catalog)
        # The plain layout dp = every GPU, past the file's batch rule: the search applies it to
        # each candidate, and the degrees must only multiply to the job's GPUs.
        job_spec = replace(probe.job, parallel=replace(probe.job.parallel, dp=gpus))
        checked = check_scenario(replace(probe, job=job_spec), catalog)
    except ScenarioError as exc:
        message = str(exc)
        raise ValidationError({field_of(message): message}) from None
    gpu = scenario_gpu(checked.scenario, catalog)
    context = RunContext(run=None, design=design, checked=checked, catalog=catalog, options={})
    result = search_layouts(
        checked, catalog=catalog, fabric=context.fabric(), top_k=1, max_shape_batches=QUICK_SHAPE_BATCHES
    )
    common = {"hbm_gib": float(gpu.hbm_gib), "gpu": gpu.slug, "gpus": gpus}
    if not result.best:
        reason = max(result.rejected, key=result.rejected.get) if result.rejected else "no layout"
        return LayoutProposal(
            layout=None,
            memory_gib_per_gpu=None,
            reason=f"no layout of the job on {gpus:,} GPUs fits ({reason}, the most common reason)",
            **common,
        )
    best = result.best[0]
    layout = {k: best[k] for k in (*PROPOSED_DEGREES, *PROPOSED_JOB_KEYS)}
    return LayoutProposal(
        layout=layout,
        memory_gib_per_gpu=float(best["memory_gib_per_gpu"]),
        step_time_s=float(best["step_time_s"]),
        mfu=float(best["mfu"]),
        **common,
    )


def _document(design, job: dict[str, Any], what_if) -> dict[str, Any]:
    """The scenario file of ``job`` on the design with the layout tp = pp = dp = 1."""
    job = {**job, "parallel": {"tp": 1, "pp": 1, "dp": 1}}
    return scenario_dict(design=design, name="layout proposal", job=job, what_if=what_if or {})
