"""Results of the failure simulation: per-block partial sums, their exact merge, the summary.

A block's sums are computed with ``math.fsum`` (exactly rounded, so independent of how the
block's trials were laid out in memory) and the merge adds block sums in block order, so any
split of the blocks into chunks merges to the same numbers bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from scenarios.sim.failures.engine import BLOCK_TRIALS
from scenarios.sim.failures.model import CATEGORIES
from scenarios.sim.failures.setup import closed_form_etr

__all__ = ["BADPUT_KEYS", "FailureResult", "block_summary", "merge_failure_chunks"]

#: Wall-clock seconds that are not goodput, by cause (they sum with goodput to the wall time).
BADPUT_KEYS = (
    "rework",
    "detection",
    "restart",
    "reload",
    "checkpoint",
    "spare_wait",
    "degraded_slowdown",
    "planned_maintenance",
)
INTERRUPTION_CATEGORIES = tuple(c for c in CATEGORIES if c != "planned")
#: The closed form and the simulation agree within this ETTR difference (1 point) in its regime
#: (exponential failures, spares at hand, no degraded running); beyond it the run says so.
CLOSED_FORM_TOLERANCE = 0.01


def _badput(lanes) -> dict[str, np.ndarray]:
    return {
        "rework": lanes.rework_s,
        "detection": lanes.detection_s,
        "restart": lanes.restart_s,
        "reload": lanes.reload_s,
        "checkpoint": lanes.save_s,
        "spare_wait": lanes.wait_s,
        "degraded_slowdown": lanes.slowdown_s,
        "planned_maintenance": lanes.planned_s,
    }


def _fsum(values: np.ndarray) -> float:
    return math.fsum(np.asarray(values, dtype=float).tolist())


def block_summary(lanes, index: int, main: slice, sweep_ids: np.ndarray, position: int) -> dict[str, Any]:
    """One block's partial result.

    Parameters
    ----------
    lanes : LaneResults
    index : int
        Block index in the run.
    main : slice
        The block's main lanes.
    sweep_ids : ndarray (intervals, S)
        Its sweep lanes, one row per swept interval.
    position : int
        Row of the block in ``lanes.rack_counts``.
    """
    sums = {key: _fsum(values[main]) for key, values in _badput(lanes).items()}
    for key, values in (
        ("wall_s", lanes.wall_s),
        ("goodput_s", lanes.goodput_s),
        ("etr", lanes.etr),
        ("goodput_fraction", lanes.goodput_fraction),
    ):
        sums[key] = _fsum(values[main])
    counts = {
        name: int(lanes.category_counts[main, CATEGORIES.index(name)].sum())
        for name in INTERRUPTION_CATEGORIES
    }
    counts["planned"] = int(lanes.planned_count[main].sum())
    counts["degradations"] = int(lanes.degrade_count[main].sum())
    counts["feed_faults_absorbed"] = int(lanes.absorbed_count[main].sum())
    counts["unfinished"] = int(lanes.stalled[main].sum())
    return {
        "index": int(index),
        "trials": int(main.stop - main.start),
        "sums": sums,
        "counts": counts,
        "wall_s": lanes.wall_s[main].tolist(),
        "etr": lanes.etr[main].tolist(),
        "sweep_trials": int(sweep_ids.shape[1]),
        "sweep_etr": [_fsum(lanes.etr[row]) for row in sweep_ids],
        "sweep_goodput": [_fsum(lanes.goodput_fraction[row]) for row in sweep_ids],
        "rack_failures": lanes.rack_counts[position].tolist(),
    }


@dataclass(frozen=True)
class FailureResult:
    """What a failure run reports (``to_dict`` is what ``simulate --failures --json`` prints).

    Attributes
    ----------
    meta : dict
        Resolved inputs: mode, trials, step time, save/reload times, intervals, rates.
    etr, goodput : float
        Mean over trials of ETTR (time computing steps that were kept, slow steps included,
        over wall time) and of goodput (kept work at the nominal step time over wall time).
    closed_form_etr : float
        Daly's closed-form estimate at the run's interval (setup.closed_form_etr).
    wall_time_s, etr_per_trial : ndarray (trials,)
    badput_s : dict
        Mean seconds per trial by cause (``BADPUT_KEYS``); with ``goodput_s`` they sum to
        the mean wall time.
    interruptions : dict
        Mean per trial: ``total`` and ``by_category`` (unexpected stops), ``planned``,
        ``degradations`` (spine/core/link faults), ``feed_faults_absorbed``.
    sweep : list of dict
        ETTR and goodput against the checkpoint interval (first trials of every block).
    rack_failures : ndarray (R,)
        Mean failures per trial attributed to each rack (racks as the fabric numbers them).
    representative_trial : int
        The trial whose wall time (window: productive time) is nearest the median.
    event_log : list of dict or None
    warnings : tuple of str
    """

    meta: dict[str, Any]
    trials: int
    etr: float
    goodput: float
    closed_form_etr: float
    wall_time_s: np.ndarray
    etr_per_trial: np.ndarray
    badput_s: dict[str, float]
    goodput_s: float
    interruptions: dict[str, Any]
    sweep: list[dict[str, float]]
    rack_failures: np.ndarray
    representative_trial: int
    blocks: tuple[int, ...]
    event_log: list[dict] | None = None
    warnings: tuple[str, ...] = field(default=())

    def with_event_log(self, log: list[dict]) -> FailureResult:
        return replace(self, event_log=list(log))

    @property
    def productive_s(self) -> np.ndarray:
        """Per-trial time spent computing kept steps (s): ETTR times the wall time."""
        return self.etr_per_trial * self.wall_time_s

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (plain numbers, short lists, the event log)."""
        meta = self.meta
        best = max(self.sweep, key=lambda row: row["etr"]) if self.sweep else None
        out = {
            "mode": meta["mode"],
            "trials": self.trials,
            "seed": meta["seed"],
            "window_days": meta["window_days"],
            "etr": self.etr,
            "goodput": self.goodput,
            "closed_form_etr": self.closed_form_etr,
            "wall_time_days": _distribution(self.wall_time_s / 86_400.0),
            "interruptions": self.interruptions,
            "mttf_hours": _hours(1.0 / meta["stop_rate_per_s"]) if meta["stop_rate_per_s"] > 0 else None,
            "checkpoint_interval_min": meta["interval_s"] / 60.0,
            "optimal_checkpoint_interval_min": meta["optimal_s"] / 60.0,
            "best_swept_interval_min": best["interval_min"] if best else None,
            "checkpoint_sweep": self.sweep,
            "badput": dict(self.badput_s),
            "goodput_s": self.goodput_s,
            "recovery_s": {
                "detection": meta["detection_s"],
                "restart": meta["restart_s"],
                "reload": meta["reload_s"],
                "save": meta["save_s"],
            },
            "spare_pool": meta["spare_pool"],
            "rack_failures": self.rack_failures.tolist(),
            "representative_trial": self.representative_trial,
            "event_log": self.event_log,
            "warnings": list(self.warnings),
        }
        if meta["mode"] == "window":
            out["productive_days"] = _distribution(self.productive_s / 86_400.0)
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """The large per-trial and per-rack arrays (for storage as run arrays)."""
        return {
            "wall_time_s": self.wall_time_s,
            "etr": self.etr_per_trial,
            "rack_failures": self.rack_failures,
        }


