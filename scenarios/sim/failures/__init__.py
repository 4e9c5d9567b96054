"""Failures, recovery and checkpointing of a large training job: Monte Carlo and closed form.

A job on ``N`` servers is interrupted by hardware faults of the components it uses (catalog
hazards, blast radius from the topology: ``failures_model``) and by a per-job non-hardware
process (software, unplanned maintenance), and pauses for planned maintenance. Each stop costs
detection, a wait for spares when the pool is empty, restart, checkpoint reload and the work
since the last durable checkpoint; spine, core and switch-to-switch link faults instead slow the
job to the step time the caller computed on the degraded fabric. The model, its sources and the
calibration to Llama 3 are in ``docs/failure-model.md``.

Public API::

    model = failure_components(plan, fabric, job_nodes, catalog)
    result = simulate_failures(model, spec, step_time_s=..., degraded_step_time_s=...,
                               steps=..., checkpoint=checkpoint_size(job))
    result.to_dict()

Trials come in blocks of ``BLOCK_TRIALS``; block ``i`` draws from
``SeedSequence(seed).spawn(n)[i]`` (= ``SeedSequence(seed, spawn_key=(i,))``), so any range of
blocks can run anywhere (``run_failure_chunk``) and ``merge_failure_chunks`` of the pieces equals
one run of them all, bit for bit.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scenarios.sim.failures.engine import BLOCK_TRIALS, LanePlan, simulate_lanes
from scenarios.sim.failures.job import CheckpointSize, checkpoint_size, degraded_fabric
from scenarios.sim.failures.model import FailureModel, failure_components
from scenarios.sim.failures.result import FailureResult, block_summary, merge_failure_chunks
from scenarios.sim.failures.setup import (
    InjectedEvent,
    closed_form_etr,
    injected_arrays,
    optimal_interval_s,
    resolve_run,
)
from scenarios.sim.format.errors import ScenarioError
from scenarios.sim.format.failures import FailureSpec, parse_failures
from scenarios.sim.format.scenario import JobSpec

__all__ = [
    "BLOCK_TRIALS",
    "CheckpointSize",
    "FailureModel",
    "FailureResult",
    "FailureSpec",
    "InjectedEvent",
    "attach_event_log",
    "block_generator",
    "checkpoint_size",
    "closed_form_etr",
    "degraded_fabric",
    "failure_blocks",
    "failure_components",
    "job_work_seconds",
    "merge_failure_chunks",
    "optimal_interval_s",
    "parse_failures",
    "run_failure_chunk",
    "simulate_failures",
    "split_blocks",
    "trial_event_log",
]

#: Lanes of the checkpoint sweep in all (160 trials at each of its usual 7 intervals, fewer per
#: interval when the sweep also reaches a fixed interval far from the optimum); its trials are
#: spread evenly over the blocks (the first ones of each; common random numbers: the same event
#: streams as their main lanes).
SWEEP_LANES = 160 * 7


def job_work_seconds(spec: FailureSpec, job: JobSpec | None, step_time_s: float) -> float | None:
    """Failure-free compute time of the job: ``failures.steps``, else ``job.tokens`` (None in
    window mode).

    Raises
    ------
    ScenarioError
        When neither gives the job's length and no ``window_days`` is set.
    """
    if spec.window_days is not None:
        return None
    if spec.steps is not None:
        return spec.steps * step_time_s
    if job is not None and job.tokens:
        return job.tokens / (job.global_batch * job.model.seq_len) * step_time_s
    raise ScenarioError("failures.steps: required when the job gives no tokens and no window_days is set")


def failure_blocks(spec: FailureSpec) -> int:
    """Number of trial blocks of a run (the finest split of its work)."""
    return -(-spec.trials // BLOCK_TRIALS)


def split_blocks(n_blocks: int, n_chunks: int) -> list[range]:
    """Contiguous ranges of blocks, as even as possible (at most ``n_blocks`` chunks)."""
    n_chunks = max(1, min(n_chunks, n_blocks))
    edges = np.linspace(0, n_blocks, n_chunks + 1).round().astype(int)
    return [range(int(a), int(b)) for a, b in itertools.pairwise(edges) if b > a]


def block_generator(seed: int, index: int) -> np.random.Generator:
    """Generator of block ``index``: child ``index`` of ``SeedSequence(seed).spawn(...)``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(index,))))


# --- runs, chunks and merging -------------------------------------------------------------------


