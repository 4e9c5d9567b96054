"""The ``power:`` section of a scenario: what-if knobs of the power simulation, parsed and checked.

``parse_power(data)`` turns the YAML mapping into a frozen :class:`PowerSpec`; every mistake
raises :class:`PowerError` (a ``ScenarioError``) with one line naming the field path and the
limit. Rules that need the GPU model (a floor or a cap against TDP and idle power) live in
:func:`check_power`, the way ``check_scenario`` holds the catalog-dependent rules of a scenario.
The default figures of the power model, each with its source, are the module constants below;
``docs/power-model.md`` explains them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from scenarios.sim.format.errors import ScenarioError
from scenarios.sim.format.fields import Field, Section
from utilities.errors import preview

__all__ = [
    "EVENT_KINDS",
    "GpuKnobs",
    "JobEvents",
    "PowerError",
    "PowerSpec",
    "StorageKnobs",
    "WindowEvent",
    "check_power",
    "job_events",
    "parse_power",
]

# --- default figures of the model (fractions of the GPU's TDP unless stated) ----------------
#: Forward/backward compute. Assumed 0.85 of TDP (~600 W on a 700 W H100): Choukse et al. 2025
#: ("Power Stabilization for AI Training Datacenters", arXiv 2508.14318, Sec. 2) observe compute
#: phases near TDP; Newkirk et al. 2025 (arXiv 2506.14551) measure 8-GPU H100 nodes training at
#: ~76 % of their 10.2 kW rating, which with the server share below leaves ~600 W per GPU.
COMPUTE_FRACTION = 0.85
#: Exposed TP/CP/EP and data-parallel communication (NCCL kernels, HBM traffic, idle tensor
#: cores). Assumed 0.35: Choukse et al. 2025 report communication phases "near idle"; NCCL keeps
#: a few SMs and the memory system busy, so above the idle draw.
COMM_FRACTION = 0.35
#: Pipeline waits, bubbles and straggler waits (a spinning wait kernel). Assumed 0.20.
WAIT_FRACTION = 0.20
#: Optimizer step (memory-bound element-wise kernels). Assumed 0.50.
OPTIMIZER_FRACTION = 0.50
#: Synchronous checkpoint stall. Assumed 0.15 (~100 W on an H100, against the catalog's 70 W
#: idle): Choukse et al. 2025 list checkpointing with the low-power, near-idle phases.
STALL_FRACTION = 0.15
#: First-order time constant of a GPU's board power after a change of phase (ms). Assumed: the
#: voltage regulators answer in microseconds, the clock/power governor settles in milliseconds.
RAMP_MS = 5.0
#: Server overhead (CPUs, NICs, fans, scale-up switches) while the job runs, as a fraction of
#: the catalog's ``base_power_w``. Derived: Newkirk et al. 2025 measure DGX-class H100 nodes at
#: ~76 % of 10.2 kW (7.75 kW) in training; minus 8 GPUs at 0.85 x 700 W (4.76 kW) leaves
#: ~3.0 kW = 0.64 of the 4.6 kW DGX H100 base.
SERVER_BUSY_FRACTION = 0.64
#: Server overhead while the job is down (crashed, not started): CPUs idle, fans slow. Assumed.
SERVER_IDLE_FRACTION = 0.45
#: AC-to-DC efficiency of the server power supplies. Derived: 80 PLUS Titanium, 230 V internal
#: redundant, requires 94 % at 20 % and 96 % at 50 % load; redundant supplies run in between.
PSU_EFFICIENCY = 0.95
#: Power usage effectiveness (facility / IT). Assumed 1.2 for a new liquid-assisted AI hall;
#: applied instantaneously, an upper bound on the swing the grid sees (cooling follows slower).
PUE = 1.2
#: Frequency band of concern to the utility (Hz). Choukse et al. 2025, Sec. 3: an example
#: critical range of 0.1-20 Hz, with the spectral energy in it capped at 20 % of the total.
BAND_HZ = (0.1, 20.0)
#: The cap on that band's share of the variance (Choukse et al. 2025, Sec. 3, as above).
BAND_SHARE_MAX = 0.20
#: Frequencies at which utilities have reported oscillations driven by large electronic loads
#: (Hz), each with its report: the run marks the facility draw's variance near each.
OSCILLATIONS_HZ = (
    (
        14.7,
        "Dominion Energy: 14.7-14.8 Hz oscillations from a data center in synchrophasor data "
        "(IEEE PES lecture 'Unforeseen data center oscillations in Dominion Energy's grid', 2025)",
    ),
    (
        23.0,
        "ERCOT 2024: 23 Hz oscillations near a large electronic load above ~320 MW "
        "(Fan et al., arXiv:2605.17190, May 2026)",
    ),
)
#: Half width of the band counted as "near" a reported frequency (Hz). Assumed: the reports
#: give the modes to about 0.1 Hz; 0.5 Hz also catches a step rate that drifts by a few %.
OSCILLATION_HALF_WIDTH_HZ = 0.5
#: Length of a synchronous checkpoint stall (s). Derived: a 405B-parameter job writes 14 bytes
#: per parameter (bf16 weights, fp32 master weights, two fp32 Adam moments), 5.7 TB, in ~10 s at
#: an assumed ~0.6 TB/s aggregate storage write bandwidth.
CHECKPOINT_S = 10.0
#: Round-trip efficiency of rack energy storage. Assumed 0.9, between Li-ion batteries (~0.85)
#: and capacitor banks (~0.95).
STORAGE_ROUND_TRIP = 0.9
#: A power cap slows a compute phase by ``((P - P_idle) / (cap - P_idle)) ** (1 / CAP_EXPONENT)``.
#: Derived: CMOS dynamic power ~ C V^2 f with V roughly proportional to f in the DVFS range, so
#: P_dyn ~ f^3 and a compute-bound kernel's time ~ 1/f. Not calibrated to an H100 measurement.
CAP_EXPONENT = 3.0

# --- limits (reject typos and runs that would not fit in memory; not physical limits) -------
MAX_SAMPLES = 600_000
MAX_STORED_SAMPLES = 10_000
MAX_WINDOW_S = 3_600.0
MAX_WINDOW_EVENTS = 32
MAX_JOB_EVENTS = 1_000_000
MAX_STAGGER_GROUPS = 64
MAX_DURATION_S = 1e9

EVENT_KINDS = ("start", "checkpoint", "crash", "restart")
EVENT_CODES = {name: code for code, name in enumerate(EVENT_KINDS)}


class PowerError(ScenarioError):
    """A power section, power input or event log is malformed; one line names the field and limit."""


POWER = Section(
    "power",
    "Power",
    (
        Field(
            "window_s",
            "Window",
            "float",
            default=60.0,
            lo=0.0,
            lo_open=True,
            hi=MAX_WINDOW_S,
            unit="s",
            help="simulated time of the rack and facility power series",
        ),
        Field(
            "resolution_ms",
            "Resolution",
            "float",
            default=1.0,
            lo=0.1,
            hi=1000.0,
            unit="ms",
            help="time step of the simulated power series",
        ),
        Field(
            "store_ms",
            "Stored series resolution",
            "float",
            lo=0.1,
            hi=MAX_WINDOW_S * 1000.0,
            unit="ms",
            help="blank = 100 ms (or the resolution, if coarser)",
        ),
        Field(
            "stagger_groups",
            "Stagger groups",
            "int",
            default=1,
            lo=1,
            hi=MAX_STAGGER_GROUPS,
            help="groups of servers whose steps start offset from each other (1 = all in step)",
        ),
        Field(
            "stagger_offset_ms",
            "Stagger offset",
            "float",
            lo=0.0,
            hi=MAX_WINDOW_S * 1000.0,
            unit="ms",
            help="blank = the smallest that costs at most 2 % of a step",
        ),
        Field("pue", "PUE", "float", default=PUE, lo=1.0, hi=3.0, help="facility power / IT power"),
        Field(
            "grid_ramp_mw_per_min",
            "Utility ramp limit",
            "float",
            lo=0.0,
            lo_open=True,
            hi=1e6,
            unit="MW/min",
            help="the utility's limit on the rise or fall of the draw within a minute; blank = none",
        ),
        Field(
            "band_share_max",
            "Utility band cap",
            "float",
            default=BAND_SHARE_MAX,
            lo=0.0,
            hi=1.0,
            help="the utility's cap on the share of the draw's variance in the band (0.2 = 20 %)",
        ),
        Field(
            "coarse_resolution_s",
            "Event timeline resolution",
            "float",
            default=1.0,
            lo=0.001,
            hi=86_400.0,
            unit="s",
            web=False,
        ),
    ),
    mappings=("events", "gpu", "storage", "band_hz"),
    error=PowerError,
)
POWER_GPU = Section(
    "power.gpu",
    "GPU power",
    (
        Field(
            "floor_fraction",
            "Power floor",
            "float",
            default=0.0,
            lo=0.0,
            hi=1.0,
            help="fraction of TDP a GPU keeps drawing while it communicates or waits",
        ),
        Field(
            "cap_w",
            "Power cap",
            "float",
            lo=0.0,
            lo_open=True,
            hi=100_000.0,
            unit="W",
            help="highest power a GPU may draw; blank = no cap (up to its TDP)",
        ),
    ),
    error=PowerError,
)
POWER_STORAGE = Section(
    "power.storage",
    "Rack energy storage",
    (
        Field(
            "joules_per_gpu",
            "Energy per GPU",
            "float",
            default=0.0,
            lo=0.0,
            hi=1e9,
            unit="J",
            help="energy stored in the racks per GPU to smooth the grid's load; 0 = none",
        ),
        Field(
            "ramp_mw_per_s",
            "Grid ramp limit",
            "float",
            lo=0.0,
            lo_open=True,
            hi=1e6,
            unit="MW/s",
            help="blank = what the stored energy allows",
        ),
        Field(
            "round_trip_efficiency",
            "Round-trip efficiency",
            "float",
            default=STORAGE_ROUND_TRIP,
            lo=0.0,
            lo_open=True,
            hi=1.0,
            web=False,
        ),
    ),
    error=PowerError,
)
#: One event of ``power.events`` (a kind alone, or this mapping).
POWER_EVENT = Section(
    "power.events",
    "Event",
    (
        Field("kind", "Kind", "choice", required=True, choices=EVENT_KINDS),
        Field("at_s", "Start", "float", lo=0.0, hi=MAX_WINDOW_S, unit="s"),
        Field("duration_s", "Duration", "float", lo=0.0, hi=MAX_DURATION_S, unit="s"),
    ),
    error=PowerError,
)


@dataclass(frozen=True)
class WindowEvent:
    """A job-level event placed on the fine window: ``kind`` from ``EVENT_KINDS``, times in s."""

    kind: str
    at_s: float
    duration_s: float


@dataclass(frozen=True)
class GpuKnobs:
    """GPU mitigations: a power floor (fraction of TDP) held while the job runs, a cap (W).
    Defaults are the field declarations' (``POWER_GPU``): ``parse_power(None).gpu``."""

    floor_fraction: float
    cap_w: float | None


