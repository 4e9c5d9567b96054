"""Inputs of the power simulation: a design's racks, feeds and watts, and the job's timeline.

:func:`power_inputs` builds a frozen :class:`PowerInputs` from a ``FabricPlan``, its
``CompiledFabric``, the step's ``StageTimeline`` and the GPU's catalog entry;
:func:`check_power_inputs` validates one (also when a test builds it by hand).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scenarios.sim.format.power import (
    COMM_FRACTION,
    COMPUTE_FRACTION,
    OPTIMIZER_FRACTION,
    PSU_EFFICIENCY,
    RAMP_MS,
    SERVER_BUSY_FRACTION,
    SERVER_IDLE_FRACTION,
    STALL_FRACTION,
    WAIT_FRACTION,
    PowerError,
)
from scenarios.sim.power.feeds import feed_capacity_kw
from scenarios.sim.step.pipeline import PHASE_CODES, PHASE_KINDS

__all__ = ["PowerDraw", "PowerInputs", "check_power_inputs", "phase_levels_w", "power_inputs"]

_KIND_GROUPS = {
    "compute": ("forward", "backward"),
    "comm": ("comm", "dp"),
    "wait": ("pp_wait", "bubble", "straggler"),
    "optimizer": ("optimizer",),
}


def phase_levels_w(
    tdp_w: float,
    idle_w: float,
    *,
    compute_fraction: float = COMPUTE_FRACTION,
    comm_fraction: float = COMM_FRACTION,
    wait_fraction: float = WAIT_FRACTION,
    optimizer_fraction: float = OPTIMIZER_FRACTION,
) -> np.ndarray:
    """GPU power of every phase kind (W), shape (len(PHASE_KINDS),), in ``PHASE_KINDS`` order.

    forward/backward draw ``compute_fraction x TDP``; comm and dp ``comm_fraction x TDP``;
    pp_wait, bubble and straggler ``wait_fraction x TDP``; optimizer ``optimizer_fraction x
    TDP``; idle ``idle_w``. No level falls below ``idle_w`` (a GPU cannot draw less than idle).
    Sources of the default fractions: ``scenarios.sim.format.power``.
    """
    fractions = {
        "compute": compute_fraction,
        "comm": comm_fraction,
        "wait": wait_fraction,
        "optimizer": optimizer_fraction,
    }
    levels = np.full(len(PHASE_KINDS), float(idle_w))
    for group, kinds in _KIND_GROUPS.items():  # four named groups, not a hot path
        levels[[PHASE_CODES[k] for k in kinds]] = max(fractions[group] * tdp_w, idle_w)
    return levels


@dataclass(frozen=True, eq=False)
class PowerInputs:
    """Everything the power core needs about one design and one job (G GPUs, R racks, F feeds,
    K feed-rack connections, S pipeline stages).

    Attributes
    ----------
    timeline : StageTimeline
        Phases of one step on every stage and ``gpu_stage`` (G,) (-1: not in the job).
    gpu_rack : ndarray of int, shape (G,)
    tdp_w, idle_w : float
        The GPU's TDP and idle draw (W); GPUs outside the job, or of a job that is down, idle.
    level_w : ndarray, shape (len(PHASE_KINDS),)
        GPU power in each phase kind (W).
    stall_w : float
        GPU power during a synchronous checkpoint stall (W).
    ramp_s : float
        First-order time constant of a GPU's power (s).
    server_busy_w, server_idle_w : float
        Per server, besides its GPUs (CPUs, NICs, fans, scale-up switches), while the job runs
        (or stalls) and while it is down (W, DC side).
    psu_efficiency : float
        AC-to-DC efficiency of the server supplies (switches and optics are counted at the plug).
    rack_servers : ndarray of int, shape (R,)
    rack_job_servers : ndarray of int, shape (R,), optional
        Servers holding at least one GPU of the job (default: all); the others idle.
    rack_static_w : ndarray, shape (R,)
        Constant AC power of each rack: network switches and optics (W).
    rack_budget_kw : ndarray, shape (R,)
    feed_capacity_kw : ndarray, shape (F,)
        Derated continuous capacity of each feed (kW).
    feed_side : ndarray of int, shape (F,)
        0 = A, 1 = B.
    feed_panel : ndarray of int, shape (F,)
        Index into ``panel_name``.
    pair_feed, pair_rack : ndarray of int, shape (K,)
    rack_name, panel_name : tuple of str
    rack_hall : ndarray of int, shape (R,)
        Hall of each rack (one hall per plan today).
    """

    timeline: object
    gpu_rack: np.ndarray
    tdp_w: float
    idle_w: float
    level_w: np.ndarray
    stall_w: float
    ramp_s: float
    server_busy_w: float
    server_idle_w: float
    psu_efficiency: float
    rack_servers: np.ndarray
    rack_static_w: np.ndarray
    rack_budget_kw: np.ndarray
    feed_capacity_kw: np.ndarray
    feed_side: np.ndarray
    feed_panel: np.ndarray
    pair_feed: np.ndarray
    pair_rack: np.ndarray
    rack_name: tuple[str, ...] = ()
    panel_name: tuple[str, ...] = ()
    rack_hall: np.ndarray | None = None
    rack_job_servers: np.ndarray | None = None

    @property
    def n_racks(self) -> int:
        return int(self.rack_servers.size)

    @property
    def n_feeds(self) -> int:
        return int(self.feed_capacity_kw.size)

    @property
    def n_gpus(self) -> int:
        return int(self.gpu_rack.size)

    @property
    def gpu_stage(self) -> np.ndarray:
        return np.asarray(self.timeline.gpu_stage, dtype=np.int64)

    @property
    def job_servers(self) -> np.ndarray:
        """Servers of each rack that hold a job GPU, shape (R,)."""
        if self.rack_job_servers is None:
            return np.asarray(self.rack_servers, dtype=np.int64)
        return np.asarray(self.rack_job_servers, dtype=np.int64)

    @property
    def hall(self) -> np.ndarray:
        return np.zeros(self.n_racks, np.int64) if self.rack_hall is None else np.asarray(self.rack_hall)


@dataclass(frozen=True)
class PowerDraw:
    """What a GPU and its server draw beside the phase timeline: GPU levels as fractions of TDP
    (``phase_levels_w``), the checkpoint-stall level, the GPU's power time constant, the server
    overhead while running / down as fractions of its ``base_power_w``, the supplies'
    efficiency. Defaults and sources: ``scenarios.sim.format.power``."""

    compute_fraction: float = COMPUTE_FRACTION
    comm_fraction: float = COMM_FRACTION
    wait_fraction: float = WAIT_FRACTION
    optimizer_fraction: float = OPTIMIZER_FRACTION
    #: Checkpoint-stall power as a fraction of TDP (never below idle).
    stall_fraction: float = STALL_FRACTION
    ramp_ms: float = RAMP_MS
    server_busy_fraction: float = SERVER_BUSY_FRACTION
    server_idle_fraction: float = SERVER_IDLE_FRACTION
    psu_efficiency: float = PSU_EFFICIENCY

    def levels_w(self, tdp_w: float, idle_w: float) -> np.ndarray:
        """GPU power per phase kind (``phase_levels_w`` with these fractions)."""
        return phase_levels_w(
            tdp_w,
            idle_w,
            compute_fraction=self.compute_fraction,
            comm_fraction=self.comm_fraction,
            wait_fraction=self.wait_fraction,
            optimizer_fraction=self.optimizer_fraction,
        )


#: The documented draw (``scenarios.sim.format.power``'s defaults).
DEFAULT_DRAW = PowerDraw()


def power_inputs(
    plan,
    fabric,
    timeline,
    catalog_gpu=None,
    *,
    level_w: np.ndarray | None = None,
    draw: PowerDraw = DEFAULT_DRAW,
) -> PowerInputs:
    """Build :class:`PowerInputs` from a design and a job (vectorized over racks, links, feeds).

    Parameters
    ----------
    plan : FabricPlan
        Racks (budgets), nodes, switches, links (optics) and feeds of the design.
    fabric : CompiledFabric
        ``gpu_rack`` and ``link_rack`` (the rack of a link's lower end).
    timeline : StageTimeline
        The step's phases per stage and ``gpu_stage`` of every fabric GPU.
    catalog_gpu : GpuSpec, optional
        TDP and idle power (default ``plan.gpu``; pass the what-if GPU when it differs).
    level_w : ndarray (len(PHASE_KINDS),), optional
        GPU power per phase kind (W); default ``draw.levels_w``.
    draw : PowerDraw
        Fractions, ramp and supply efficiency (default the documented ones).

    Returns
    -------
    PowerInputs
        Validated by :func:`check_power_inputs`.
    """
    gpu = catalog_gpu if catalog_gpu is not None else plan.gpu
    tdp_w, idle_w = float(gpu.tdp_w), float(gpu.idle_w)
    if level_w is None:
        level_w = draw.levels_w(tdp_w, idle_w)
    n_racks = plan.n_racks
    base_w = float(plan.server.base_power_w)
    feeds = _feed_arrays(plan)
    inputs = PowerInputs(
        timeline=timeline,
        gpu_rack=np.asarray(fabric.gpu_rack, dtype=np.int64),
        tdp_w=tdp_w,
        idle_w=idle_w,
        level_w=np.asarray(level_w, dtype=float),
        stall_w=max(draw.stall_fraction * tdp_w, idle_w),
        ramp_s=draw.ramp_ms / 1000.0,
        server_busy_w=draw.server_busy_fraction * base_w,
        server_idle_w=draw.server_idle_fraction * base_w,
        psu_efficiency=float(draw.psu_efficiency),
        rack_servers=np.bincount(plan.node_rack, minlength=n_racks).astype(np.int64),
        rack_job_servers=np.bincount(plan.node_rack[_job_nodes(fabric, timeline)], minlength=n_racks).astype(
            np.int64
        ),
        # Switches with their transceivers (a link's NIC end is in the server's base power): the
        # plan's one rack-power rule, without the servers.
        rack_static_w=np.bincount(plan.switch_rack, weights=plan.switch_power_w, minlength=n_racks),
        rack_budget_kw=np.asarray(plan.rack_budget_kw, dtype=float),
        **feeds,
        rack_name=tuple(plan.rack_name),
    )
    check_power_inputs(inputs)
    return inputs


def _job_nodes(fabric, timeline) -> np.ndarray:
    """Design nodes holding a GPU of the job (none when the timeline's GPUs are not the fabric's)."""
    stage = np.asarray(timeline.gpu_stage)
    if stage.size != fabric.n_gpus:
        return np.zeros(0, int)
    return np.unique(np.asarray(fabric.gpu_node)[stage >= 0])


def _feed_arrays(plan) -> dict:
    """The feeds' capacities, sides and panels, and the feed-rack connections of a plan."""
    types = plan.feed_types
    type_capacity = feed_capacity_kw(
        [t.volts for t in types],
        [t.amps for t in types],
        [t.phases for t in types],
        [t.power_factor for t in types],
        [t.derating for t in types],
    )
    panels, feed_panel = np.unique(np.asarray(plan.feed_panel, dtype=str), return_inverse=True)
    return {
        "feed_capacity_kw": type_capacity[plan.feed_type] if plan.feed_type.size else np.zeros(0),
        "feed_side": np.asarray(plan.feed_side, dtype=np.int64),
        "feed_panel": feed_panel.astype(np.int64).ravel(),
        "pair_feed": np.asarray(plan.feed_rack_feed, dtype=np.int64),
        "pair_rack": np.asarray(plan.feed_rack_rack, dtype=np.int64),
        "panel_name": tuple(panels.tolist()),
    }


def _nonnegative(name: str, values, unit: str) -> None:
    values = np.asarray(values, dtype=float)
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        i = np.flatnonzero(bad.ravel())[0]
        where = f"[{i}]" if values.ndim else ""
        raise PowerError(
            f"inputs.{name}{where}: must be a finite number ≥ 0 {unit} (got {float(values.ravel()[i]):g})"
        )


def _index(name: str, values, limit: int, lo: int = 0) -> None:
    values = np.asarray(values)
    if values.size and (values.min() < lo or values.max() >= limit):
        raise PowerError(
            f"inputs.{name}: indices must lie in {lo}..{limit - 1} "
            f"(got {int(values.min())}..{int(values.max())})"
        )


def check_timeline(timeline, n_gpus: int) -> None:
    """The timeline contract: shapes, known kinds, phases tiling ``[0, step_time_s]``, GPU stages."""
    kind = np.asarray(timeline.kind)
    start, duration = np.asarray(timeline.start_s, dtype=float), np.asarray(timeline.duration_s, dtype=float)
    step = float(timeline.step_time_s)
    if kind.ndim != 2 or start.shape != kind.shape or duration.shape != kind.shape:
        raise PowerError(
            f"timeline.kind: kind, start_s and duration_s must share one (stages, phases) shape "
            f"(got {kind.shape}, {start.shape}, {duration.shape})"
        )
    if not (np.isfinite(step) and step > 0):
        raise PowerError(f"timeline.step_time_s: must be a finite number > 0 s (got {step!r})")
    valid = kind >= 0
    if kind.shape[0] == 0 or not valid.any(axis=1).all():
        raise PowerError("timeline.kind: every stage needs at least one phase")
    _index("timeline.kind", kind[valid], len(PHASE_KINDS))
    tolerance = 1e-9 * step + 1e-12
    bad = valid & ~(np.isfinite(duration) & (duration >= -tolerance))  # rounding may leave -1e-17
    if bad.any():
        s, k = (int(v[0]) for v in np.nonzero(bad))
        raise PowerError(
            f"timeline.duration_s: must be finite and ≥ 0 s (stage {s} phase {k}: got {duration[s, k]:g} s)"
        )
    totals = np.where(valid, duration, 0.0).sum(axis=1)
    if np.any(np.abs(totals - step) > 1e-6 * step):
        s = int(np.argmax(np.abs(totals - step)))
        raise PowerError(
            f"timeline.duration_s: the phases of every stage must tile [0, step_time_s = {step:g} s] "
            f"(stage {s} sums to {totals[s]:g} s)"
        )
    previous_end = np.concatenate([np.zeros((kind.shape[0], 1)), (start + duration)[:, :-1]], axis=1)
    gaps = valid & (np.abs(start - previous_end) > max(tolerance, 1e-6 * step))
    if gaps.any():
        s, k = (int(v[0]) for v in np.nonzero(gaps))
        raise PowerError(
            f"timeline.start_s: phases must be contiguous (stage {s} phase {k} starts at {start[s, k]:g} s, "
            f"the previous one ends at {previous_end[s, k]:g} s)"
        )
    stage = np.asarray(timeline.gpu_stage)
    if stage.size != n_gpus:
        raise PowerError(
            f"timeline.gpu_stage: must hold one stage per fabric GPU ({n_gpus}) (got {stage.size})"
        )
    _index("timeline.gpu_stage", stage, kind.shape[0], lo=-1)


def check_power_inputs(inputs: PowerInputs) -> None:
    """Validate shapes, ranges and watts; raise ``PowerError`` naming the field and the limit."""
    n_racks, n_feeds = inputs.n_racks, inputs.n_feeds
    check_timeline(inputs.timeline, inputs.n_gpus)
    if np.asarray(inputs.level_w).shape != (len(PHASE_KINDS),):
        raise PowerError(
            f"inputs.level_w: must hold one level per phase kind ({len(PHASE_KINDS)}) "
            f"(got shape {np.asarray(inputs.level_w).shape})"
        )
    for name in ("level_w", "tdp_w", "idle_w", "stall_w", "server_busy_w", "server_idle_w"):
        _nonnegative(name, getattr(inputs, name), "W")
    _nonnegative("ramp_s", inputs.ramp_s, "s")
    if not 0.0 < inputs.psu_efficiency <= 1.0:
        raise PowerError(f"inputs.psu_efficiency: must lie in (0, 1] (got {inputs.psu_efficiency!r})")
    for name, size in (
        ("rack_static_w", n_racks),
        ("rack_budget_kw", n_racks),
        ("feed_side", n_feeds),
        ("feed_panel", n_feeds),
        ("pair_rack", inputs.pair_feed.size),
    ):
        if np.asarray(getattr(inputs, name)).size != size:
            raise PowerError(
                f"inputs.{name}: must hold {size} entries (got {np.asarray(getattr(inputs, name)).size})"
            )
    _nonnegative("rack_servers", inputs.rack_servers, "servers")
    _nonnegative("rack_static_w", inputs.rack_static_w, "W")
    _nonnegative("rack_budget_kw", inputs.rack_budget_kw, "kW")
    _nonnegative("feed_capacity_kw", inputs.feed_capacity_kw, "kW")
    _index("gpu_rack", inputs.gpu_rack, n_racks)
    _index("pair_feed", inputs.pair_feed, n_feeds)
    _index("pair_rack", inputs.pair_rack, n_racks)
    _index("feed_side", inputs.feed_side, 2)
    _index(
        "feed_panel",
        inputs.feed_panel,
        max(len(inputs.panel_name), int(np.max(inputs.feed_panel, initial=-1)) + 1),
    )
    job_servers = inputs.job_servers
    if job_servers.size != n_racks or np.any(job_servers < 0) or np.any(job_servers > inputs.rack_servers):
        raise PowerError(
            f"inputs.rack_job_servers: must hold 0..rack_servers servers for each of the {n_racks} racks"
        )
    if inputs.rack_hall is not None and np.asarray(inputs.rack_hall).size != n_racks:
        raise PowerError(
            f"inputs.rack_hall: must hold {n_racks} entries (got {np.asarray(inputs.rack_hall).size})"
        )