def run_failure_chunk(
    model: FailureModel,
    spec: FailureSpec,
    *,
    blocks: Iterable[int],
    injected: Sequence | None = None,
    log_trial: int | None = None,
    on_progress: Callable[[float, str], None] | None = None,
    resolved=None,
    **job,
) -> dict[str, Any]:
    """Simulate some blocks of trials; the JSON-able partial result ``merge_failure_chunks`` reads.

    Parameters
    ----------
    model : FailureModel
    spec : FailureSpec
    blocks : iterable of int
        Block indices, each in ``0 .. failure_blocks(spec) - 1``.
    injected : sequence of InjectedEvent, or one such sequence per trial, optional
        Replace the random failures by this schedule.
    log_trial : int, optional
        Global trial index whose event log to record (it must lie in ``blocks``).
    on_progress : callable(fraction, message), optional
    resolved : RunSetup, optional
        ``resolve_run(model, spec, **job)``, when the caller already has it.
    **job
        The job's inputs, the keyword arguments of ``setup.resolve_run``:

        step_time_s : float
            Failure-free step time (s), ``predict(...).step_time_s``.
        degraded_step_time_s : float or mapping, optional
            Step time with one spine / core / switch-to-switch link lost (``predict`` on
            ``degraded_fabric(fabric, kind)``); a float applies to all three; None: no slowdown.
        job_work_s, steps : optional
            Job length as failure-free compute seconds or steps (else ``spec.steps``); ignored
            with ``window_days``.
        checkpoint : CheckpointSize, optional
            State size (``checkpoint_size(job)``) for the save and reload times the spec omits.

    Returns
    -------
    dict
        ``{"meta": {...}, "blocks": [...]}`` (plain numbers and lists).
    """
    setup = resolved or resolve_run(model, spec, **job)
    blocks = _check_blocks(spec, blocks)
    lanes_of = _ChunkLanes.of(spec, setup, blocks)
    local_log = _local_log_trial(log_trial, blocks, lanes_of.first_trial)
    generators, schedule = _sources(model, spec, setup, blocks, injected, lanes_of.n_trials)
    lanes = simulate_lanes(
        setup.config,
        lanes_of.plan,
        generators=generators,
        injected=schedule,
        log_trial=local_log,
        on_progress=on_progress,
    )
    chunk = {"meta": setup.meta, "blocks": lanes_of.summaries(lanes, blocks)}
    if local_log is not None:
        chunk["event_log"] = lanes.log
        chunk["log_trial"] = int(log_trial)
    return chunk