@dataclass(frozen=True)
class StorageKnobs:
    """Rack energy storage: capacity per GPU (J), grid-side ramp limit (MW/s), round trip."""

    joules_per_gpu: float
    ramp_mw_per_s: float | None
    round_trip_efficiency: float

    @property
    def enabled(self) -> bool:
        return self.joules_per_gpu > 0 or self.ramp_mw_per_s is not None


@dataclass(frozen=True)
class PowerSpec:
    """Window, resolution, events and mitigations of one power simulation (see the module doc).
    Its defaults are the field declarations' (``POWER``): ``parse_power(None)``."""

    window_s: float
    resolution_ms: float
    store_ms: float
    events: tuple[WindowEvent, ...]
    gpu: GpuKnobs
    stagger_groups: int
    stagger_offset_ms: float | None
    storage: StorageKnobs
    pue: float
    band_hz: tuple[float, float]
    coarse_resolution_s: float
    grid_ramp_mw_per_min: float | None = None
    band_share_max: float = BAND_SHARE_MAX

    @property
    def samples(self) -> int:
        """Samples of the fine window."""
        return max(round(self.window_s * 1000.0 / self.resolution_ms), 1)

    @property
    def store_block(self) -> int:
        """Fine samples averaged into one stored sample (stored resolution = block x resolution)."""
        return max(round(self.store_ms / self.resolution_ms), 1)

    def to_dict(self) -> dict[str, Any]:
        """The YAML-ready form (``parse_power(spec.to_dict()) == spec``)."""
        return {
            "window_s": self.window_s,
            "resolution_ms": self.resolution_ms,
            "store_ms": self.store_ms,
            "events": [{"kind": e.kind, "at_s": e.at_s, "duration_s": e.duration_s} for e in self.events],
            "gpu": {"floor_fraction": self.gpu.floor_fraction, "cap_w": self.gpu.cap_w},
            "stagger_groups": self.stagger_groups,
            "stagger_offset_ms": self.stagger_offset_ms,
            "storage": {
                "joules_per_gpu": self.storage.joules_per_gpu,
                "ramp_mw_per_s": self.storage.ramp_mw_per_s,
                "round_trip_efficiency": self.storage.round_trip_efficiency,
            },
            "pue": self.pue,
            "band_hz": list(self.band_hz),
            "coarse_resolution_s": self.coarse_resolution_s,
            "grid_ramp_mw_per_min": self.grid_ramp_mw_per_min,
            "band_share_max": self.band_share_max,
        }