def _hours(seconds: float) -> float:
    return seconds / 3600.0


def _distribution(values: np.ndarray) -> dict[str, float]:
    p5, p50, p95 = np.percentile(values, [5, 50, 95])
    return {"p5": float(p5), "p50": float(p50), "p95": float(p95), "mean": _fsum(values) / values.size}


def merge_failure_chunks(chunks: list[dict[str, Any]]) -> FailureResult:
    """Merge partial results (``run_failure_chunk``) into one result, exactly.

    Raises
    ------
    ValueError
        When the chunks come from different runs or repeat a block.
    """
    meta, blocks = _merged_blocks(chunks)
    indices = [block["index"] for block in blocks]
    trials = sum(block["trials"] for block in blocks)
    mean = {key: math.fsum(b["sums"][key] for b in blocks) / trials for key in blocks[0]["sums"]}
    counts = {key: sum(b["counts"][key] for b in blocks) / trials for key in blocks[0]["counts"]}
    wall = np.array([value for b in blocks for value in b["wall_s"]])
    etr = np.array([value for b in blocks for value in b["etr"]])
    rack = np.sum([np.asarray(b["rack_failures"], np.int64) for b in blocks], axis=0) / trials
    closed_etr = _closed_form(meta, meta["interval_s"])
    interruptions = _interruptions(counts, trials)
    key = etr * wall if meta["mode"] == "window" else wall
    representative = int(indices_of_trials(blocks)[int(np.argmin(np.abs(key - np.median(key))))])
    return FailureResult(
        meta=meta,
        trials=trials,
        etr=mean["etr"],
        goodput=mean["goodput_fraction"],
        closed_form_etr=closed_etr,
        wall_time_s=wall,
        etr_per_trial=etr,
        badput_s={k: mean[k] for k in BADPUT_KEYS},
        goodput_s=mean["goodput_s"],
        interruptions=interruptions,
        sweep=_sweep(meta, blocks),
        rack_failures=rack,
        representative_trial=representative,
        blocks=tuple(indices),
        warnings=_warnings(mean["etr"], closed_etr, interruptions, meta),
    )


