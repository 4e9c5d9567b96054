"""The ``failures:`` section of a scenario: parse and validate it into a frozen ``FailureSpec``.

Every key has a default, a bound and a source (``docs/failure-model.md`` lists them), declared
once in the section declarations below (``FAILURES``, ``CHECKPOINT``, ``RATES``, ``LEMONS``); the
dataclasses only hold what :func:`parse_failures` read through them (``parse_failures(None)``
gives the defaults). Every
mistake raises :class:`~scenarios.sim.format.scenario.ScenarioError` with one line naming the field
path and the limit, e.g. ``failures.trials: must be an integer from 1 to 100,000 (got 0)``.

The non-hardware default rates come from Dubey et al., "The Llama 3 Herd of Models" (2024),
Section 3.3.4 / Table 5: 419 unexpected and 47 planned interruptions of one 2,048-server job in
54 days (``shared/calibration/llama3-interruptions.yaml``). They are per *job*-day, not per
server, following Kokolis et al. (HPCA 2025, arXiv 2410.21680): one per-node rate cannot fit
both small-job and large-job MTTF, so software and operations faults form a per-job process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scenarios.sim.format.errors import ScenarioError
from scenarios.sim.format.fields import Field, Section

__all__ = [
    "CheckpointPolicy",
    "FailureSpec",
    "LemonSpec",
    "RateOverrides",
    "parse_failures",
]

MAX_TRIALS = 100_000
MAX_SPARE_SERVERS = 100_000
MAX_STEPS = 10**13
MAX_WINDOW_DAYS = 3650.0
MAX_INTERVAL_MIN = 525_600.0  # one year
MAX_SECONDS = 86_400.0
MAX_HOURS = 8760.0
MAX_RATE_PER_DAY = 10_000.0
MAX_STORAGE_GBYTES_PER_S = 1e6

#: Llama 3 405B pre-training window (Dubey et al. 2024, Section 3.3.4): 54 days.
LLAMA3_DAYS = 54.0
#: Software interruptions of that job: software bug 54 + NCCL watchdog timeouts 7 + dependency
#: 2 = 63 (Table 5) -> derived 63 / 54 per job-day.
SOFTWARE_PER_DAY = 63.0 / LLAMA3_DAYS
#: Unplanned host maintenance: 32 (Table 5) -> derived 32 / 54 per job-day.
MAINTENANCE_PER_DAY = 32.0 / LLAMA3_DAYS
#: Planned interruptions (automated maintenance, firmware, operator changes): 47 (Section 3.3.4)
#: -> derived 47 / 54 per job-day.
PLANNED_PER_DAY = 47.0 / LLAMA3_DAYS
#: Checkpoint storage bandwidth: Llama 3's Tectonic file system sustains 2 TB/s (peak 7 TB/s)
#: (Dubey et al. 2024, Section 3.3.1).
STORAGE_GBYTES_PER_S = 2000.0
#: Spare servers held back beyond the design's idle ones. Assumed: half a 32-server scalable unit.
DEFAULT_SPARE_SERVERS = 16


@dataclass(frozen=True)
class CheckpointPolicy:
    """When and how the job saves its state.

    ``interval_min`` is the failure-free compute time between checkpoint starts (None: the
    Young/Daly optimum for the model's MTTF). ``save_s`` is the time one save takes (None:
    derived from the state size and ``storage_gbytes_per_s``). ``async_save`` overlaps the save
    with training: no pause, but the checkpoint only counts once the save has finished.
    """

    interval_min: float | None
    save_s: float | None
    async_save: bool


@dataclass(frozen=True)
class RateOverrides:
    """Hazard rates that replace the catalog-derived or Llama-derived defaults.

    ``server_per_1000_node_days`` replaces the sum of every per-server hardware hazard (GPU,
    HBM, host, NIC, PSU), keeping their proportions (Kokolis et al. fit 6.5 failures per 1,000
    node-days on their RSC-1 cluster). The other three are per job-day.
    """

    server_per_1000_node_days: float | None
    software_per_day: float
    maintenance_per_day: float
    planned_per_day: float


@dataclass(frozen=True)
class LemonSpec:
    """Lemon nodes (a what-if): ``fraction`` of the job's servers fail ``factor`` times as often
    (server hardware hazards) and leave the pool for good at their ``remove_after``-th failure.
    Kokolis et al. found lemon nodes were 1.2% of nodes yet touched 13% of daily jobs."""

    fraction: float
    factor: float
    remove_after: int


@dataclass(frozen=True)
class FailureSpec:
    """The ``failures:`` section: Monte Carlo size, recovery, checkpointing, spares and rates.

    Times carry their unit in the name. ``window_days`` switches from "how long does the job
    take" to "how much productive time does a fixed window give". ``weibull_shape`` is the shape
    of the gaps between consecutive failure events of the whole job (a renewal process in wall
    time with the same mean as the Poisson process; 1 = exponential); components are not aged
    one by one.
    """

    trials: int
    seed: int
    window_days: float | None
    steps: int | None
    checkpoint: CheckpointPolicy
    detection_s: float
    restart_min: float
    reload_s: float | None
    storage_gbytes_per_s: float
    spare_servers: int | None  # None: DEFAULT_SPARE_SERVERS, at most the job's servers
    repair_hours: float
    switch_repair_hours: float
    link_repair_hours: float
    feed_repair_hours: float
    rates: RateOverrides
    weibull_shape: float
    lemons: LemonSpec

    def spares(self, job_servers: int) -> int:
        """The spare servers held back: as given, else ``DEFAULT_SPARE_SERVERS`` or the job's
        server count if that is smaller (16 spares for a 4-server job would be absurd)."""
        if self.spare_servers is not None:
            return self.spare_servers
        return min(DEFAULT_SPARE_SERVERS, int(job_servers))

    @property
    def window_s(self) -> float | None:
        return None if self.window_days is None else self.window_days * 86_400.0


# --- sections: the format's declarations (scenarios/sim/format/fields.py) -------------------------

FAILURES = Section(
    "failures",
    "Failures",
    (
        Field(
            "trials",
            "Monte Carlo trials",
            "int",
            default=1000,
            lo=1,
            hi=MAX_TRIALS,
            help="simulated lives of the job; more trials, tighter intervals",
        ),
        Field(
            "seed",
            "Seed",
            "int",
            default=0,
            lo=0,
            hi=2**63 - 1,
            help="of the failure draws: the same seed gives the same result",
        ),
        Field(
            "window_days",
            "Fixed window",
            "float",
            lo=0.0,
            lo_open=True,
            hi=MAX_WINDOW_DAYS,
            unit="days",
            help="blank = simulate until the job finishes",
        ),
        Field("steps", "Job length", "int", lo=1, hi=MAX_STEPS, unit="steps", help="blank = from job.tokens"),
        # Recovery and repair times: Dubey et al. (2024) publish none of them; assumed defaults.
        # Assumed: a heartbeat/watchdog notices a dead rank within a minute.
        Field(
            "detection_s",
            "Detection time",
            "float",
            default=60.0,
            lo=0.0,
            hi=MAX_SECONDS,
            unit="s",
            help="from a failure to the job noticing it",
        ),
        # Assumed: reschedule, container start, NCCL initialisation at 10k+ GPUs.
        Field(
            "restart_min",
            "Restart time",
            "float",
            default=10.0,
            lo=0.0,
            hi=1440.0,
            unit="min",
            help="to restart the job after a failure (reschedule, load, warm up)",
        ),
        # Derived by default: bytes read / storage_gbytes_per_s.
        Field(
            "reload_s",
            "Checkpoint reload time",
            "float",
            lo=0.0,
            hi=MAX_SECONDS,
            unit="s",
            help="blank = state size / storage bandwidth",
        ),
        Field(
            "storage_gbytes_per_s",
            "Storage bandwidth",
            "float",
            default=STORAGE_GBYTES_PER_S,
            lo=0.0,
            lo_open=True,
            hi=MAX_STORAGE_GBYTES_PER_S,
            unit="GB/s",
            help="of checkpoint writes and reads",
        ),
        Field(
            "spare_servers",
            "Spare servers",
            "int",
            lo=0,
            hi=MAX_SPARE_SERVERS,
            help=f"beyond the design's idle ones; blank = {DEFAULT_SPARE_SERVERS}, or fewer on a smaller job",
        ),
        # Assumed: vendor RMA / on-site swap of a server part in two days.
        Field(
            "repair_hours",
            "Server repair time",
            "float",
            default=48.0,
            lo=0.0,
            hi=MAX_HOURS,
            unit="h",
            help="until a failed server is back in the pool",
        ),
        # Assumed: an on-site spare switch swapped within a shift.
        Field(
            "switch_repair_hours",
            "Switch repair time",
            "float",
            default=4.0,
            lo=0.0,
            hi=MAX_HOURS,
            unit="h",
            help="until a failed switch is swapped for a spare",
        ),
        # Assumed: an optic or cable swapped within a shift.
        Field(
            "link_repair_hours",
            "Link repair time",
            "float",
            default=4.0,
            lo=0.0,
            hi=MAX_HOURS,
            unit="h",
            help="until a failed link (optic, cable) is swapped",
        ),
        # Assumed: a breaker or whip replaced by the facility electrician.
        Field(
            "feed_repair_hours",
            "Feed repair time",
            "float",
            default=8.0,
            lo=0.0,
            hi=MAX_HOURS,
            unit="h",
            help="until a failed power feed is restored",
        ),
        # Exponential gaps by default: the Poisson process both cited papers assume.
        Field(
            "weibull_shape",
            "Weibull shape",
            "float",
            default=1.0,
            lo=0.1,
            hi=10.0,
            help="of the gaps between the job's failures; 1 = exponential",
        ),
    ),
    mappings=("checkpoint", "rates", "lemons"),
)
CHECKPOINT = Section(
    "failures.checkpoint",
    "Checkpoints",
    (
        # Assumed: Llama 3 did not publish its interval.
        Field(
            "interval_min",
            "Checkpoint interval",
            "float",
            default=30.0,
            lo=0.0,
            lo_open=True,
            hi=MAX_INTERVAL_MIN,
            unit="min",
            help="or 'optimal' (Young/Daly) in a file",
        ),
        # Derived by default: state bytes / storage_gbytes_per_s.
        Field(
            "save_s",
            "Save time",
            "float",
            lo=0.0,
            hi=MAX_SECONDS,
            unit="s",
            help="blank = state size / storage bandwidth",
        ),
        Field(
            "async",
            "Asynchronous save",
            "bool",
            default=False,
            help="the job keeps training while a checkpoint is written",
        ),
    ),
)
RATES = Section(
    "failures.rates",
    "Hazard rates",
    (
        Field(
            "server_per_1000_node_days",
            "Server failures per 1,000 node-days",
            "float",
            lo=0.0,
            hi=1000 * MAX_RATE_PER_DAY,
            help="blank = the catalog's GPU, HBM, host, NIC and PSU rates",
        ),
        Field(
            "software_per_day",
            "Software failures per job-day",
            "float",
            default=SOFTWARE_PER_DAY,
            lo=0.0,
            hi=MAX_RATE_PER_DAY,
            help="job crashes from software (NCCL hangs, bugs) per day of the job",
        ),
        Field(
            "maintenance_per_day",
            "Unplanned maintenance per job-day",
            "float",
            default=MAINTENANCE_PER_DAY,
            lo=0.0,
            hi=MAX_RATE_PER_DAY,
            help="unplanned stops of the job per day (drains, urgent fixes)",
        ),
        Field(
            "planned_per_day",
            "Planned maintenance per job-day",
            "float",
            default=PLANNED_PER_DAY,
            lo=0.0,
            hi=MAX_RATE_PER_DAY,
            help="planned stops of the job per day (upgrades, scheduled maintenance)",
        ),
    ),
)
LEMONS = Section(
    "failures.lemons",
    "Lemon nodes",
    (
        # Off unless asked (Kokolis et al. saw 1.2 % of nodes).
        Field(
            "fraction", "Lemon fraction", "float", default=0.0, lo=0.0, hi=0.5, help="of the job's servers"
        ),
        Field(
            "factor",
            "Lemon hazard factor",
            "float",
            default=10.0,
            lo=1.0,
            hi=1000.0,
            help="how much more often a lemon server fails than a healthy one",
        ),  # assumed
        # Assumed: an operator retires a node at its second failure.
        Field(
            "remove_after",
            "Retired after",
            "int",
            default=2,
            lo=1,
            hi=1000,
            unit="failures",
            help="a lemon server leaves the pool after this many failures",
        ),
    ),
)


def _parse_checkpoint(data: Any) -> CheckpointPolicy:
    data = CHECKPOINT.mapping({} if data is None else data)
    optimal = data.get("interval_min") == "optimal"
    values = CHECKPOINT.read({**data, "interval_min": None} if optimal else data)
    return CheckpointPolicy(
        interval_min=None if optimal else values["interval_min"],
        save_s=values["save_s"],
        async_save=values["async"],
    )


def parse_failures(data: Any, where: str = "failures") -> FailureSpec:
    """Parse and validate the ``failures:`` mapping of a scenario; None reads as ``{}``, so both
    give the defaults of the section declarations.

    Raises
    ------
    ScenarioError
        One line naming the field path and its limit.
    """
    data = {} if data is None else data
    values = FAILURES.read(data)
    spec = FailureSpec(
        **values,
        checkpoint=_parse_checkpoint(data.get("checkpoint")),
        rates=RateOverrides(**RATES.read(data.get("rates") or {})),
        lemons=LemonSpec(**LEMONS.read(data.get("lemons") or {})),
    )
    check_failure_spec(spec, where)
    return spec


def check_failure_spec(spec: FailureSpec, where: str = "failures") -> None:
    """Rules between fields of one ``FailureSpec`` (raises :class:`ScenarioError`).

    An asynchronous save must finish before the next checkpoint starts (one save in flight).
    """
    policy = spec.checkpoint
    if policy.async_save and policy.interval_min is not None and policy.save_s is not None:
        if policy.save_s > policy.interval_min * 60.0:
            raise ScenarioError(
                f"{where}.checkpoint.save_s: an asynchronous save must fit in the interval "
                f"({policy.interval_min * 60.0:g} s) (got {policy.save_s:g})"
            )