@dataclass(frozen=True)
class JobEvents:
    """A job-level event log (E events): start ramps, checkpoint stalls, crashes, restarts.

    Attributes
    ----------
    time_s : ndarray of float, shape (E,)
        When each event begins (s from the start of the timeline).
    kind : ndarray of int8, shape (E,)
        Index into ``EVENT_KINDS``.
    duration_s : ndarray of float, shape (E,)
        Stall length (checkpoint), downtime (crash), ramp length (start, restart) (s).
    """

    time_s: np.ndarray
    kind: np.ndarray
    duration_s: np.ndarray

    @property
    def end_s(self) -> float:
        """End of the last event (0 without events)."""
        return float((self.time_s + self.duration_s).max(initial=0.0))


# --- readers ---------------------------------------------------------------------------------


def _window_events(data: Any, window_s: float) -> tuple[WindowEvent, ...]:
    """Events as kinds (``checkpoint``) or mappings; each starts when the previous one ends
    (the first at a third of the window) unless ``at_s`` says otherwise."""
    where = "power.events"
    if data is None:
        return ()
    if not isinstance(data, list | tuple):
        raise PowerError(f"{where}: must be a list of event kinds or mappings (got {type(data).__name__})")
    if len(data) > MAX_WINDOW_EVENTS:
        raise PowerError(f"{where}: at most {MAX_WINDOW_EVENTS} events on the window (got {len(data)})")
    events, previous_end = [], window_s / 3.0
    for i, entry in enumerate(data):
        item = f"{where}[{i}]"
        values = POWER_EVENT.read({"kind": entry} if isinstance(entry, str) else entry, where=item)
        kind = values["kind"]
        if values["at_s"] is not None and values["at_s"] > window_s:
            raise PowerError(f"{item}.at_s: must be ≤ the window ({window_s:g} s) (got {values['at_s']:g})")
        at_s = min(previous_end, window_s) if values["at_s"] is None else values["at_s"]
        default_duration = (
            CHECKPOINT_S if kind == "checkpoint" else (window_s / 6.0 if kind == "crash" else 0.0)
        )
        duration_s = default_duration if values["duration_s"] is None else values["duration_s"]
        events.append(WindowEvent(kind=kind, at_s=at_s, duration_s=duration_s))
        previous_end = at_s + duration_s
    return tuple(events)


