"""The failure simulation's engine: one loop over event order, vectorized over trials and lanes.

Each trial draws one stream of failure events in wall-clock time (a Poisson process over every
hazard class, or a Weibull renewal process with the same mean): event ``k`` of every trial is
processed at once. What an event does to the cluster (spare pool, degraded fabric, feeds,
lemon nodes) depends only on the stream, so it is computed once per trial; what it costs the
job depends on the checkpoint policy, so it is applied to every *lane*: the trial's main lane
and, for the first trials of each block, one lane per interval of the checkpoint sweep
(common random numbers make the sweep's curve smooth).

Between two events a lane runs a closed-form checkpoint cycle (compute ``tau`` of work at rate
``rho``, then a blocking pause, or an asynchronous save whose checkpoint only counts once it has
finished), split where a degraded fabric is repaired. Nothing here loops over trials, lanes,
components or GPUs; the only loops are over events, over a few fixed pieces of one interval and
over the blocks when random numbers are drawn (one generator per block).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from scenarios.sim.failures.cluster import (
    DEGRADE,
    E_ABSORBED,
    E_DEGRADE,
    E_PLANNED,
    E_STOP,
    FEED,
    LEMON,
    NONE,
    PLANNED,
    STOP,
    STOP_REMOVE,
    ClusterState,
)
from scenarios.sim.failures.stream import BLOCK_TRIALS, EventStream

#: The progress callback is called every ``PROGRESS_EVENTS`` events per trial, and after any
#: event once ``PROGRESS_INTERVAL_S`` passed since the last call (one event is one vectorized
#: step over every lane: tens of milliseconds for 100k trials), so a callback raising
#: ``Cancelled`` stops even a large Monte Carlo within a fraction of a second.
PROGRESS_EVENTS = 8
PROGRESS_INTERVAL_S = 0.1

__all__ = [
    "BLOCK_TRIALS",
    "DEGRADE",
    "FEED",
    "LEMON",
    "PLANNED",
    "STOP",
    "STOP_REMOVE",
    "EngineConfig",
    "LanePlan",
    "LaneResults",
    "simulate_lanes",
]

EFFECT_NAMES = ("none", "stop", "planned", "degrade", "absorbed")


@dataclass(frozen=True, eq=False)
class EngineConfig:
    """Everything the engine needs, resolved from the model, the spec and the step times.

    Shapes: C classes, M members, N job servers, R racks, F feeds (K racks per feed at most),
    L lemon slots. Times are seconds, rates per second.
    """

    class_rate: np.ndarray  # (C,) per member
    class_count: np.ndarray  # (C,)
    class_offset: np.ndarray  # (C,)
    class_effect: np.ndarray  # (C,) engine codes
    class_kind: np.ndarray  # (C,) index into kind_names
    class_category: np.ndarray  # (C,) index into category_names
    class_repair_s: np.ndarray  # (C,) time until the removed part (and servers) return
    class_degrade_slot: np.ndarray  # (C,) -1 or index into the 3 degrade kinds
    class_server_hw: np.ndarray  # (C,) bool: counts towards a lemon's failures
    kind_names: tuple[str, ...]
    category_names: tuple[str, ...]
    member_component: np.ndarray  # (M,)
    member_rack: np.ndarray  # (M,)
    member_slot: np.ndarray  # (M,)
    member_removes: np.ndarray  # (M,)
    member_feed: np.ndarray  # (M,)
    job_nodes: np.ndarray  # (N,)
    node_rack: np.ndarray  # (N,)
    gpus_per_server: int
    nics_per_server: int
    feed_racks: np.ndarray  # (F, K)
    rack_n_feeds: np.ndarray  # (R,)
    rack_removes: np.ndarray  # (R,)
    rack_degrades: np.ndarray  # (R, 3)
    feed_repair_s: float
    n_racks: int
    spare_pool: int
    lemon_slots: int
    lemon_stride: int
    lemon_remove_after: int
    lemon_kind_cum: np.ndarray  # (5,) cumulative per-server hazard of gpu, hbm, host, nic, psu
    lemon_kind_codes: np.ndarray  # (5,) kind index of each
    lemon_kind_category: np.ndarray  # (5,)
    server_repair_s: float
    detection_s: float
    restart_s: float
    reload_s: float
    save_s: float
    async_save: bool
    rho_slot: np.ndarray  # (3,) progress rate with that kind degraded (1 = no slowdown)
    work_s: float | None  # failure-free compute time of the job (None: window mode)
    horizon_s: float  # the window, or the cap after which a trial is reported unfinished
    sweep_horizon_s: float  # sweep lanes measure ETTR over this window (never "finish")
    weibull_shape: float


@dataclass
class LaneResults:
    """Per-lane outcomes (seconds; counts per category index)."""

    wall_s: np.ndarray
    goodput_s: np.ndarray
    compute_s: np.ndarray
    rework_s: np.ndarray
    save_s: np.ndarray
    detection_s: np.ndarray
    wait_s: np.ndarray
    restart_s: np.ndarray
    reload_s: np.ndarray
    planned_s: np.ndarray
    category_counts: np.ndarray  # (lanes, categories)
    planned_count: np.ndarray
    degrade_count: np.ndarray
    absorbed_count: np.ndarray
    stalled: np.ndarray
    rack_counts: np.ndarray  # (blocks, R) failures under each block's main lanes
    log: list[dict]

    @property
    def slowdown_s(self) -> np.ndarray:
        return np.maximum(self.compute_s - self.rework_s - self.goodput_s, 0.0)

    @property
    def etr(self) -> np.ndarray:
        return (self.compute_s - self.rework_s) / self.wall_s

    @property
    def goodput_fraction(self) -> np.ndarray:
        return self.goodput_s / self.wall_s


@dataclass(frozen=True)
class LanePlan:
    """What lanes a simulation runs (a lane is one trial at one checkpoint interval).

    Attributes
    ----------
    block_trials : list of int
        Trials of each block, in order; trials are numbered block after block.
    lane_trial : ndarray (lanes,) int
        The trial whose event stream each lane follows.
    lane_tau_s : ndarray (lanes,)
        Checkpoint interval of each lane (failure-free compute seconds between checkpoints).
    main_lanes : int
        Lanes ``0 .. main_lanes - 1`` are the trials' main lanes (lane i follows trial i); the
        others are sweep lanes, run over ``cfg.sweep_horizon_s`` (a window) in every mode.
    columns : ndarray of int, optional
        Simulate only these trials of the blocks (a trial's stream does not depend on the
        others), numbered as if all were present; ``lane_trial`` indexes into ``columns``.
    """

    block_trials: list[int]
    lane_trial: np.ndarray
    lane_tau_s: np.ndarray
    main_lanes: int
    columns: np.ndarray | None = None


def simulate_lanes(
    cfg: EngineConfig,
    plan: LanePlan,
    *,
    generators,
    injected=None,
    log_trial: int | None = None,
    on_progress: Callable[[float, str], None] | None = None,
) -> LaneResults:
    """Simulate every lane until it finishes the job (or its window ends).

    Parameters
    ----------
    cfg : EngineConfig
    plan : LanePlan
    generators : list of numpy.random.Generator, one per block (None with ``injected``)
    injected : (times (K, T), classes (K, T), members (K, T)), optional
        A fixed event schedule instead of random draws (tests); padding has class -1.
    log_trial : int, optional
        Record the event log of this trial's main lane.
    on_progress : callable(fraction, message), optional

    Returns
    -------
    LaneResults
    """
    return _Simulation(cfg, plan, generators, injected, log_trial).run(on_progress)


class _Simulation:
    """Lanes (policy x trial) advancing through their trials' shared event streams.

    Hot paths avoid boolean selects (``np.where`` or masked assignment with random masks cost
    an order of magnitude more than arithmetic here): masks enter as 0/1 floats and every lane
    quantity stays finite.
    """

    def __init__(self, cfg, plan: LanePlan, generators, injected, log_trial):
        block_trials, columns, main_lanes = plan.block_trials, plan.columns, plan.main_lanes
        lane_trial, lane_tau_s = plan.lane_trial, plan.lane_tau_s
        self.cfg = cfg
        self.stream = EventStream(cfg, generators, block_trials, injected, columns)
        self.block_of_trial = np.repeat(np.arange(len(block_trials)), block_trials)
        if columns is not None:
            self.block_of_trial = self.block_of_trial[columns]
        self.n_blocks = len(block_trials)
        self.lane_trial = np.asarray(lane_trial, np.int64)
        self.main_lanes = main_lanes
        self.log_trial = log_trial
        self.log: list[dict] = []
        n = self.lane_trial.size
        self.tau = np.asarray(lane_tau_s, float)
        self.pause_s = 0.0 if cfg.async_save else cfg.save_s
        # Stuck lanes (no server will ever come back) restart "after the end": finite, so that
        # arithmetic masks never meet inf.
        self.never_s = 2.0 * max(cfg.horizon_s, cfg.sweep_horizon_s) + 1.0
        main = np.arange(n) < main_lanes
        self.horizon = np.where(main, cfg.horizon_s, cfg.sweep_horizon_s)
        self.work = np.where(main & (cfg.work_s is not None), cfg.work_s or 0.0, np.inf)
        self.job_mode = np.isfinite(self.work)
        self.cluster = ClusterState(cfg, self.stream.lemon_offsets())
        self.rack_counts = np.zeros(self.n_blocks * cfg.n_racks, np.int64)
        # checkpoint cycle: work since the last checkpoint start, blocking save left, wall time
        # since that start (the checkpoint is durable once it reaches save_s), compute seconds
        # since that start and of the cycle before, total work
        self.u, self.pause = np.zeros(n), np.zeros(n)
        self.since = np.full(n, cfg.save_s)
        self.pend_cur, self.pend_prev, self.w = np.zeros(n), np.zeros(n), np.zeros(n)
        self.acc = {
            k: np.zeros(n)
            for k in ("compute", "save", "rework", "detection", "wait", "restart", "reload", "planned")
        }
        self.t_prev, self.restart_at = np.zeros(n), np.zeros(n)
        self.rec_start, self.rec_wait, self.rec_planned = np.zeros(n), np.zeros(n), np.zeros(n)
        self.down = np.zeros(n, bool)
        self.done = np.zeros(n, bool)
        self.stalled = np.zeros(n, bool)
        self.finish = np.full(n, np.nan)
        self.category_counts = np.zeros((n, len(cfg.category_names)), np.int64)
        self.counts = {k: np.zeros(n, np.int64) for k in ("planned", "degrade", "absorbed")}

    # ---- main loop ------------------------------------------------------------------------
    def run(self, on_progress) -> LaneResults:
        steps = 0
        called = time.monotonic()
        if on_progress is not None:  # a batch of events for 100k trials takes seconds to draw
            self.stream.on_draw = lambda: on_progress(
                float(self.done.mean()), f"drawing events after {steps}"
            )
        while not self.done.all():
            event = self.stream.next()
            lane_t = np.minimum(event["t"], self.never_s)[self.lane_trial]  # none left: "after the end"
            self._advance_lanes(lane_t)
            record = self._events(event)
            self._apply(record, lane_t)
            steps += 1
            if on_progress is not None and (
                steps % PROGRESS_EVENTS == 0 or time.monotonic() - called >= PROGRESS_INTERVAL_S
            ):
                on_progress(float(self.done.mean()), f"{steps} events per trial")
                called = time.monotonic()
        return self._results()

    def _results(self) -> LaneResults:
        cfg = self.cfg
        wall = np.where(np.isnan(self.finish), self.horizon, self.finish)
        goodput = np.where(self.job_mode & ~self.stalled, self.work, self.w)
        return LaneResults(
            wall_s=wall,
            goodput_s=goodput,
            compute_s=self.acc["compute"],
            rework_s=self.acc["rework"],
            save_s=self.acc["save"],
            detection_s=self.acc["detection"],
            wait_s=self.acc["wait"],
            restart_s=self.acc["restart"],
            reload_s=self.acc["reload"],
            planned_s=self.acc["planned"],
            category_counts=self.category_counts,
            planned_count=self.counts["planned"],
            degrade_count=self.counts["degrade"],
            absorbed_count=self.counts["absorbed"],
            stalled=self.stalled,
            rack_counts=self.rack_counts.reshape(self.n_blocks, cfg.n_racks),
            log=self.log,
        )

    # ---- lanes: time passing ----------------------------------------------------------------
    def _advance_lanes(self, lane_t: np.ndarray) -> None:
        """Run every lane from its previous event to ``lane_t`` (or the horizon)."""
        active = ~self.done
        end = np.minimum(lane_t, self.horizon)
        resumed = active & self.down & (self.restart_at <= end)
        if resumed.any():
            self._close_recovery(resumed, self.restart_at)
            self.down &= ~resumed
        up = active & ~self.down
        start = np.maximum(self.t_prev, self.restart_at)
        deg = self.cluster.deg_until
        latest = np.maximum(np.maximum(deg[0], deg[1]), deg[2])[self.lane_trial]
        hot = np.flatnonzero(up & (latest > start))  # lanes whose fabric is degraded in this interval
        rho = np.ones(start.size)
        first_end = end
        if hot.size:
            du = deg[:, self.lane_trial[hot]]  # (3, H)
            rho[hot] = self._rho(du, start[hot])
            inside = (du > start[hot]) & (du < end[hot])
            first_end = end.copy()
            first_end[hot] = np.min(np.where(inside, du, end[hot]), axis=0)
        self._advance(None, start, up * (first_end - start), rho, up)
        if hot.size:
            self._advance_repaired_pieces(hot, du, inside, end)
        over = active & ~self.done & (lane_t >= self.horizon)
        if over.any():
            still_down = over & self.down
            if still_down.any():
                self._close_recovery(still_down, self.horizon)
            self.done |= over
            self.stalled |= over & self.job_mode
        self.t_prev = np.maximum(self.t_prev, end * active)

    def _advance_repaired_pieces(self, hot, du, inside, end) -> None:
        """The degraded lanes ``hot`` whose parts come back before ``end``: run each piece
        between those repairs (the repairs in order, then ``end``) at its own progress rate."""
        n_inside = inside.sum(axis=0)
        split = n_inside > 0
        idx, du, n_inside = hot[split], du[:, split], n_inside[split]
        if not idx.size:
            return
        bounds = np.sort(np.where(inside[:, split], du, end[idx]), axis=0)
        bounds = np.concatenate([bounds, end[idx][None, :]], axis=0)
        for j in range(int(n_inside.max())):  # at most three repairs per interval
            pick = np.flatnonzero((n_inside > j) & ~self.done[idx])
            if pick.size == 0:
                break
            lanes, piece_start = idx[pick], bounds[j, pick]
            dt = bounds[j + 1, pick] - piece_start
            self._advance(lanes, piece_start, dt, self._rho(du[:, pick], piece_start), dt >= 0)

    def _rho(self, du: np.ndarray, at: np.ndarray) -> np.ndarray:
        """Progress rate (nominal / degraded step time) at ``at``; ``du`` (3, n) degraded-until."""
        rho = np.ones(at.size)
        for k, value in enumerate(self.cfg.rho_slot):
            if value < 1.0:
                rho = np.minimum(rho, 1.0 - (1.0 - value) * (du[k] > at))
        return rho

    def _advance(self, idx, start, dt, rho, live) -> None:
        """Run lanes ``idx`` (all when None) for ``dt`` wall seconds at progress rate ``rho``."""
        names = ("u", "pause", "since", "pend_cur", "pend_prev", "w")
        if idx is None:
            state = {k: getattr(self, k) for k in names}
            tau = self.tau
        else:
            state = {k: getattr(self, k)[idx] for k in names}
            tau = self.tau[idx]
        finished = None
        work = self.work if idx is None else self.work[idx]
        # Only a lane within dt of work from its end can finish (the rate is at most 1).
        near = np.flatnonzero(live & (work - state["w"] <= dt))
        if near.size:
            near_state = {k: v[near] for k, v in state.items()}
            need = _time_to_work(near_state, work[near], _at(rho, near), tau[near], self.pause_s)
            done_now = need <= dt[near]
            if done_now.any():
                finished = near[done_now]
                dt = dt.copy()
                dt[finished] = need[done_now]
        new, compute, save = _cycle(state, dt, rho, tau, self.pause_s)
        if idx is None:
            for k in names:
                setattr(self, k, new[k])
            self.acc["compute"] += compute
            self.acc["save"] += save
        else:
            for k in names:
                getattr(self, k)[idx] = new[k]
            self.acc["compute"][idx] += compute
            self.acc["save"][idx] += save
        if finished is not None:
            lanes = finished if idx is None else idx[finished]
            self.finish[lanes] = (start + dt)[finished]
            self.w[lanes] = self.work[lanes]
            self.done[lanes] = True

    # ---- trials: what an event does -------------------------------------------------------
    def _events(self, event: dict) -> dict:
        ev = self.cluster.process(event)
        cfg = self.cfg
        main_live = ~self.done[: self.main_lanes]
        counted = np.flatnonzero((ev["out"] != NONE) & (ev["rack"] >= 0) & main_live)
        if counted.size:
            keys = self.block_of_trial[counted] * cfg.n_racks + ev["rack"][counted]
            self.rack_counts += np.bincount(keys, minlength=self.rack_counts.size)
        return ev

    # ---- lanes: what an event costs ---------------------------------------------------------
    def _apply(self, ev: dict, lane_t: np.ndarray) -> None:
        out = ev["out"][self.lane_trial]
        live = ~self.done & (lane_t < self.horizon)
        stop = live & (out == E_STOP)
        planned = live & (out == E_PLANNED) & ~self.down
        if stop.any():
            self._stop(stop, lane_t, ev["ready"][self.lane_trial])
            lanes = np.flatnonzero(stop)
            flat = lanes * self.category_counts.shape[1] + ev["category"][self.lane_trial[lanes]]
            self.category_counts.ravel()[flat] += 1
        if planned.any():
            self._planned(planned, lane_t)
            self.counts["planned"] += planned
        self.counts["degrade"] += live & (out == E_DEGRADE)
        self.counts["absorbed"] += live & (out == E_ABSORBED)
        if self.log_trial is not None:
            i = self.log_trial
            if stop[i] or planned[i] or (live[i] and out[i] >= E_DEGRADE):
                self._log(ev, lane_t)

    def _reset_cycle(self, lanes_f: np.ndarray) -> None:
        """Lanes where ``lanes_f`` is 1 restart from a durable checkpoint (nothing pending)."""
        keep = 1.0 - lanes_f
        self.u *= keep
        self.pause *= keep
        self.pend_cur *= keep
        self.pend_prev *= keep
        self.since = self.since * keep + lanes_f * self.cfg.save_s

    def _stop(self, lanes, lane_t, ready) -> None:
        """An unexpected stop: roll back to the last durable checkpoint, plan the recovery."""
        cfg = self.cfg
        up = (lanes & ~self.down).astype(float)
        pending = (self.since < cfg.save_s).astype(float)  # the last checkpoint is not durable yet
        self.acc["rework"] += up * (self.pend_cur + pending * self.pend_prev)
        self.w -= up * (self.u + pending * self.tau)
        self._reset_cycle(up)
        was_down = lanes & self.down
        if was_down.any():
            self._close_recovery(was_down, lane_t)
        stuck = lanes & ~(ready < self.never_s)
        ready = np.minimum(ready, self.never_s)
        wait = np.maximum(ready - (lane_t + cfg.detection_s), 0.0)
        m = lanes.astype(float)
        self.rec_start += m * (lane_t - self.rec_start)
        self.rec_wait += m * (wait - self.rec_wait)
        self.rec_planned *= 1.0 - m
        total = cfg.detection_s + wait + cfg.restart_s + cfg.reload_s
        self.restart_at += m * (lane_t + total - self.restart_at)
        self.down |= lanes
        if stuck.any():
            self._close_recovery(stuck, self.horizon)
            self.done |= stuck
            self.stalled |= stuck

    def _planned(self, lanes, lane_t) -> None:
        """A planned stop: save (everything becomes durable), restart, reload."""
        cfg = self.cfg
        m = lanes.astype(float)
        self._reset_cycle(m)
        self.rec_start += m * (lane_t - self.rec_start)
        self.rec_wait *= 1.0 - m
        self.rec_planned += m * (1.0 - self.rec_planned)
        total = cfg.save_s + cfg.restart_s + cfg.reload_s
        self.restart_at += m * (lane_t + total - self.restart_at)
        self.down |= lanes

    def _close_recovery(self, lanes, until) -> None:
        """Book the part of each lane's recovery that has elapsed by ``until``."""
        cfg = self.cfg
        elapsed = lanes * np.maximum(np.minimum(until, self.restart_at) - self.rec_start, 0.0)
        planned = self.rec_planned * elapsed
        self.acc["planned"] += planned
        unplanned = elapsed - planned
        d, w, r = cfg.detection_s, self.rec_wait, cfg.restart_s
        self.acc["detection"] += np.minimum(unplanned, d)
        self.acc["wait"] += np.minimum(np.maximum(unplanned - d, 0.0), w)
        self.acc["restart"] += np.minimum(np.maximum(unplanned - d - w, 0.0), r)
        self.acc["reload"] += np.minimum(np.maximum(unplanned - d - w - r, 0.0), cfg.reload_s)

    def _log(self, ev: dict, lane_t: np.ndarray) -> None:
        cfg = self.cfg
        i = self.log_trial
        out = int(ev["out"][i])
        downtime = float(self.restart_at[i] - lane_t[i]) if out in (E_STOP, E_PLANNED) else 0.0
        cls, member = int(ev["cls"][i]), int(ev["member"][i])
        kind = int(ev["kind"][i]) if "kind" in ev else int(cfg.class_kind[cls])
        component = int(ev["component"][i]) if "component" in ev else int(cfg.member_component[member])
        self.log.append(
            {
                "time_s": float(lane_t[i]),
                "kind": cfg.kind_names[kind],
                "component": component,
                "rack": int(ev["rack"][i]),
                "category": cfg.category_names[int(ev["category"][i])],
                "effect": EFFECT_NAMES[out],
                "downtime_s": downtime,
                "degraded_s": float(ev["repair"][i]) if out == E_DEGRADE else 0.0,
                "spares_left": int(ev["spares_left"][i]) if out == E_STOP else None,
                "lemon": bool(ev["lemon"][i]) if "lemon" in ev else False,
            }
        )


