"""The per-stage phase timeline of one step: what each pipeline stage does when, from the
simulated schedule (``pipeline.simulate_schedule``), then the phases after the pipeline
(straggler wait, exposed data-parallel time, optimizer). ``StageTimeline`` is what the power
model and the pages read; ``pipeline`` re-exports these names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from scenarios.sim.step.pipeline import PipelineSchedule

__all__ = ["PHASE_CODES", "PHASE_KINDS", "PHASE_LABELS", "OpTimes", "StageTimeline", "stage_timeline"]

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

#: Gaps shorter than this fraction of the step are rounding (two paths to the same instant
#: summed in a different order), not bubbles; they are dropped from the timeline.
_GAP_TOLERANCE = 1e-12


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


@dataclass(frozen=True)
class OpTimes:
    """One op of the schedule (one model chunk of one microbatch) on every stage (s; floats or
    arrays of shape (S,)): its compute, exposed tp / cp / ep communication, and the pipeline
    send every op carries (0 for ``pp = 1``)."""

    forward_compute_s: Any
    forward_comm_s: Any
    backward_compute_s: Any
    backward_comm_s: Any
    p2p_s: Any = 0.0

    @property
    def forward_s(self):
        """A forward op: compute + comm + send (summed in that order)."""
        return np.asarray(self.forward_compute_s) + np.asarray(self.forward_comm_s) + np.asarray(self.p2p_s)

    @property
    def backward_s(self):
        """A backward op: compute + comm + send (summed in that order)."""
        return np.asarray(self.backward_compute_s) + np.asarray(self.backward_comm_s) + np.asarray(self.p2p_s)


def stage_timeline(
    schedule: PipelineSchedule,
    ops: OpTimes,
    *,
    tail_s: Sequence[tuple[str, float]] = (),
    gpu_stage: np.ndarray,
    op_start_s: np.ndarray | None = None,
) -> StageTimeline:
    """Lay one step out phase by phase on every stage, from the simulated schedule.

    Each op is its compute ("forward"/"backward"), its exposed tp/cp/ep communication ("comm")
    and its pipeline send ("pp_wait"), back to back; the waits before ops and after a stage's
    last op until the schedule ends are "bubble". Then, on every stage from the schedule's end,
    the ``tail_s`` phases in the order given (``predict``: straggler wait, exposed dp,
    optimizer). Zero-length phases are left out.

    Parameters
    ----------
    schedule : PipelineSchedule
    ops : OpTimes
        Per op, i.e. one model chunk of one microbatch (s).
    tail_s : sequence of (kind, seconds)
        Phases after the pipeline, kinds from ``PHASE_KINDS``.
    gpu_stage : ndarray of int, shape (G,)
        Stage of every fabric GPU, -1 outside the job.
    op_start_s : ndarray, shape (S, N), optional
        Op starts from :func:`simulate_schedule` with the same op durations
        (``ops.forward_s`` / ``ops.backward_s``); simulated when omitted.

    Returns
    -------
    StageTimeline
    """
    from scenarios.sim.step.pipeline import simulate_schedule  # the schedule module re-exports this one

    parts = _op_parts(schedule, ops)
    if op_start_s is None:
        op_start_s, _ = simulate_schedule(schedule, ops.forward_s, ops.backward_s)
    layout = _PhaseLayout.of(np.asarray(op_start_s, dtype=float), parts, tail_s)
    out = _Phases(schedule.backward.shape[0], int(layout.n_phases.max(initial=0)))
    _put_op_phases(out, schedule, parts, layout)
    _put_tail_phases(out, layout, tail_s)
    return StageTimeline(
        kind=out.kind,
        start_s=out.start,
        duration_s=out.length,
        microbatch=out.microbatch,
        chunk=out.chunk,
        n_phases=layout.n_phases.astype(np.int64),
        step_time_s=float(layout.step_s),
        gpu_stage=np.asarray(gpu_stage, dtype=np.int64),
        vpp=schedule.vpp,
        microbatches=schedule.microbatches,
        pipeline_s=layout.pipeline_s,
        pipeline_end_s=np.asarray(layout.pipeline_end, dtype=float),
    )


def _op_parts(schedule: PipelineSchedule, ops: OpTimes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(compute, comm, send) length of every op, shape (S, N) each."""
    n_stages, is_backward = schedule.backward.shape[0], schedule.backward

    def per_op(forward, backward):
        f = np.broadcast_to(np.asarray(forward, dtype=float), (n_stages,))[:, None]
        b = np.broadcast_to(np.asarray(backward, dtype=float), (n_stages,))[:, None]
        return np.where(is_backward, b, f)

    return (
        per_op(ops.forward_compute_s, ops.backward_compute_s),
        per_op(ops.forward_comm_s, ops.backward_comm_s),
        per_op(ops.p2p_s, ops.p2p_s),
    )