def _band(data: Any, resolution_ms: float) -> tuple[float, float]:
    where = "power.band_hz"
    if data is None:
        return BAND_HZ
    ok = isinstance(data, list | tuple) and len(data) == 2
    ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in data)
    if not ok:
        raise PowerError(f"{where}: must be [low, high] in Hz (got {preview(data)})")
    low, high = float(data[0]), float(data[1])
    nyquist = 1000.0 / (2.0 * resolution_ms)
    if not 0.0 <= low < high:
        raise PowerError(f"{where}: must satisfy 0 ≤ low < high (got [{low:g}, {high:g}])")
    if high > nyquist:
        raise PowerError(
            f"{where}: the upper edge must be at most the Nyquist frequency 1000 / (2 x resolution_ms) "
            f"= {nyquist:g} Hz (got {high:g})"
        )
    return low, high


def parse_power(data: Any) -> PowerSpec:
    """Parse and validate the ``power:`` mapping of a scenario (None gives the defaults).

    Raises
    ------
    PowerError
        One line naming the field path and the limit, e.g. ``power.window_s: window_s x 1000 /
        resolution_ms must be at most 600,000 samples (got 1,200,000)``.
    """
    values = POWER.read({} if data is None else data)
    data = data or {}
    window_s, resolution_ms = values["window_s"], values["resolution_ms"]
    samples = round(window_s * 1000.0 / resolution_ms)
    if samples > MAX_SAMPLES:
        raise PowerError(
            f"power.window_s: window_s x 1000 / resolution_ms must be at most {MAX_SAMPLES:,} samples "
            f"(got {samples:,})"
        )
    if samples < 2:
        raise PowerError(f"power.window_s: must hold at least 2 samples of resolution_ms (got {samples})")
    store_ms = values["store_ms"] if values["store_ms"] is not None else max(100.0, resolution_ms)
    if values["store_ms"] is not None and not resolution_ms <= store_ms <= window_s * 1000.0:
        raise PowerError(
            f"power.store_ms: must lie between resolution_ms ({resolution_ms:g}) and the window "
            f"({window_s * 1000.0:g} ms) (got {store_ms:g})"
        )
    stored = round(window_s * 1000.0 / store_ms)
    if stored > MAX_STORED_SAMPLES:
        raise PowerError(
            f"power.store_ms: window_s x 1000 / store_ms must be at most {MAX_STORED_SAMPLES:,} stored "
            f"samples (got {stored:,})"
        )
    offset = values["stagger_offset_ms"]
    if offset is not None and offset > window_s * 1000.0:
        raise PowerError(
            f"power.stagger_offset_ms: must be ≤ the window ({window_s * 1000.0:g} ms) (got {offset:g})"
        )
    gpu = POWER_GPU.read(data.get("gpu") or {})
    storage = POWER_STORAGE.read(data.get("storage") or {})
    return PowerSpec(
        window_s=window_s,
        resolution_ms=resolution_ms,
        store_ms=store_ms,
        events=_window_events(data.get("events"), window_s),
        gpu=GpuKnobs(**gpu),
        stagger_groups=values["stagger_groups"],
        stagger_offset_ms=offset,
        storage=StorageKnobs(**storage),
        pue=values["pue"],
        band_hz=_band(data.get("band_hz"), resolution_ms),
        coarse_resolution_s=values["coarse_resolution_s"],
        grid_ramp_mw_per_min=values["grid_ramp_mw_per_min"],
        band_share_max=values["band_share_max"],
    )


