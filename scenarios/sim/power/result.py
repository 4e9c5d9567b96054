"""The result of a power simulation and the per-rack / per-feed / per-panel statistics behind it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse

from scenarios.sim.format.power import PowerSpec
from scenarios.sim.power.feeds import LossCases, loss_cases, rack_max_of_feeds, signature_stats
from scenarios.sim.power.inputs import PowerInputs
from scenarios.sim.power.series import block_mean
from utilities.jsonsafe import json_safe

__all__ = ["MAX_LISTED", "PowerResult", "entity_arrays", "feeds_over_limit", "racks_over_budget"]

#: Entries of each over-limit list in ``to_dict`` (the arrays hold every rack and feed).
MAX_LISTED = 100


@dataclass(frozen=True, eq=False)
class PowerResult:
    """Power of one design running one job (R racks, F feeds, P panels, H halls, T samples).

    Attributes
    ----------
    spec : PowerSpec
    facility, baseline : dict
        Facility figures as configured (every mitigation of ``spec`` applied) and with none:
        peak/trough/mean/swing (MW), max ramp (MW/s), band share and RMS, energy per step and
        per day (MWh), step time (s).
    mitigations : dict[str, dict]
        Each configured mitigation alone (and ``combined`` when there are several), with
        ``swing_reduction`` (fraction of the baseline swing), ``extra_mwh_per_day`` (energy for
        one baseline day of training work, minus the baseline's) and ``slowdown`` (fraction).
    grid : dict
        The utility's requirement checked: ``minute_swing_mw`` against ``ramp_limit_mw_per_min``
        (``ramp_ok``), ``band_share`` against ``band_share_max`` (``band_ok``), and
        ``oscillations``: the variance share and RMS near each reported oscillation frequency.
    facility_mw : ndarray (T,)
        Facility power at ``spec.resolution_ms`` (configured).
    hall_mw : ndarray (H, T)
        IT power of each hall.
    row_gpu_w : ndarray (W, T)
        Power of one GPU of each row (stage, or stage x stagger group), float32.
    rack_* , feed_* , panel_* : ndarray
        Per-entity statistics at full resolution (kW; times in s, NaN when never over).
    rack_series_kw, feed_series_kw : ndarray (R, T_s), (F, T_s)
        Stored series, means over ``store_block`` samples, float32.
    coarse : dict or None
        Event-timeline figures; ``coarse_facility_mw`` (T_c,) and ``coarse_rack_kw`` (R, frames).
    """

    spec: PowerSpec
    dt_s: float
    store_dt_s: float
    facility: dict[str, Any]
    baseline: dict[str, Any]
    mitigations: dict[str, dict[str, Any]]
    storage: dict[str, Any] | None
    grid: dict[str, Any]
    feeds_over_limit: list[dict[str, Any]]
    racks_over_budget: list[dict[str, Any]]
    counts: dict[str, int]
    facility_mw: np.ndarray = field(repr=False)
    hall_mw: np.ndarray = field(repr=False)
    row_gpu_w: np.ndarray = field(repr=False)
    rack_arrays: dict[str, np.ndarray] = field(repr=False)
    feed_arrays: dict[str, np.ndarray] = field(repr=False)
    panel_arrays: dict[str, np.ndarray] = field(repr=False)
    rack_series_kw: np.ndarray = field(repr=False)
    feed_series_kw: np.ndarray = field(repr=False)
    coarse: dict[str, Any] | None = None
    coarse_facility_mw: np.ndarray | None = field(default=None, repr=False)
    coarse_rack_kw: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self, *, arrays: bool = False) -> dict[str, Any]:
        """JSON-ready summary (what ``simulate --power --json`` prints); ``arrays`` adds the
        per-rack and per-feed statistics as lists."""
        out: dict[str, Any] = {
            "window_s": self.spec.window_s,
            "resolution_ms": self.spec.resolution_ms,
            "samples": int(self.facility_mw.size),
            "facility_peak_mw": self.facility["peak_mw"],
            "facility_trough_mw": self.facility["trough_mw"],
            "facility_mean_mw": self.facility["mean_mw"],
            "swing_mw": self.facility["swing_mw"],
            "max_ramp_mw_per_s": self.facility["max_ramp_mw_per_s"],
            "band_hz": list(self.spec.band_hz),
            "band_energy_share": self.facility["band_energy_share"],
            "band_rms_mw": self.facility["band_rms_mw"],
            "energy_per_step_mwh": self.facility["energy_per_step_mwh"],
            "energy_per_day_mwh": self.facility["energy_per_day_mwh"],
            "step_time_s": self.facility["step_time_s"],
            "halls": [
                {"hall": h, "peak_mw": float(row.max()), "mean_mw": float(row.mean())}
                for h, row in enumerate(self.hall_mw)
            ],
            "feeds_over_limit": json_safe(self.feeds_over_limit[:MAX_LISTED]),
            "racks_over_budget": json_safe(self.racks_over_budget[:MAX_LISTED]),
            "counts": dict(self.counts),
            "max_feed_utilisation": _max(self.feed_arrays["feed_utilisation"]),
            "max_feed_side_loss_utilisation": _max(self.feed_arrays["feed_side_loss_utilisation"]),
            "max_feed_loss_utilisation": _max(self.feed_arrays["feed_loss_utilisation"]),
            "max_rack_budget_fraction": _max(self.rack_arrays["rack_budget_fraction"]),
            "events": [
                {"kind": e.kind, "at_s": e.at_s, "duration_s": e.duration_s} for e in self.spec.events
            ],
            "facility": json_safe(self.facility),
            "baseline": json_safe(self.baseline),
            "mitigations": json_safe(self.mitigations),
            "storage": json_safe(self.storage),
            "grid": json_safe(self.grid),
            "coarse": json_safe(self.coarse),
        }
        if arrays:
            for group in (self.rack_arrays, self.feed_arrays, self.panel_arrays):
                out.update({name: json_safe(_rounded(values)) for name, values in group.items()})
        return out

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Every array of the result by name (series as float32), for run storage."""
        out = {
            "power_facility_mw": self.facility_mw.astype(np.float32),
            "power_hall_mw": self.hall_mw.astype(np.float32),
            "power_row_gpu_w": self.row_gpu_w.astype(np.float32),
            "power_rack_series_kw": self.rack_series_kw,
            "power_feed_series_kw": self.feed_series_kw,
        }
        for group in (self.rack_arrays, self.feed_arrays, self.panel_arrays):
            out.update({f"power_{name}": values for name, values in group.items()})
        if self.coarse_facility_mw is not None:
            out["power_coarse_facility_mw"] = self.coarse_facility_mw
            out["power_coarse_rack_kw"] = self.coarse_rack_kw
        return out


def _rounded(values: np.ndarray) -> np.ndarray:
    return np.round(values, 4) if np.issubdtype(values.dtype, np.floating) else values


def _max(values: np.ndarray) -> float:
    return float(np.max(values, initial=0.0))


def _seconds(index: np.ndarray, dt_s: float) -> np.ndarray:
    return np.where(index >= 0, index * dt_s, np.nan)


def entity_arrays(
    inputs: PowerInputs,
    counts: np.ndarray,
    idle_dc_w: np.ndarray,
    series: np.ndarray,
    *,
    dt_s: float,
    block: int,
    rack_storage_kj: np.ndarray | None = None,
) -> dict[str, Any]:
    """Statistics of every rack, feed (normal, side loss, worst single loss) and panel.

    Parameters
    ----------
    inputs : PowerInputs
    counts : ndarray, shape (R, W + 1)
        GPUs of each row in every rack, then its servers.
    idle_dc_w : ndarray, shape (R,)
        Constant DC draw of each rack (GPUs outside the job, servers without job GPUs) (W).
    series : ndarray, shape (W + 1, T)
        W per GPU of each row, then W per server (grid side when storage smooths it).
    dt_s : float
    block : int
        Samples per stored sample of ``rack_series_kw`` / ``feed_series_kw``.
    rack_storage_kj : ndarray (R,), optional
        Storage each rack needs, added to the rack arrays.

    Returns
    -------
    dict
        ``rack``, ``feed``, ``panel`` (name -> ndarray), ``rack_series_kw`` (R, T_s),
        ``feed_series_kw`` (F, T_s) float32, ``signatures`` (distinct series evaluated).
    """
    n_racks, n_feeds = inputs.n_racks, inputs.n_feeds
    eta = inputs.psu_efficiency
    coefficients = counts / eta  # (R, W + 1), AC W per unit of the base series
    constant = idle_dc_w / eta + inputs.rack_static_w
    cases = loss_cases(inputs.pair_feed, inputs.pair_rack, inputs.feed_side, n_racks, n_feeds)
    weights, limit, part = _entity_weights(inputs, cases)
    stats = signature_stats(weights @ coefficients, weights @ constant, limit, series)
    peak, mean, over = stats.peak / 1000.0, stats.mean / 1000.0, _seconds(stats.over_index, dt_s)
    capacity = np.where(inputs.feed_capacity_kw > 0, inputs.feed_capacity_kw, np.inf)
    budget = np.where(inputs.rack_budget_kw > 0, inputs.rack_budget_kw, np.inf)
    loss_peak, loss_lost, loss_over = _worst_single_loss(cases, peak[part[1]], peak[part[3]], over[part[3]])
    store = block_mean(series, block)
    rack_series = (coefficients @ store + constant[:, None]) / 1000.0
    feed_series = cases.normal @ rack_series
    util = peak[part[1]] / capacity
    side_util = peak[part[2]] / capacity
    rack = {
        "rack_peak_kw": peak[part[0]],
        "rack_mean_kw": mean[part[0]],
        "rack_budget_kw": inputs.rack_budget_kw,
        "rack_budget_fraction": peak[part[0]] / budget,
        "rack_peak_time_s": stats.peak_index[part[0]] * dt_s,
        "rack_over_budget": peak[part[0]] > inputs.rack_budget_kw,
        "rack_over_time_s": over[part[0]],
        "rack_feed_utilisation": rack_max_of_feeds(util, inputs.pair_feed, inputs.pair_rack, n_racks),
        "rack_feed_side_loss_utilisation": rack_max_of_feeds(
            side_util, inputs.pair_feed, inputs.pair_rack, n_racks
        ),
    }
    if rack_storage_kj is not None:
        rack["rack_storage_needed_kj"] = rack_storage_kj
    feed = {
        "feed_peak_kw": peak[part[1]],
        "feed_mean_kw": mean[part[1]],
        "feed_capacity_kw": inputs.feed_capacity_kw,
        "feed_utilisation": util,
        "feed_overloaded": util > 1.0,
        "feed_over_time_s": over[part[1]],
        "feed_side_loss_peak_kw": peak[part[2]],
        "feed_side_loss_utilisation": side_util,
        "feed_side_loss_overloaded": side_util > 1.0,
        "feed_side_loss_over_time_s": over[part[2]],
        "feed_loss_peak_kw": loss_peak,
        "feed_loss_utilisation": loss_peak / capacity,
        "feed_loss_overloaded": loss_peak / capacity > 1.0,
        "feed_loss_lost_feed": loss_lost,
        "feed_loss_over_time_s": loss_over,
    }
    panel = {"panel_peak_kw": peak[part[4]], "panel_mean_kw": mean[part[4]]}
    return {
        "rack": rack,
        "feed": feed,
        "panel": panel,
        "rack_series_kw": rack_series.astype(np.float32),
        "feed_series_kw": np.asarray(feed_series, dtype=np.float32),
        "signatures": stats.n_signatures,
    }


def _entity_weights(
    inputs: PowerInputs, cases: LossCases
) -> tuple[sparse.csr_matrix, np.ndarray, list[slice]]:
    """Rack weights of every entity (racks, feeds normal / side loss / single loss, panels),
    stacked, their limits (W) and the slice of each part."""
    n_racks, n_feeds = inputs.n_racks, inputs.n_feeds
    n_panels = max(len(inputs.panel_name), int(np.max(inputs.feed_panel, initial=-1)) + 1)
    panel_of = sparse.csr_matrix(
        (np.ones(n_feeds), (inputs.feed_panel, np.arange(n_feeds))), shape=(n_panels, n_feeds)
    )
    parts = [
        sparse.identity(n_racks, format="csr"),
        cases.normal,
        cases.side_loss,
        cases.pair,
        panel_of @ cases.normal,
    ]
    capacity_w = inputs.feed_capacity_kw * 1000.0
    limit = np.concatenate(
        [
            inputs.rack_budget_kw * 1000.0,
            capacity_w,
            capacity_w,
            capacity_w[cases.pair_feed],
            np.full(n_panels, np.inf),
        ]
    )
    cuts = np.cumsum([0, *(p.shape[0] for p in parts)])
    return sparse.vstack(parts).tocsr(), limit, [slice(cuts[i], cuts[i + 1]) for i in range(len(parts))]


def _worst_single_loss(cases: LossCases, normal_kw: np.ndarray, pair_kw: np.ndarray, pair_over_s: np.ndarray):
    """Per feed: the peak after its worst single feed loss, the lost feed (-1: none), the first
    time over capacity in that case."""
    loss_peak = normal_kw.copy()
    loss_lost = np.full(normal_kw.size, -1, dtype=np.int64)
    loss_over = np.full(normal_kw.size, np.nan)
    if cases.pair_feed.size:
        order = np.lexsort((pair_kw, cases.pair_feed))  # by feed, then by peak: the last is worst
        best = order[np.flatnonzero(np.append(np.diff(cases.pair_feed[order]) != 0, True))]
        feed = cases.pair_feed[best]
        loss_peak[feed] = np.maximum(pair_kw[best], loss_peak[feed])
        loss_lost[feed] = cases.pair_lost[best]
        loss_over[feed] = pair_over_s[best]
    return loss_peak, loss_lost, loss_over


def feeds_over_limit(inputs: PowerInputs, feed: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """Every (feed, case) over its derated capacity, worst first."""
    rows = []
    cases = (
        ("normal", "feed_peak_kw", "feed_over_time_s"),
        ("side_loss", "feed_side_loss_peak_kw", "feed_side_loss_over_time_s"),
        ("feed_loss", "feed_loss_peak_kw", "feed_loss_over_time_s"),
    )
    capacity = inputs.feed_capacity_kw
    for case, peak_key, time_key in cases:  # three named cases; JSON rows for at most 100 feeds each
        utilisation = feed[peak_key] / np.where(capacity > 0, capacity, np.inf)
        over = np.flatnonzero(feed[peak_key] > capacity)
        worst = over[np.argsort(-utilisation[over], kind="stable")][:MAX_LISTED]
        rows.extend(
            {
                "feed": f,
                "panel": inputs.panel_name[inputs.feed_panel[f]] if inputs.panel_name else None,
                "side": "AB"[int(inputs.feed_side[f])],
                "case": case,
                "lost_feed": int(feed["feed_loss_lost_feed"][f]) if case == "feed_loss" else None,
                "peak_kw": float(feed[peak_key][f]),
                "capacity_kw": float(capacity[f]),
                "utilisation": float(utilisation[f]),
                "time_s": float(feed[time_key][f]),
            }
            for f in worst.tolist()
        )
    return sorted(rows, key=lambda r: -r["utilisation"])


def racks_over_budget(inputs: PowerInputs, rack: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """Every rack whose peak exceeds its budget, worst first (at most ``MAX_LISTED``)."""
    over = np.flatnonzero(rack["rack_peak_kw"] > inputs.rack_budget_kw)
    over = over[np.argsort(-rack["rack_budget_fraction"][over], kind="stable")][:MAX_LISTED]
    return [
        {
            "rack": r,
            "name": inputs.rack_name[r] if inputs.rack_name else None,
            "peak_kw": float(rack["rack_peak_kw"][r]),
            "budget_kw": float(inputs.rack_budget_kw[r]),
            "fraction": float(rack["rack_budget_fraction"][r]),
            "time_s": float(rack["rack_over_time_s"][r]),
        }
        for r in over.tolist()
    ]