@dataclass(frozen=True)
class _PhaseLayout:
    """Where each phase of a timeline goes: the phases present per op (gap, compute, comm,
    send) and the row column of each, the drain after a stage's last op, the tail."""

    start: np.ndarray  # (S, N) op starts
    previous_end: np.ndarray  # (S, N) end of the op before (0 for the first)
    present: list  # 4 masks (S, N): gap, compute, comm, send
    columns: list  # 4 columns (S, N) of those phases in the stage's row
    op_phases: np.ndarray  # (S,) phases of the ops and their gaps
    pipeline_end: np.ndarray  # (S,) end of each stage's last op
    pipeline_s: float
    has_drain: np.ndarray  # (S,)
    tail_lengths: np.ndarray  # (len(tail_s),)
    step_s: float
    n_phases: np.ndarray  # (S,)

    @classmethod
    def of(cls, start: np.ndarray, parts, tail_s) -> _PhaseLayout:
        n_stages = start.shape[0]
        end = start + (parts[0] + parts[1] + parts[2])
        previous_end = np.concatenate([np.zeros((n_stages, 1)), end[:, :-1]], axis=1)
        pipeline_end = end[:, -1]
        pipeline = float(pipeline_end.max(initial=0.0))
        tail_lengths = np.array([float(seconds) for _, seconds in tail_s])
        step = pipeline + float(tail_lengths.sum())
        tolerance = _GAP_TOLERANCE * max(step, 1e-300)
        present = [start - previous_end > tolerance, *(part > 0.0 for part in parts)]
        count = sum(mask.astype(np.int64) for mask in present)
        columns = [np.cumsum(count, axis=1) - count]
        for mask in present[:-1]:
            columns.append(columns[-1] + mask)
        op_phases = (columns[-1] + present[-1])[:, -1]
        has_drain = pipeline - pipeline_end > tolerance
        return cls(
            start=start,
            previous_end=previous_end,
            present=present,
            columns=columns,
            op_phases=op_phases,
            pipeline_end=pipeline_end,
            pipeline_s=pipeline,
            has_drain=has_drain,
            tail_lengths=tail_lengths,
            step_s=step,
            n_phases=op_phases + has_drain + int((tail_lengths > 0.0).sum()),
        )


def _put_op_phases(out: _Phases, schedule: PipelineSchedule, parts, layout: _PhaseLayout) -> None:
    """The gaps before ops (bubble), each op's compute, comm and send, and the drain."""
    codes, present, columns = PHASE_CODES, layout.present, layout.columns
    gap = layout.start - layout.previous_end
    out.put(present[0], columns[0], codes["bubble"], layout.previous_end, gap)
    op_kinds = (
        np.where(schedule.backward, codes["backward"], codes["forward"]),
        codes["comm"],
        codes["pp_wait"],
    )
    phase_start = layout.start
    for mask, column, code, length in zip(present[1:], columns[1:], op_kinds, parts, strict=True):
        out.put(mask, column, code, phase_start, length, schedule.microbatch, schedule.chunk)
        phase_start = phase_start + length
    drain = layout.pipeline_s - layout.pipeline_end
    column = layout.op_phases[:, None]
    out.put(layout.has_drain[:, None], column, codes["bubble"], layout.pipeline_end[:, None], drain[:, None])


def _put_tail_phases(out: _Phases, layout: _PhaseLayout, tail_s) -> None:
    """The tail phases (straggler wait, dp, optimizer...) on every stage after the pipeline."""
    n_stages = layout.start.shape[0]
    lengths = layout.tail_lengths
    column = (layout.op_phases + layout.has_drain)[:, None]
    tail_start = layout.pipeline_s + (np.cumsum(lengths) - lengths)
    for (name, _), length, phase_start in zip(tail_s, lengths, tail_start, strict=True):
        if length > 0.0:  # a loop over the (three) tail kinds
            out.put(np.ones((n_stages, 1), dtype=bool), column, PHASE_CODES[name], phase_start, length)
            column = column + 1


class _Phases:
    """Padded (S, K) phase arrays filled by masked scatters (one per phase type, not per phase)."""

    def __init__(self, n_stages: int, width: int) -> None:
        self.kind = np.full((n_stages, width), -1, dtype=np.int8)
        self.start = np.zeros((n_stages, width))
        self.length = np.zeros((n_stages, width))
        self.microbatch = np.full((n_stages, width), -1, dtype=np.int32)
        self.chunk = np.full((n_stages, width), -1, dtype=np.int32)

    def put(self, mask, column, kind, start, length, microbatch=-1, chunk=-1) -> None:
        shape = np.broadcast_shapes(np.shape(mask), np.shape(column))
        width = self.kind.shape[1]
        flat = (np.arange(shape[0])[:, None] * width + np.broadcast_to(column, shape)).ravel()
        mask = np.broadcast_to(mask, shape).ravel()
        every = bool(mask.all())
        if not every:
            flat = flat[mask]
        for target, values in (
            (self.kind, kind),
            (self.start, start),
            (self.length, length),
            (self.microbatch, microbatch),
            (self.chunk, chunk),
        ):
            values = np.broadcast_to(values, shape).ravel()
            target.ravel()[flat] = values if every else values[mask]