def check_power(spec: PowerSpec, *, tdp_w: float, idle_w: float) -> None:
    """Rules that need the GPU model: the floor and the cap against its TDP and idle power.

    Parameters
    ----------
    spec : PowerSpec
    tdp_w, idle_w : float
        The GPU's TDP and idle draw (W), from the catalog.

    Raises
    ------
    PowerError
    """
    floor_w = spec.gpu.floor_fraction * tdp_w
    if floor_w > tdp_w or spec.gpu.floor_fraction < 0:
        raise PowerError(
            f"power.gpu.floor_fraction: floor_fraction x TDP must lie in 0..TDP ({tdp_w:g} W) "
            f"(got {spec.gpu.floor_fraction:g} x {tdp_w:g} = {floor_w:g} W)"
        )
    cap = spec.gpu.cap_w
    if cap is not None:
        if cap > tdp_w:
            raise PowerError(f"power.gpu.cap_w: must be at most the GPU's TDP ({tdp_w:g} W) (got {cap:g} W)")
        if cap < idle_w:
            raise PowerError(
                f"power.gpu.cap_w: must be at least the GPU's idle power ({idle_w:g} W) (got {cap:g} W)"
            )
        if floor_w > cap:
            raise PowerError(
                f"power.gpu.floor_fraction: floor_fraction x TDP ({spec.gpu.floor_fraction:g} x {tdp_w:g} = "
                f"{floor_w:g} W) must be at most cap_w ({cap:g} W)"
            )
    if spec.samples > MAX_SAMPLES:
        raise PowerError(
            f"power.window_s: window_s x 1000 / resolution_ms must be at most {MAX_SAMPLES:,} samples "
            f"(got {spec.samples:,})"
        )