def _merged_blocks(chunks: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The chunks' common meta and their blocks in block order (``ValueError`` when the chunks
    come from different runs or repeat a block)."""
    if not chunks:
        raise ValueError("chunks: nothing to merge")
    meta = chunks[0]["meta"]
    if any(chunk["meta"] != meta for chunk in chunks[1:]):
        raise ValueError("chunks: they come from different runs (their inputs differ)")
    blocks = sorted((block for chunk in chunks for block in chunk["blocks"]), key=lambda b: b["index"])
    indices = [block["index"] for block in blocks]
    if len(set(indices)) != len(indices):
        raise ValueError("chunks: a block appears twice")
    return meta, blocks


def _closed_form(meta: dict[str, Any], interval_s: float) -> float:
    """The closed-form ETTR of the run's rates and recovery at one checkpoint interval."""
    return closed_form_etr(
        stop_rate_per_s=meta["stop_rate_per_s"],
        planned_rate_per_s=meta["planned_rate_per_s"],
        interval_s=interval_s,
        async_save=meta["async_save"],
        **{k: meta[k] for k in ("detection_s", "restart_s", "reload_s", "save_s")},
    )


def _sweep(meta: dict[str, Any], blocks: list[dict[str, Any]]) -> list[dict[str, float]]:
    """ETTR and goodput at each interval of the checkpoint sweep, simulated and closed form."""
    sweep_trials = sum(b["sweep_trials"] for b in blocks)
    return [
        {
            "interval_min": interval / 60.0,
            "etr": math.fsum(b["sweep_etr"][j] for b in blocks) / sweep_trials,
            "goodput": math.fsum(b["sweep_goodput"][j] for b in blocks) / sweep_trials,
            "closed_form_etr": _closed_form(meta, interval),
        }
        for j, interval in enumerate(meta["sweep_s"])
    ]


def _interruptions(counts: dict[str, float], trials: int) -> dict[str, Any]:
    """Mean interruptions per trial by category, and the trials that could not finish."""
    by_category = {name: counts[name] for name in INTERRUPTION_CATEGORIES}
    return {
        "total": sum(by_category.values()),
        "by_category": by_category,
        "planned": counts["planned"],
        "degradations": counts["degradations"],
        "feed_faults_absorbed": counts["feed_faults_absorbed"],
        "unfinished_trials": round(counts["unfinished"] * trials),
    }


def indices_of_trials(blocks: list[dict[str, Any]]) -> np.ndarray:
    """Global trial index of every per-trial value, in merge order."""
    return np.concatenate([b["index"] * BLOCK_TRIALS + np.arange(b["trials"]) for b in blocks])


def _warnings(
    etr: float, closed: float, interruptions: dict[str, Any], meta: dict[str, Any]
) -> tuple[str, ...]:
    out = []
    if abs(etr - closed) > CLOSED_FORM_TOLERANCE:
        out.append(
            f"closed form: its ETTR {closed:.3f} differs from the simulated {etr:.3f} by more than "
            f"{CLOSED_FORM_TOLERANCE * 100:.0f} point: the run is outside its regime (waits for spare "
            "servers, slow steps on a degraded fabric or events it leaves out dominate)"
        )
    unfinished = interruptions["unfinished_trials"]
    if unfinished:
        out.append(
            f"unfinished: {unfinished} trial(s) could not finish the job (no server left to restart on, "
            f"or ETTR below 10%); their wall time is capped at {meta['horizon_s'] / 86_400.0:.1f} days"
        )
    return tuple(out)
