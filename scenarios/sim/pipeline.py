"""Pipeline schedules: stage balance, 1F1B / interleaved step time and bubble, phase timeline.

With ``p`` stages, ``v`` virtual stages (model chunks) per GPU and ``m`` microbatches per
pipeline, the 1F1B schedule (Narayanan et al., PipeDream-Flush / Megatron-LM SC'21, Section
2.2) takes ``(m + (p - 1) / v) * (t_f + t_b)`` where ``t_f``, ``t_b`` are one stage's forward
and backward time for one microbatch; the bubble fraction is ``(p - 1) / (v m)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "PHASE_KINDS",
    "PHASE_LABELS",
    "PhaseTimeline",
    "StageTimeline",
    "bubble_fraction",
    "phase_timeline",
    "pipeline_time_s",
    "stage_layers",
]


def bubble_fraction(pp, vpp, microbatches) -> np.ndarray:
    """Idle fraction of the pipeline relative to its busy time: ``(p - 1) / (v m)``."""
    p, v, m = (np.asarray(x, dtype=float) for x in (pp, vpp, microbatches))
    return (p - 1.0) / (v * m)


def pipeline_time_s(stage_forward_s, stage_backward_s, pp, vpp, microbatches) -> np.ndarray:
    """Busy + bubble time of the 1F1B (v = 1) or interleaved (v > 1) schedule (s).

    Parameters
    ----------
    stage_forward_s, stage_backward_s : ndarray
        One stage's forward / backward (incl. recompute) time for one microbatch (s).
    pp, vpp, microbatches : int or ndarray
    """
    m = np.asarray(microbatches, dtype=float)
    per_microbatch = np.asarray(stage_forward_s) + np.asarray(stage_backward_s)
    return per_microbatch * m * (1.0 + bubble_fraction(pp, vpp, microbatches))


def stage_layers(layers: int, pp) -> tuple[np.ndarray, np.ndarray]:
    """Layers on the busiest inner stage and on the last stage (which also runs the logits).

    Layers are spread as evenly as possible (``ceil(layers / pp)`` on the busiest stage); when
    the division is not exact the last stage gets one layer fewer to make room for the output
    layer (as Llama 3 does, Dubey et al. 2024, Section 3.3.2).

    Returns
    -------
    (inner, last) : ndarray, ndarray
        Layer counts, broadcast over ``pp``; for ``pp == 1`` both equal ``layers``.
    """
    p = np.asarray(pp, dtype=np.int64)
    per_stage = -(-layers // p)
    slack = p * per_stage - layers
    last = np.where(p == 1, layers, per_stage - np.minimum(slack, 1))
    rest_slack = slack - np.minimum(slack, 1)
    inner = np.where(rest_slack >= p - 1, per_stage - 1, per_stage)
    inner = np.where(p == 1, layers, inner)
    return inner.astype(float), last.astype(float)


#: Kinds of the phases of a step on one pipeline stage (codes are indices). "comm" is exposed
#: tensor/context/expert-parallel communication inside a forward or backward pass; "pp_wait" the
#: exposed pipeline send/receive; "bubble" the schedule's fill/drain idle; "dp" exposed
#: data-parallel gradient/parameter synchronisation; "straggler" the wait for the slowest GPU;
#: "idle" a GPU that is not in the job (it never appears inside a stage's phases).
PHASE_KINDS = ("forward", "backward", "comm", "pp_wait", "bubble", "dp", "optimizer", "straggler", "idle")
PHASE_LABELS = {
    "forward": "Forward compute",
    "backward": "Backward compute (incl. recompute)",
    "comm": "Exposed TP/CP/EP communication",
    "pp_wait": "Pipeline send/receive",
    "bubble": "Pipeline bubble",
    "dp": "Exposed data-parallel communication",
    "optimizer": "Optimizer step",
    "straggler": "Straggler wait",
    "idle": "Idle (not in the job)",
}


@dataclass(frozen=True)
class StageTimeline:
    """The ordered phases of one training step on every pipeline stage (S stages, K phases
    at most per stage; rows are padded).

    Attributes
    ----------
    kind : ndarray of int8, shape (S, K)
        Index into ``PHASE_KINDS``; -1 pads a row after its ``n_phases[s]`` phases.
    start_s, duration_s : ndarray of float, shape (S, K)
        Start (from the step's start) and length of each phase (s); 0 in the padding. On every
        stage the phases tile ``[0, step_time_s]`` exactly.
    microbatch, chunk : ndarray of int32, shape (S, K)
        Microbatch and virtual-stage (model chunk) index of forward/backward/comm/pp_wait
        phases; -1 otherwise.
    n_phases : ndarray of int, shape (S,)
    step_time_s : float
    gpu_stage : ndarray of int, shape (G,)
        Pipeline stage of every GPU of the fabric; -1 for a GPU that is not in the job.
    vpp : int
        Virtual stages (model chunks) per GPU of the schedule that produced it.
    """

    kind: np.ndarray
    start_s: np.ndarray
    duration_s: np.ndarray
    microbatch: np.ndarray
    chunk: np.ndarray
    n_phases: np.ndarray
    step_time_s: float
    gpu_stage: np.ndarray
    vpp: int = 1

    @property
    def n_stages(self) -> int:
        return int(self.kind.shape[0])


@dataclass(frozen=True)
class PhaseTimeline:
    """The phases of one step on the critical path, back to back.

    Attributes
    ----------
    names : tuple[str, ...]
    start_s, duration_s : ndarray, shape (K,)
    """

    names: tuple[str, ...]
    start_s: np.ndarray
    duration_s: np.ndarray

    def to_list(self) -> list[dict[str, float | str]]:
        return [
            {"phase": n, "start_s": float(s), "duration_s": float(d)}
            for n, s, d in zip(self.names, self.start_s, self.duration_s, strict=True)
        ]


def phase_timeline(breakdown: dict[str, float]) -> PhaseTimeline:
    """Lay the step's breakdown out as phases of the first stage's critical path.

    The pipeline fill takes half the bubble, the steady 1F1B phase holds the compute and the
    exposed tp/cp/ep/pp communication, the drain the other half of the bubble, then the exposed
    gradient synchronisation, the optimizer step and the wait for stragglers.
    """
    bubble = breakdown.get("bubble", 0.0)
    steady = sum(breakdown.get(k, 0.0) for k in ("compute", "tp", "cp", "ep", "pp"))
    phases = [
        ("pipeline fill", bubble / 2.0),
        ("steady 1F1B", steady),
        ("pipeline drain", bubble / 2.0),
        ("gradient sync", breakdown.get("dp", 0.0)),
        ("optimizer", breakdown.get("optimizer", 0.0)),
        ("straggler wait", breakdown.get("straggler", 0.0)),
    ]
    durations = np.array([d for _, d in phases], dtype=float)
    starts = np.concatenate([[0.0], np.cumsum(durations)[:-1]])
    return PhaseTimeline(names=tuple(n for n, _ in phases), start_s=starts, duration_s=durations)