def job_events(records: Iterable[Any] | JobEvents | None) -> JobEvents:
    """An event log from records: mappings ``{time_s (or at_s), kind, duration_s}`` or tuples
    ``(time_s, kind, duration_s)``; kinds from ``EVENT_KINDS``. Sorted by time (stable).

    Raises
    ------
    PowerError
        ``events[i].kind: ...`` and the like.
    """
    if isinstance(records, JobEvents):
        events = records
    else:
        rows = list(records or ())
        if len(rows) > MAX_JOB_EVENTS:
            raise PowerError(f"events: at most {MAX_JOB_EVENTS:,} events (got {len(rows):,})")
        times, kinds, durations = [], [], []
        for i, row in enumerate(rows):  # parsing user records once, not a hot path
            if isinstance(row, Mapping):
                time_s = row.get("time_s", row.get("at_s"))
                kind, duration = row.get("kind"), row.get("duration_s", 0.0)
            elif isinstance(row, list | tuple) and len(row) == 3:
                time_s, kind, duration = row
            else:
                raise PowerError(
                    f"events[{i}]: must be a mapping or (time_s, kind, duration_s) (got {preview(row)})"
                )
            if kind not in EVENT_CODES:
                raise PowerError(
                    f"events[{i}].kind: must be one of {', '.join(EVENT_KINDS)} (got {preview(kind)})"
                )
            times.append(time_s)
            kinds.append(EVENT_CODES[kind])
            durations.append(duration)
        events = JobEvents(
            time_s=np.asarray(times, dtype=float),
            kind=np.asarray(kinds, dtype=np.int8),
            duration_s=np.asarray(durations, dtype=float),
        )
    return _checked_events(events)


def _checked_events(events: JobEvents) -> JobEvents:
    time_s = np.asarray(events.time_s, dtype=float).ravel()
    kind = np.asarray(events.kind, dtype=np.int8).ravel()
    duration_s = np.asarray(events.duration_s, dtype=float).ravel()
    if not time_s.size == kind.size == duration_s.size:
        raise PowerError(
            f"events: time_s, kind and duration_s must have one entry per event "
            f"(got {time_s.size}, {kind.size}, {duration_s.size})"
        )
    for name, values, hi in (("time_s", time_s, MAX_DURATION_S), ("duration_s", duration_s, MAX_DURATION_S)):
        bad = ~np.isfinite(values) | (values < 0) | (values > hi)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise PowerError(f"events[{i}].{name}: must lie in 0..{hi:g} s (got {values[i]!r})")
    if kind.size and (kind.min() < 0 or kind.max() >= len(EVENT_KINDS)):
        i = int(np.flatnonzero((kind < 0) | (kind >= len(EVENT_KINDS)))[0])
        raise PowerError(f"events[{i}].kind: must index {', '.join(EVENT_KINDS)} (got {int(kind[i])})")
    order = np.argsort(time_s, kind="stable")
    return JobEvents(time_s=time_s[order], kind=kind[order], duration_s=duration_s[order])


def window_event_log(spec: PowerSpec) -> JobEvents:
    """The fine window's events (``spec.events``) as an event log."""
    return job_events([(e.at_s, e.kind, e.duration_s) for e in spec.events])