@dataclass(frozen=True)
class _ChunkLanes:
    """The lanes of a chunk: every trial of its blocks at the run's checkpoint interval, then
    the first trials of each block again at each interval of the checkpoint sweep."""

    block_trials: list[int]  # trials of each block
    first_trial: np.ndarray  # chunk-local index of each block's first trial
    n_trials: int
    sweep_lanes: list[np.ndarray]  # per block, the chunk-local trials the sweep repeats
    n_sweep: int  # intervals of the sweep
    lane_trial: np.ndarray  # trial of every lane
    lane_tau_s: np.ndarray  # checkpoint interval of every lane

    @classmethod
    def of(cls, spec: FailureSpec, setup, blocks: list[int]) -> _ChunkLanes:
        block_trials = [min(BLOCK_TRIALS, spec.trials - b * BLOCK_TRIALS) for b in blocks]
        first_trial = np.concatenate([[0], np.cumsum(block_trials)])[:-1].astype(int)
        n_trials = int(sum(block_trials))
        n_sweep = len(setup.sweep_s)
        per_block = -(-(SWEEP_LANES // n_sweep) // failure_blocks(spec))
        sweep_lanes = [
            first + np.arange(min(per_block, count))
            for first, count in zip(first_trial, block_trials, strict=True)
        ]
        sweep_trials = np.concatenate(sweep_lanes)
        return cls(
            block_trials=block_trials,
            first_trial=first_trial,
            n_trials=n_trials,
            sweep_lanes=sweep_lanes,
            n_sweep=n_sweep,
            lane_trial=np.concatenate([np.arange(n_trials), np.tile(sweep_trials, n_sweep)]),
            lane_tau_s=np.concatenate(
                [np.full(n_trials, setup.interval_s), np.repeat(setup.sweep_s, sweep_trials.size)]
            ),
        )

    @property
    def plan(self) -> LanePlan:
        return LanePlan(
            block_trials=self.block_trials,
            lane_trial=self.lane_trial,
            lane_tau_s=self.lane_tau_s,
            main_lanes=self.n_trials,
        )

    def summaries(self, lanes, blocks: list[int]) -> list[dict[str, Any]]:
        """Each block's summary (``block_summary``) from the simulated lanes."""
        sweep_size = sum(part.size for part in self.sweep_lanes)
        sweep_offsets = np.concatenate([[0], np.cumsum([part.size for part in self.sweep_lanes])])
        out = []
        for i, (b, first, count) in enumerate(zip(blocks, self.first_trial, self.block_trials, strict=True)):
            within = sweep_offsets[i] + np.arange(self.sweep_lanes[i].size)
            sweep_ids = self.n_trials + np.arange(self.n_sweep)[:, None] * sweep_size + within[None, :]
            out.append(block_summary(lanes, b, slice(int(first), int(first + count)), sweep_ids, i))
        return out


def _local_log_trial(log_trial: int | None, blocks: list[int], first_trial: np.ndarray) -> int | None:
    """The chunk-local lane of the global trial ``log_trial`` (None when no log is wanted)."""
    if log_trial is None:
        return None
    block, offset = divmod(int(log_trial), BLOCK_TRIALS)
    if block not in blocks:
        raise ScenarioError(f"log_trial: trial {log_trial} is not in blocks {blocks}")
    return int(first_trial[blocks.index(block)] + offset)


def _check_blocks(spec: FailureSpec, blocks: Iterable[int]) -> list[int]:
    blocks = sorted({int(b) for b in blocks})
    n_blocks = failure_blocks(spec)
    if not blocks or blocks[0] < 0 or blocks[-1] >= n_blocks:
        raise ScenarioError(f"blocks: must be indices from 0 to {n_blocks - 1} (got {blocks})")
    return blocks


def _sources(model, spec, setup, blocks, injected, n_trials):
    """Random generators of the blocks, or the injected schedule."""
    if injected is not None:
        return None, injected_arrays(model, setup.config, injected, n_trials)
    return [block_generator(spec.seed, b) for b in blocks], None


def trial_event_log(
    model: FailureModel,
    spec: FailureSpec,
    trial: int,
    *,
    injected: Sequence | None = None,
    resolved=None,
    **job,
) -> list[dict]:
    """The event log of one trial, re-simulated alone (a trial's events, spares, feeds and
    lemons depend only on its own stream, so it comes out exactly as in the full run).

    Parameters are those of :func:`run_failure_chunk`; ``trial`` is a global trial index.

    Returns
    -------
    list of dict
        time_s, kind, component, rack, category, effect, downtime_s, degraded_s, spares_left,
        lemon per event.
    """
    setup = resolved or resolve_run(model, spec, **job)
    block, offset = divmod(int(trial), BLOCK_TRIALS)
    (block,) = _check_blocks(spec, [block])
    count = min(BLOCK_TRIALS, spec.trials - block * BLOCK_TRIALS)
    if injected is not None:
        schedules = list(injected)
        if schedules and not isinstance(schedules[0], InjectedEvent):
            injected = schedules[trial]
    generators, schedule = _sources(model, spec, setup, [block], injected, 1)
    plan = LanePlan(
        block_trials=[count],
        lane_trial=np.zeros(1, np.int64),
        lane_tau_s=np.full(1, setup.interval_s),
        main_lanes=1,
        columns=None if injected is not None else np.array([offset]),
    )
    lanes = simulate_lanes(setup.config, plan, generators=generators, injected=schedule, log_trial=0)
    return lanes.log


def simulate_failures(
    model: FailureModel,
    spec: FailureSpec,
    *,
    blocks: Iterable[int] | None = None,
    injected: Sequence | None = None,
    on_progress: Callable[[float, str], None] | None = None,
    **job,
) -> FailureResult:
    """Monte Carlo of the job under failures: every block (or ``blocks``), merged, with the event
    log of the trial nearest the median.

    Parameters are those of :func:`run_failure_chunk` (``**job``: the job's inputs of
    ``resolve_run``: step_time_s, degraded_step_time_s, job_work_s, steps, checkpoint).

    Returns
    -------
    FailureResult
    """
    blocks = range(failure_blocks(spec)) if blocks is None else blocks
    setup = resolve_run(model, spec, **job)
    chunk = run_failure_chunk(
        model, spec, blocks=blocks, injected=injected, on_progress=on_progress, resolved=setup, **job
    )
    result = merge_failure_chunks([chunk])
    log = trial_event_log(model, spec, result.representative_trial, injected=injected, resolved=setup, **job)
    return result.with_event_log(log)


def attach_event_log(
    result: FailureResult, model: FailureModel, spec: FailureSpec, **kwargs
) -> FailureResult:
    """``result`` with the event log of its representative trial (re-simulated alone).

    ``kwargs`` are the keyword arguments the run was made with (step times, job length,
    checkpoint, injected).
    """
    return result.with_event_log(trial_event_log(model, spec, result.representative_trial, **kwargs))
