"""The ``failures:`` section of a scenario: parse and validate it into a frozen ``FailureSpec``.

Every key has a default, a bound and a source (``docs/failure-model.md`` lists them). Every
mistake raises :class:`~scenarios.sim.scenario.ScenarioError` with one line naming the field
path and the limit, e.g. ``failures.trials: must be an integer from 1 to 100,000 (got 0)``.

The non-hardware default rates come from Dubey et al., "The Llama 3 Herd of Models" (2024),
Section 3.3.4 / Table 5: 419 unexpected and 47 planned interruptions of one 2,048-server job in
54 days (``shared/calibration/llama3-interruptions.yaml``). They are per *job*-day, not per
server, following Kokolis et al. (HPCA 2025, arXiv 2410.21680): one per-node rate cannot fit
both small-job and large-job MTTF, so software and operations faults form a per-job process.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scenarios.sim.errors import ScenarioError

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


@dataclass(frozen=True)
class CheckpointPolicy:
    """When and how the job saves its state.

    ``interval_min`` is the failure-free compute time between checkpoint starts (None: the
    Young/Daly optimum for the model's MTTF). ``save_s`` is the time one save takes (None:
    derived from the state size and ``storage_gbytes_per_s``). ``async_save`` overlaps the save
    with training: no pause, but the checkpoint only counts once the save has finished.
    """

    interval_min: float | None = 30.0  # assumed (Llama 3 did not publish its interval)
    save_s: float | None = None  # derived by default: state bytes / storage_gbytes_per_s
    async_save: bool = False


@dataclass(frozen=True)
class RateOverrides:
    """Hazard rates that replace the catalog-derived or Llama-derived defaults.

    ``server_per_1000_node_days`` replaces the sum of every per-server hardware hazard (GPU,
    HBM, host, NIC, PSU), keeping their proportions (Kokolis et al. fit 6.5 failures per 1,000
    node-days on their RSC-1 cluster). The other three are per job-day.
    """

    server_per_1000_node_days: float | None = None
    software_per_day: float = SOFTWARE_PER_DAY
    maintenance_per_day: float = MAINTENANCE_PER_DAY
    planned_per_day: float = PLANNED_PER_DAY


@dataclass(frozen=True)
class LemonSpec:
    """Lemon nodes (a what-if): ``fraction`` of the job's servers fail ``factor`` times as often
    (server hardware hazards) and leave the pool for good at their ``remove_after``-th failure.
    Kokolis et al. found lemon nodes were 1.2% of nodes yet touched 13% of daily jobs."""

    fraction: float = 0.0  # off unless asked (Kokolis et al. saw 1.2% of nodes)
    factor: float = 10.0  # assumed
    remove_after: int = 2  # assumed: an operator retires a node at its second failure


@dataclass(frozen=True)
class FailureSpec:
    """The ``failures:`` section: Monte Carlo size, recovery, checkpointing, spares and rates.

    Times carry their unit in the name. ``window_days`` switches from "how long does the job
    take" to "how much productive time does a fixed window give". ``weibull_shape`` is the shape
    of the gaps between consecutive failure events of the whole job (a renewal process in wall
    time with the same mean as the Poisson process; 1 = exponential); components are not aged
    one by one.
    """

    trials: int = 1000
    seed: int = 0
    window_days: float | None = None
    steps: int | None = None
    checkpoint: CheckpointPolicy = field(default_factory=CheckpointPolicy)
    # Recovery and repair times: Dubey et al. (2024) publish none of them; assumed defaults.
    detection_s: float = 60.0  # assumed: a heartbeat/watchdog noticing a dead rank within a minute
    restart_min: float = 10.0  # assumed: reschedule, container start, NCCL init at 10k+ GPUs
    reload_s: float | None = None  # derived by default: bytes read / storage_gbytes_per_s
    storage_gbytes_per_s: float = STORAGE_GBYTES_PER_S
    spare_servers: int = 16  # assumed: half a 32-server scalable unit held back
    repair_hours: float = 48.0  # assumed: vendor RMA / on-site swap of a server part in two days
    switch_repair_hours: float = 4.0  # assumed: on-site spare switch swapped within a shift
    link_repair_hours: float = 4.0  # assumed: optic or cable swapped within a shift
    feed_repair_hours: float = 8.0  # assumed: breaker or whip replaced by the facility electrician
    rates: RateOverrides = field(default_factory=RateOverrides)
    weibull_shape: float = 1.0  # exponential gaps (the Poisson process both cited papers assume)
    lemons: LemonSpec = field(default_factory=LemonSpec)

    @property
    def window_s(self) -> float | None:
        return None if self.window_days is None else self.window_days * 86_400.0


# --- field readers ------------------------------------------------------------------------


def _number_text(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,g}"


def _mapping(data: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: must be a mapping (got {type(data).__name__})")
    return data


def _reject_unknown(data: Mapping[str, Any], where: str, known: set[str]) -> None:
    unknown = sorted(set(map(str, data)) - known)
    if unknown:
        raise ScenarioError(f"{where}.{unknown[0]}: unknown field (known: {', '.join(sorted(known))})")


def _int(data: Mapping[str, Any], key: str, where: str, default: int | None, lo: int, hi: int):
    value = data.get(key)
    if value is None:
        return default
    integral = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and value == int(value)
    )
    if not integral or not lo <= value <= hi:
        shown = f"{int(value):,}" if integral else repr(value)
        raise ScenarioError(f"{where}.{key}: must be an integer from {lo:,} to {hi:,} (got {shown})")
    return int(value)


def _float(
    data: Mapping[str, Any],
    key: str,
    where: str,
    default: float | None,
    lo: float,
    hi: float,
    *,
    lo_open: bool = False,
):
    value = data.get(key)
    if value is None:
        return default
    ok = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
    below = ok and ((value <= lo) if lo_open else (value < lo))
    if not ok or below or value > hi:
        low = f"above {_number_text(lo)}" if lo_open else f"from {_number_text(lo)}"
        shown = f"{value:g}" if ok else repr(value)
        raise ScenarioError(f"{where}.{key}: must be a number {low} to {_number_text(hi)} (got {shown})")
    return float(value)


def _bool(data: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise ScenarioError(f"{where}.{key}: must be true or false (got {value!r})")
    return value


# --- sections -----------------------------------------------------------------------------


def _parse_checkpoint(data: Any, where: str) -> CheckpointPolicy:
    if data is None:
        return CheckpointPolicy()
    data = _mapping(data, where)
    _reject_unknown(data, where, {"interval_min", "save_s", "async"})
    interval = data.get("interval_min", 30.0)
    if interval == "optimal":
        interval_min = None
    else:
        try:
            interval_min = _float(data, "interval_min", where, 30.0, 0.0, MAX_INTERVAL_MIN, lo_open=True)
        except ScenarioError:
            raise ScenarioError(
                f"{where}.interval_min: must be a number above 0 to {MAX_INTERVAL_MIN:,.0f} or 'optimal' "
                f"(got {interval!r})"
            ) from None
    return CheckpointPolicy(
        interval_min=interval_min,
        save_s=_float(data, "save_s", where, None, 0.0, MAX_SECONDS),
        async_save=_bool(data, "async", where, False),
    )


def _parse_rates(data: Any, where: str) -> RateOverrides:
    if data is None:
        return RateOverrides()
    data = _mapping(data, where)
    keys = {"server_per_1000_node_days", "software_per_day", "maintenance_per_day", "planned_per_day"}
    _reject_unknown(data, where, keys)
    return RateOverrides(
        server_per_1000_node_days=_float(
            data, "server_per_1000_node_days", where, None, 0.0, 1000 * MAX_RATE_PER_DAY
        ),
        software_per_day=_float(data, "software_per_day", where, SOFTWARE_PER_DAY, 0.0, MAX_RATE_PER_DAY),
        maintenance_per_day=_float(
            data, "maintenance_per_day", where, MAINTENANCE_PER_DAY, 0.0, MAX_RATE_PER_DAY
        ),
        planned_per_day=_float(data, "planned_per_day", where, PLANNED_PER_DAY, 0.0, MAX_RATE_PER_DAY),
    )


def _parse_lemons(data: Any, where: str) -> LemonSpec:
    if data is None:
        return LemonSpec()
    data = _mapping(data, where)
    _reject_unknown(data, where, {"fraction", "factor", "remove_after"})
    return LemonSpec(
        fraction=_float(data, "fraction", where, 0.0, 0.0, 0.5),
        factor=_float(data, "factor", where, 10.0, 1.0, 1000.0),
        remove_after=_int(data, "remove_after", where, 2, 1, 1000),
    )


FAILURE_KEYS = {
    "trials",
    "seed",
    "window_days",
    "steps",
    "checkpoint",
    "detection_s",
    "restart_min",
    "reload_s",
    "storage_gbytes_per_s",
    "spare_servers",
    "repair_hours",
    "switch_repair_hours",
    "link_repair_hours",
    "feed_repair_hours",
    "rates",
    "weibull_shape",
    "lemons",
}


def parse_failures(data: Any, where: str = "failures") -> FailureSpec:
    """Parse and validate the ``failures:`` mapping of a scenario (None gives the defaults).

    Parameters
    ----------
    data : mapping or None
        The section as read from YAML.
    where : str
        Field path prefix used in error messages.

    Returns
    -------
    FailureSpec

    Raises
    ------
    ScenarioError
        One line naming the field path and its limit.
    """
    if data is None:
        return FailureSpec()
    data = _mapping(data, where)
    _reject_unknown(data, where, FAILURE_KEYS)
    spec = FailureSpec(
        trials=_int(data, "trials", where, 1000, 1, MAX_TRIALS),
        seed=_int(data, "seed", where, 0, 0, 2**63 - 1),
        window_days=_float(data, "window_days", where, None, 0.0, MAX_WINDOW_DAYS, lo_open=True),
        steps=_int(data, "steps", where, None, 1, MAX_STEPS),
        checkpoint=_parse_checkpoint(data.get("checkpoint"), f"{where}.checkpoint"),
        detection_s=_float(data, "detection_s", where, 60.0, 0.0, MAX_SECONDS),
        restart_min=_float(data, "restart_min", where, 10.0, 0.0, 1440.0),
        reload_s=_float(data, "reload_s", where, None, 0.0, MAX_SECONDS),
        storage_gbytes_per_s=_float(
            data,
            "storage_gbytes_per_s",
            where,
            STORAGE_GBYTES_PER_S,
            0.0,
            MAX_STORAGE_GBYTES_PER_S,
            lo_open=True,
        ),
        spare_servers=_int(data, "spare_servers", where, 16, 0, MAX_SPARE_SERVERS),
        repair_hours=_float(data, "repair_hours", where, 48.0, 0.0, MAX_HOURS),
        switch_repair_hours=_float(data, "switch_repair_hours", where, 4.0, 0.0, MAX_HOURS),
        link_repair_hours=_float(data, "link_repair_hours", where, 4.0, 0.0, MAX_HOURS),
        feed_repair_hours=_float(data, "feed_repair_hours", where, 8.0, 0.0, MAX_HOURS),
        rates=_parse_rates(data.get("rates"), f"{where}.rates"),
        weibull_shape=_float(data, "weibull_shape", where, 1.0, 0.1, 10.0),
        lemons=_parse_lemons(data.get("lemons"), f"{where}.lemons"),
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
