"""Pipeline schedules: stage balance, the 1F1B / interleaved op order and its simulation, and
the per-stage phases of a step (``StageTimeline``; ``timeline.stage_timeline`` lays them out).

With ``p`` stages, ``v`` virtual stages (model chunks) per GPU and ``m`` microbatches per
pipeline, every stage runs ``2 m v`` ops (a forward and a backward of one chunk of one
microbatch) in the order of Megatron-LM's schedules (``megatron/core/pipeline_parallel/
schedules.py``): ``forward_backward_pipelining_without_interleaving`` for ``v = 1`` and
``forward_backward_pipelining_with_interleaving`` for ``v > 1`` -- warm-up forwards, steady 1F1B
pairs (one forward, then one backward), cool-down backwards. An op waits for its input from the
neighbouring virtual stage: the forward of chunk ``c`` on stage ``s`` for the same microbatch's
forward on ``s - 1`` (chunk ``c - 1`` on the last stage when ``s = 0``), the backward for the
backward on ``s + 1`` (chunk ``c + 1`` on stage 0 when ``s = p - 1``). ``simulate_schedule``
starts every op as soon as its stage is free and its input has arrived (p2p transfers are
modelled as part of the sending op, as if asynchronous: Megatron's blocking send/receive pairs
are not modelled).

Closed form (Narayanan et al., SC'21, Section 2.2): with per-chunk op times ``t_f/v + p2p`` and
``t_b/v + p2p`` the schedule takes ``(m v + p - 1) (t_f/v + t_b/v + 2 p2p)``; its idle (bubble)
is ``(p - 1)/(v m)`` of the busy time. ``tests/sim/test_pipeline.py`` checks that the simulated
Megatron orders (1F1B and interleaved, any ``t_b/t_f``) reach exactly this makespan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "PHASE_CODES",
    "PHASE_KINDS",
    "PHASE_LABELS",
    "PipelineSchedule",
    "StageTimeline",
    "bubble_fraction",
    "pipeline_schedule",
    "pipeline_time_s",
    "simulate_schedule",
    "stage_layers",
]


def bubble_fraction(pp, vpp, microbatches) -> np.ndarray:
    """Idle fraction of the pipeline relative to its busy time: ``(p - 1) / (v m)``."""
    p, v, m = (np.asarray(x, dtype=float) for x in (pp, vpp, microbatches))
    return (p - 1.0) / (v * m)


def pipeline_time_s(stage_forward_s, stage_backward_s, pp, vpp, microbatches, p2p_s=0.0) -> np.ndarray:
    """Makespan of the 1F1B (v = 1) or interleaved (v > 1) schedule (s), closed form.

    ``(m v + p - 1) * ((t_f + t_b) / v + 2 p2p)``: busy time ``m (t_f + t_b) + 2 m v p2p`` plus
    ``(p - 1) / (v m)`` of it as bubble (Narayanan et al., SC'21, Section 2.2).

    Parameters
    ----------
    stage_forward_s, stage_backward_s : ndarray
        One stage's forward / backward (incl. recompute) time for one microbatch, all its
        ``v`` chunks together (s).
    pp, vpp, microbatches : int or ndarray
    p2p_s : float or ndarray
        One pipeline send (s); every op carries one.
    """
    m, v = np.asarray(microbatches, dtype=float), np.asarray(vpp, dtype=float)
    busy = m * (np.asarray(stage_forward_s) + np.asarray(stage_backward_s)) + 2.0 * m * v * np.asarray(p2p_s)
    return busy * (1.0 + bubble_fraction(pp, vpp, microbatches))


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


# --- the schedule ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PipelineSchedule:
    """The order of the ops of one step on every stage (S = pp stages, N = 2 m v ops each).

    Attributes
    ----------
    pp, vpp, microbatches : int
    backward : ndarray of bool, shape (S, N)
        Op ``n`` of stage ``s`` is a backward pass (else a forward), in execution order.
    microbatch, chunk : ndarray of int32, shape (S, N)
        Microbatch and model chunk (virtual stage ``chunk * pp + s``) of each op.
    warmup : ndarray of int64, shape (S,)
        Warm-up forwards of each stage before its first 1F1B pair.
    dependency : ndarray of int64, shape (S, N)
        Flat index ``stage * N + op`` of the op whose output this op needs (the previous virtual
        stage's forward, the next virtual stage's backward, or for the last virtual stage's
        backward its own forward); -1 for the first virtual stage's forwards.
    """

    pp: int
    vpp: int
    microbatches: int
    backward: np.ndarray
    microbatch: np.ndarray
    chunk: np.ndarray
    warmup: np.ndarray
    dependency: np.ndarray

    @property
    def n_ops(self) -> int:
        """Ops per stage ``N = 2 m v``."""
        return int(self.backward.shape[1])


def pipeline_schedule(pp: int, vpp: int, microbatches: int) -> PipelineSchedule:
    """Megatron-LM's op order on every stage and the cross-stage dependencies (vectorized).

    Warm-up forwards on stage ``s``: ``min(p - s - 1, m)`` without interleaving;
    ``min((p - s - 1) * 2 + (v - 1) * p, m v)`` with it (``get_pp_rank_microbatches``, microbatch
    group size ``p``). Virtual microbatch ``k`` is microbatch ``(k // (p v)) * p + k % p`` of
    chunk ``(k % (p v)) // p`` for forwards (``get_schedule_table``) and of chunk ``v - 1 -`` that
    for backwards (``get_model_chunk_id``). Steady state alternates forward ``k + warmup`` and
    backward ``k``.

    Parameters
    ----------
    pp, vpp, microbatches : int
        ``vpp > 1`` needs ``pp >= 2`` and ``microbatches`` a multiple of ``pp`` (Megatron's rule).

    Returns
    -------
    PipelineSchedule
    """
    p, v, m = int(pp), int(vpp), int(microbatches)
    if p < 1 or v < 1 or m < 1:
        raise ValueError(f"pipeline: pp, vpp and microbatches must be ≥ 1 (got {p}, {v}, {m})")
    if v > 1 and (p < 2 or m % p):
        raise ValueError(
            f"pipeline: interleaving needs pp ≥ 2 and microbatches a multiple of pp (got {p}, {m})"
        )
    total, n_ops = m * v, 2 * m * v
    stage = np.arange(p, dtype=np.int64)
    if v == 1:
        warmup = np.minimum(p - stage - 1, total)
    else:
        warmup = np.minimum((p - stage - 1) * 2 + (v - 1) * p, total)
    w = warmup[:, None]
    remaining = total - w
    op = np.arange(n_ops, dtype=np.int64)[None, :]
    steady = (op >= w) & (op < w + 2 * remaining)
    j = op - w
    backward = ~(op < w) & ~(steady & (j % 2 == 0))
    virtual = np.where(
        op < w, op, np.where(steady, np.where(j % 2 == 0, w + j // 2, j // 2), op - w - remaining)
    )
    within = virtual % (p * v)
    microbatch = (virtual // (p * v)) * p + within % p
    chunk = np.where(backward, v - 1 - within // p, within // p)

    stages = np.broadcast_to(stage[:, None], (p, n_ops))
    position = np.empty((p, 2, v, m), dtype=np.int64)
    position[stages, backward.astype(np.int64), chunk, microbatch] = np.broadcast_to(op, (p, n_ops))
    vstage = chunk * p + stages
    last_virtual = vstage == p * v - 1
    dep_vstage = np.where(backward, np.where(last_virtual, vstage, vstage + 1), vstage - 1)
    dep_backward = backward & ~last_virtual
    valid = dep_vstage >= 0
    dep_vstage = np.maximum(dep_vstage, 0)
    dep_stage, dep_chunk = dep_vstage % p, dep_vstage // p
    dep_op = position[dep_stage, dep_backward.astype(np.int64), dep_chunk, microbatch]
    dependency = np.where(valid, dep_stage * n_ops + dep_op, -1)
    return PipelineSchedule(
        pp=p,
        vpp=v,
        microbatches=m,
        backward=backward,
        microbatch=microbatch.astype(np.int32),
        chunk=chunk.astype(np.int32),
        warmup=warmup,
        dependency=dependency,
    )


def simulate_schedule(
    schedule: PipelineSchedule, forward_op_s, backward_op_s
) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every op when each starts as soon as its stage and its input allow.

    Rounds over the op order (not over stages or GPUs): each round runs, on every stage at once,
    the next op whose input was produced in an earlier round, so the rounds are a topological
    order of the dependency graph and the times are its longest paths (exact, no time step).
    About ``2 (m v + p - 1)`` rounds of a dozen small array operations.

    Parameters
    ----------
    schedule : PipelineSchedule
    forward_op_s, backward_op_s : float or ndarray, shape (S,)
        Duration of one forward / backward op (one chunk of one microbatch, its pipeline send
        included) on each stage (s).

    Returns
    -------
    (start_s, end_s) : ndarray, shape (S, N) each
    """
    n_stages, n_ops = schedule.backward.shape
    forward = np.broadcast_to(np.asarray(forward_op_s, dtype=float), (n_stages,))
    backward = np.broadcast_to(np.asarray(backward_op_s, dtype=float), (n_stages,))
    # One extra slot per stage after its last op: a parked op that waits for a "never" slot, so
    # finished stages need no mask. Slot ``done`` (last) is "no dependency": finished at t = 0.
    width = n_ops + 1
    slots = n_stages * width
    never, done = slots, slots + 1
    duration = np.zeros((n_stages, width))
    duration[:, :n_ops] = np.where(schedule.backward, backward[:, None], forward[:, None])
    duration = duration.ravel()
    dependency = np.full((n_stages, width), never, dtype=np.int64)
    dep = schedule.dependency
    dep_stage, dep_op = np.divmod(np.maximum(dep, 0), n_ops)
    dependency[:, :n_ops] = np.where(dep < 0, done, dep_stage * width + dep_op)
    dependency = dependency.ravel()
    start = np.zeros(slots + 2)
    end = np.zeros(slots + 2)
    finished = np.zeros(slots + 2, dtype=bool)
    finished[done] = True
    op = np.arange(n_stages, dtype=np.int64) * width
    free = np.zeros(n_stages)
    last = op + n_ops
    while True:  # one round per step of the op order, all stages at once
        needed = dependency[op]
        ready = finished[needed]
        if not ready.any():
            break
        begin = np.maximum(free, end[needed])
        finish = begin + duration[op]
        start[op] = begin  # a stage that is not ready writes its op's slots again when it runs
        end[op] = finish
        finished[op] = ready
        free = np.where(ready, finish, free)
        op += ready
    if np.any(op != last):
        raise RuntimeError("pipeline schedule deadlocks (an op waits for one that never runs)")
    shape = (n_stages, width)
    return start[:slots].reshape(shape)[:, :n_ops], end[:slots].reshape(shape)[:, :n_ops]


# --- the phases of a step on each stage ----------------------------------------------------

#: Kinds of the phases of a step on one pipeline stage (codes are indices). "comm" is exposed
#: tensor/context/expert-parallel communication inside a forward or backward pass; "pp_wait" the
#: exposed pipeline send/receive; "bubble" the schedule's fill/drain idle; "dp" exposed
#: data-parallel gradient/parameter synchronisation; "straggler" the wait for the slowest GPU;
#: "idle" a GPU that is not in the job (it never appears inside a stage's phases).
PHASE_KINDS = ("forward", "backward", "comm", "pp_wait", "bubble", "dp", "optimizer", "straggler", "idle")
PHASE_CODES = {name: code for code, name in enumerate(PHASE_KINDS)}
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
    microbatches : int
        Microbatches per pipeline ``m``.
    pipeline_s : float
        End of the schedule (the last op of any stage); straggler wait, exposed data-parallel
        time and the optimizer follow it on every stage.
    pipeline_end_s : ndarray of float, shape (S,)
        End of each stage's last op (the stages between it and ``pipeline_s`` idle: drain).
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
    microbatches: int = 1
    pipeline_s: float = 0.0
    pipeline_end_s: np.ndarray | None = None

    @property
    def n_stages(self) -> int:
        return int(self.kind.shape[0])

    @property
    def stage_gpus(self) -> np.ndarray:
        """GPUs of each stage, shape (S,)."""
        stages = np.asarray(self.gpu_stage)
        return np.bincount(stages[stages >= 0], minlength=self.n_stages)

    @property
    def critical_stage(self) -> int:
        """The stage whose last op ends the schedule (stage 0 in 1F1B; the first such stage)."""
        ends = self.pipeline_end_s if self.pipeline_end_s is not None else np.zeros(self.n_stages)
        return int(np.argmax(ends))

    def kind_totals_s(self) -> np.ndarray:
        """Seconds of each phase kind on each stage, shape (S, len(PHASE_KINDS))."""
        n_kinds = len(PHASE_KINDS)
        valid = self.kind >= 0
        stage = np.broadcast_to(np.arange(self.n_stages)[:, None], self.kind.shape)[valid]
        flat = stage * n_kinds + self.kind[valid].astype(np.int64)
        totals = np.bincount(flat, weights=self.duration_s[valid], minlength=self.n_stages * n_kinds)
        return totals.reshape(self.n_stages, n_kinds)

    def stage_totals_s(self, stage: int) -> dict[str, float]:
        """Seconds per phase kind on one stage."""
        row = self.kind_totals_s()[int(stage)]
        return {name: float(row[code]) for code, name in enumerate(PHASE_KINDS)}

    def compact_arrays(self) -> dict[str, np.ndarray]:
        """Arrays to store with a run: kinds as int8, times as float32 (s), counts as int32.

        ``timeline_kind``, ``timeline_start_s``, ``timeline_duration_s``, ``timeline_microbatch``,
        ``timeline_chunk`` (S, K); ``timeline_n_phases`` (S,); ``gpu_stage`` (G,). The inverse is
        :meth:`from_compact_arrays`.
        """
        return {
            "timeline_kind": np.asarray(self.kind, dtype=np.int8),
            "timeline_start_s": np.asarray(self.start_s, dtype=np.float32),
            "timeline_duration_s": np.asarray(self.duration_s, dtype=np.float32),
            "timeline_microbatch": np.asarray(self.microbatch, dtype=np.int32),
            "timeline_chunk": np.asarray(self.chunk, dtype=np.int32),
            "timeline_n_phases": np.asarray(self.n_phases, dtype=np.int32),
            "gpu_stage": np.asarray(self.gpu_stage, dtype=np.int32),
        }

    @classmethod
    def from_compact_arrays(
        cls, arrays: Mapping[str, np.ndarray], *, step_time_s: float, vpp: int = 1, microbatches: int = 1
    ) -> StageTimeline:
        """Rebuild a timeline from :meth:`compact_arrays` (times widened back to float64)."""
        kind = np.asarray(arrays["timeline_kind"], dtype=np.int8)
        start = np.asarray(arrays["timeline_start_s"], dtype=float)
        duration = np.asarray(arrays["timeline_duration_s"], dtype=float)
        pipeline = np.where(np.isin(kind, _OP_AND_BUBBLE_CODES), start + duration, 0.0).max(initial=0.0)
        return cls(
            kind=kind,
            start_s=start,
            duration_s=duration,
            microbatch=np.asarray(arrays["timeline_microbatch"], dtype=np.int32),
            chunk=np.asarray(arrays["timeline_chunk"], dtype=np.int32),
            n_phases=np.asarray(arrays["timeline_n_phases"], dtype=np.int64),
            step_time_s=float(step_time_s),
            gpu_stage=np.asarray(arrays["gpu_stage"], dtype=np.int64),
            vpp=int(vpp),
            microbatches=int(microbatches),
            pipeline_s=float(pipeline),
        )

    def to_json(self) -> dict[str, Any]:
        """``{"step_time_s", "vpp", "microbatches", "stages": [{"stage", "gpus", "phases":
        [{"kind", "start_s", "duration_s"}, ...]}, ...]}`` (what ``simulate --json`` prints)."""
        gpus = self.stage_gpus.tolist()
        stages = []
        for s in range(self.n_stages):  # serialization of a finished result, not a hot path
            n = int(self.n_phases[s])
            kinds = self.kind[s, :n].tolist()
            starts = np.round(self.start_s[s, :n], 9).tolist()
            durations = np.round(self.duration_s[s, :n], 9).tolist()
            phases = [
                {"kind": PHASE_KINDS[k], "start_s": t, "duration_s": d}
                for k, t, d in zip(kinds, starts, durations, strict=True)
            ]
            stages.append({"stage": s, "gpus": int(gpus[s]), "phases": phases})
        return {
            "step_time_s": float(self.step_time_s),
            "vpp": int(self.vpp),
            "microbatches": int(self.microbatches),
            "stages": stages,
        }


_OP_AND_BUBBLE_CODES = [PHASE_CODES[k] for k in ("forward", "backward", "comm", "pp_wait", "bubble")]
