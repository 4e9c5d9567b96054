"""Result dataclasses of the step-time core (what the CLI, the web app and the API read)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scenarios.sim.step.pipeline import StageTimeline
from utilities.jsonsafe import json_safe

__all__ = ["BREAKDOWN_KEYS", "MEMORY_KEYS", "OVERLAP_KEYS", "StepResult"]

#: Seconds per step by component; they sum to ``step_time_s``. (The timeline lays the pipeline
#: kinds out op by op, then straggler wait, dp and optimizer: ``StageTimeline``.)
BREAKDOWN_KEYS = ("compute", "tp", "cp", "ep", "pp", "bubble", "dp", "optimizer", "straggler")
#: The pipeline part of the step (what the schedule lays out op by op, and what stragglers stretch).
PIPELINE_KEYS = BREAKDOWN_KEYS[:6]
#: Communication kinds whose time can be hidden behind compute (``StepResult.hidden``).
OVERLAP_KEYS = ("tp", "cp", "ep", "pp", "dp")
#: GiB per GPU (first pipeline stage); they sum to ``memory_gib_per_gpu``.
MEMORY_KEYS = ("weights", "gradients", "optimizer", "activations", "reserve")


@dataclass(frozen=True)
class StepResult:
    """Predicted performance of one training step.

    Attributes
    ----------
    name : str
        Scenario name.
    step_time_s : float
        Expected wall time of one optimizer step (s).
    model_tflops_per_gpu : float
        Model FLOPs (no recompute) per step / step time / GPUs (TFLOP/s).
    hardware_tflops_per_gpu : float
        Executed FLOPs (incl. recompute) per step / step time / GPUs (TFLOP/s).
    mfu : float
        ``model_tflops_per_gpu`` / the GPU's dense peak for the precision.
    tokens_per_s : float
    memory_gib_per_gpu : float
        Peak memory of a first-stage GPU (GiB).
    fits : bool
        Whether that fits in the GPU's HBM.
    memory : dict[str, float]
        GiB by component (``MEMORY_KEYS``).
    breakdown : dict[str, float]
        Seconds by component (``BREAKDOWN_KEYS``), summing to ``step_time_s``.
    time_to_train_days : float or None
        ``tokens`` / ``tokens_per_s`` when the job gives ``tokens``.
    gpus : int
        GPUs of the job (``dp × tp × pp × cp``; may be fewer than the fabric's).
    link_utilization : ndarray, shape (L,)
        Mean utilization of each fabric link over a step (busier direction).
    rack_link_utilization : ndarray, shape (R,)
        Hottest link of each rack.
    gpu_slowdown : ndarray, shape (G,)
        Each fabric GPU's mean compute-time factor from stragglers / slow nodes (1 = nominal,
        and for GPUs outside the job).
    timeline : StageTimeline
        The phases of one step on every pipeline stage, from the simulated schedule, and the
        GPU -> stage map (``timeline.gpu_stage``).
    hidden : dict[str, float]
        Seconds per step each communication kind (tp, cp, ep, pp, dp) ran hidden behind
        compute; the breakdown's entries of the same names are what stayed exposed.
    memory_headroom_gib : float
        HBM left on that GPU (GiB; negative by how much it does not fit).
    infeasible : tuple[str, ...]
        Why the job cannot run as laid out, one line each (``memory: 922 GiB per GPU needed, 80
        GiB on h100-sxm``); empty when it can. An infeasible job's step time, MFU and time to
        train describe a job that cannot run: nothing should present them as an answer.
    details : dict
        Intermediate figures (per-layer times, comm bandwidths, bubble fraction...) for the
        "explain" view.
    """

    name: str
    step_time_s: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    tokens_per_s: float
    memory_gib_per_gpu: float
    fits: bool
    memory: dict[str, float]
    breakdown: dict[str, float]
    time_to_train_days: float | None
    gpus: int
    link_utilization: np.ndarray = field(repr=False)
    rack_link_utilization: np.ndarray = field(repr=False)
    gpu_slowdown: np.ndarray = field(repr=False)
    timeline: StageTimeline = field(repr=False)
    details: dict[str, Any] = field(default_factory=dict, repr=False)
    memory_headroom_gib: float = 0.0
    hidden: dict[str, float] = field(default_factory=dict)
    infeasible: tuple[str, ...] = ()

    @property
    def feasible(self) -> bool:
        """Whether the job can run as laid out (no ``infeasible`` reason)."""
        return not self.infeasible

    def summary(self) -> dict[str, Any]:
        """Plain numbers only (no per-link / per-GPU / per-stage arrays: run summaries are stored
        as JSON; ``timeline.compact_arrays()`` is what to store of the timeline)."""
        return {
            "name": self.name,
            "step_time_s": self.step_time_s,
            "model_tflops_per_gpu": self.model_tflops_per_gpu,
            "hardware_tflops_per_gpu": self.hardware_tflops_per_gpu,
            "mfu": self.mfu,
            "tokens_per_s": self.tokens_per_s,
            "memory_gib_per_gpu": self.memory_gib_per_gpu,
            "fits": self.fits,
            "memory_headroom_gib": self.memory_headroom_gib,
            "memory": dict(self.memory),
            "breakdown": dict(self.breakdown),
            "hidden": dict(self.hidden),
            "time_to_train_days": self.time_to_train_days,
            "gpus": self.gpus,
            "max_link_utilization": float(self.link_utilization.max(initial=0.0)),
            "details": json_safe(self.details),
            "feasible": self.feasible,
            "infeasible": list(self.infeasible),
        }

    def to_dict(self, *, arrays: bool = True) -> dict[str, Any]:
        """JSON-ready dict (what ``manage.py simulate --json`` prints): the summary, the
        per-stage timeline (``StageTimeline.to_json``) and, with ``arrays``, the per-link and
        per-GPU arrays."""
        out = self.summary()
        out["timeline"] = self.timeline.to_json()
        if arrays:
            out["link_utilization"] = _rounded(self.link_utilization)
            out["rack_link_utilization"] = _rounded(self.rack_link_utilization)
            out["gpu_slowdown"] = _rounded(self.gpu_slowdown)
        return out


def _rounded(values: np.ndarray) -> list[float]:
    return np.round(np.asarray(values, dtype=float), 6).tolist()