def _at(values, index):
    """``values[index]`` for an array, the value itself for a scalar."""
    return values[index] if np.ndim(values) else values


def _time_to_work(st: dict, work_s, rho, tau, pause_s: float) -> np.ndarray:
    """Wall seconds each lane needs to reach ``work_s`` of total work from its cycle state.

    In "virtual time since the last checkpoint start" (pause first, then ``tau / rho`` of
    compute, period ``pause_s + tau / rho``) the job ends ``k`` whole cycles and a partial
    compute phase after that start.
    """
    target = st["u"] + (work_s - st["w"])
    k = np.maximum(np.ceil(target / tau) - 1.0, 0.0)
    finish = k * (pause_s + tau / rho) + pause_s + (target - k * tau) / rho
    return finish - (pause_s - st["pause"] + st["u"] / rho)


def _cycle(st: dict, dt, rho, tau, pause_s: float):
    """Advance the checkpoint cycle by ``dt`` wall seconds at progress rate ``rho`` (no selects).

    Position in the cycle is the virtual time since the last checkpoint start,
    ``s = pause_s - pause + u / rho`` (a blocking pause of ``pause_s``, then ``tau / rho`` of
    compute); ``n`` checkpoint starts are crossed on the way to ``s + dt``.

    Returns
    -------
    (state, compute_s, save_s) : the new state and the compute and pause seconds spent.
    """
    u, since = st["u"], st["since"]
    pend_cur, pend_prev = st["pend_cur"], st["pend_prev"]
    period = pause_s + tau / rho
    s1 = pause_s - st["pause"] + u / rho + dt
    n = np.floor(s1 / period)
    rem = s1 - n * period
    in_pause = np.minimum(rem, pause_s)
    u_new = (rem - in_pause) * rho
    work = n * tau + u_new - u
    compute = work / rho
    crossed = np.minimum(n, 1.0)
    crossed_twice = np.minimum(np.maximum(n - 1.0, 0.0), 1.0)
    closing = pend_cur + (tau - u) / rho  # compute of the cycle that ends at the first start
    state = {
        "u": u_new,
        "pause": pause_s - in_pause,
        "since": since + dt + crossed * (rem - since - dt),
        "pend_cur": pend_cur + compute + crossed * (u_new / rho - pend_cur - compute),
        "pend_prev": pend_prev + crossed * (closing - pend_prev) + crossed_twice * (tau / rho - closing),
        "w": st["w"] + work,
    }
    return state, compute, dt - compute
