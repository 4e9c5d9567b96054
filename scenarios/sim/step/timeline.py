"""The per-stage phase timeline of one step: what each pipeline stage does when, from the
simulated schedule (``pipeline.simulate_schedule``), then the phases after the pipeline
(straggler wait, exposed data-parallel time, optimizer), as a ``pipeline.StageTimeline``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scenarios.sim.step.pipeline import PHASE_CODES, PipelineSchedule, StageTimeline, simulate_schedule

__all__ = ["OpTimes", "stage_timeline"]

#: Gaps shorter than this fraction of the step are rounding (two paths to the same instant
#: summed in a different order), not bubbles; they are dropped from the timeline.
_GAP_TOLERANCE = 1e-12


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
