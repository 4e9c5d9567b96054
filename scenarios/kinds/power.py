"""Power: the cluster's draw at millisecond resolution from the step's per-stage timeline, per
rack, feed, panel, hall and facility (``scenarios.sim.power``), with the swings, feed limits and
mitigations; the job's life (start, checkpoints, crashes, restarts) comes from the scenario's
latest failures run when it has one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from django import forms

from scenarios.charts import power as power_charts
from scenarios.charts.base import chart
from scenarios.kinds.base import (
    Figure,
    RunKind,
    RunOutput,
    count,
    options_error,
    percent,
    reject_unknown_options,
    require_feasible,
)
from scenarios.metrics import Metric, rack_list
from scenarios.storage import run_array

RACK_PEAK = Metric(
    name="power_rack",
    label="Rack peak power vs budget",
    unit="fraction of budget",
    scale=(0.0, 1.2),
    array="power_rack_budget_fraction",
    description="The rack's simulated peak draw (1 ms) over its power budget.",
)
FEED_PEAK = Metric(
    name="power_feed",
    label="Feed peak vs capacity (busiest feed of the rack)",
    unit="fraction of derated capacity",
    scale=(0.0, 1.2),
    array="power_rack_feed_utilisation",
    description="Simulated peak load of the rack's busiest feed over its derated capacity.",
)

EVENT_SOURCES = (
    ("failures", "the events of the scenario's latest failures run (if any)"),
    ("none", "steady training only"),
)


class PowerOptions(forms.Form):
    events = forms.ChoiceField(
        required=False,
        choices=[("", "default (latest failures run)"), *EVENT_SOURCES],
        label="Job events",
        help_text="the job's stops and restarts the power series replays, besides steady training",
    )


def _mw(value: float) -> str:
    return f"{value:,.2f} MW" if abs(value) < 100 else f"{value:,.0f} MW"


def _grid(summary: dict[str, Any], verdict: str) -> dict[str, Any] | None:
    """The grid check when it gave ``verdict`` (None: no such requirement, or an older run)."""
    grid = summary.get("grid") or {}
    return grid if grid.get(verdict) is not None else None


def _ramp_check_text(grid: dict[str, Any]) -> str:
    word = "met" if grid["ramp_ok"] else "not met"
    return (
        f"{word}: {_mw(grid['minute_swing_mw'])} within a minute ({grid['minute_swing_over']}), "
        f"limit {grid['ramp_limit_mw_per_min']:,.2f} MW/min"
    )


def _band_check_text(grid: dict[str, Any]) -> str:
    word = "met" if grid["band_ok"] else "not met"
    share, cap = percent(grid["band_share"], 0), percent(grid["band_share_max"], 0)
    return f"{word}: {share} of the variance in the band, cap {cap}"


def _storage(summary: dict[str, Any], key: str) -> Any:
    return (summary.get("storage") or {}).get(key)


def _storage_text(joules: float) -> str:
    return f"{joules:,.0f} J"


def _ramp_limit_text(storage: dict[str, Any]) -> str:
    """ "met", or how much storage per GPU the limit would need (the rest passed through)."""
    if storage["ramp_limit_met"]:
        return "met"
    return (
        f"not met: {storage['configured_j_per_gpu']:,.0f} J per GPU, "
        f"{storage['needed_j_per_gpu']:,.0f} J needed ({storage['short_racks']:,} racks short)"
    )


class PowerKind(RunKind):
    name = "power"
    label = "Power"
    options_form = PowerOptions
    metrics = (RACK_PEAK, FEED_PEAK)
    default_metric = RACK_PEAK.name
    panel_template = "scenarios/kinds/power_panel.html"
    script = "js/kinds/power.js"
    figures = (
        Figure("facility_peak_mw", "Facility peak", _mw, lower_is_better=True),
        Figure("facility_trough_mw", "Facility trough", _mw),
        Figure("swing_mw", "Swing (peak − trough)", _mw, lower_is_better=True),
        Figure("max_ramp_mw_per_s", "Fastest ramp", lambda v: f"{v:,.0f} MW/s", lower_is_better=True),
        Figure(
            "band_energy_share", "Variance in the grid's band", lambda v: percent(v, 0), lower_is_better=True
        ),
        Figure("energy_per_day_mwh", "Energy per day", lambda v: f"{v:,.1f} MWh", lower_is_better=True),
        Figure("max_feed_utilisation", "Busiest feed", lambda v: percent(v, 0), lower_is_better=True),
        Figure(
            "max_feed_side_loss_utilisation",
            "Busiest feed, other side lost",
            lambda v: percent(v, 0),
            lower_is_better=True,
        ),
        Figure("feeds_over_limit", "Feeds over their limit", count, lower_is_better=True),
        Figure("racks_over_budget", "Racks over budget", count, lower_is_better=True),
        Figure(
            "storage_used_j_per_gpu",
            "Rack storage used per GPU",
            _storage_text,
            pick=lambda s: _storage(s, "used_j_per_gpu"),
        ),
        Figure(
            "storage_ramp_limit_met",
            "Grid ramp limit",
            _ramp_limit_text,
            pick=lambda s: None if _storage(s, "ramp_limit_met") is None else s["storage"],
        ),
        Figure("grid_ramp", "Utility ramp limit", _ramp_check_text, pick=lambda s: _grid(s, "ramp_ok")),
        Figure("grid_band", "Utility band cap", _band_check_text, pick=lambda s: _grid(s, "band_ok")),
        Figure("event_source", "Job events from", str, live=False),
    )
    state_keys = ("racks_aligned",)

    def clean_options(self, scenario, options: dict[str, Any], *, design=None) -> dict[str, Any]:
        """``{"events": "failures" (the latest failures run's trial, the default) | "none"}``."""
        reject_unknown_options(options, {"events"})
        events = options.get("events") or "failures"
        if events not in dict(EVENT_SOURCES):
            raise options_error("events", f"must be one of {', '.join(dict(EVENT_SOURCES))} (got {events!r})")
        return {"events": events}

    def execute(self, context, progress) -> RunOutput:
        from scenarios.sim.step.model import predict
        from scenarios.sim.studies import power_study

        progress(0.0, "predicting the step and its timeline")
        fabric = context.fabric()
        step = predict(context.checked, catalog=context.catalog, fabric=fabric)
        require_feasible(step)  # the draw of a job that cannot run is no answer
        events, source = self._events(context)
        progress(0.3, "simulating the power draw")
        result = power_study(
            context.checked,
            catalog=context.catalog,
            plan=context.plan(),
            fabric=fabric,
            step=step,
            events=events,
            on_progress=lambda fraction, stage: progress(0.3 + 0.7 * fraction, stage),
        )
        summary = result.to_dict()
        summary["event_source"] = source
        summary["racks_aligned"] = not context.changes_cluster
        arrays = result.to_arrays()
        rack_values = {}
        if summary["racks_aligned"]:
            rack_values = {m.name: rack_list(arrays[m.array]) for m in self.metrics}
        return RunOutput(summary=summary, arrays=arrays, rack_values=rack_values)

    def _events(self, context):
        """The job events: the latest failures run of this scenario, its representative trial."""
        from scenarios.choices import RunStatus
        from scenarios.models import Run
        from scenarios.sim.studies import power_events_from_failures

        if context.options.get("events") == "none":
            return None, "none (steady training)"
        source = (
            Run.objects.filter(scenario=context.run.scenario, kind="failures", status=RunStatus.SUCCEEDED)
            .order_by("-finished", "-pk")
            .first()
        )
        if source is None:
            return None, "none (this scenario has no finished failures run)"
        summary = source.summary or {}
        recovery = summary.get("recovery_s") or {}
        blocking = not ((context.run.scenario.failures or {}).get("checkpoint") or {}).get("async", False)
        events = power_events_from_failures(
            summary.get("event_log"),
            checkpoint_s=float(recovery.get("save") or 0.0) if blocking else 0.0,
            interval_s=float(summary.get("checkpoint_interval_min") or 0.0) * 60.0,
        )
        return events, f"failures run #{source.pk} (trial {summary.get('representative_trial')})"

    # --- showing --------------------------------------------------------------------------------

    def charts(self, run) -> list[dict[str, Any]]:
        summary = run.summary or {}
        facility = run_array(run=run, name="power_facility_mw")
        out = []
        if facility is not None and facility.size:
            resolution_s = float(summary.get("resolution_ms") or 1.0) / 1000.0
            out.append(
                chart(
                    "facility",
                    "Facility power",
                    power_charts.power_series_figure(facility, resolution_s, summary),
                )
            )
            out.append(
                chart(
                    "spectrum",
                    "Spectrum of the facility draw",
                    power_charts.spectrum_figure(facility, resolution_s, summary),
                )
            )
        coarse = run_array(run=run, name="power_coarse_facility_mw")
        if coarse is not None and coarse.size and (summary.get("coarse") or {}).get("resolution_s"):
            out.append(
                chart(
                    "job-timeline",
                    "The job's life (failures run events)",
                    power_charts.coarse_power_figure(
                        coarse, float(summary["coarse"]["resolution_s"]), summary
                    ),
                )
            )
        if summary.get("mitigations"):
            out.append(chart("mitigations", "Mitigations", power_charts.mitigations_figure(summary)))
        return out

    def compare_charts(self, runs: Sequence) -> list[dict[str, Any]]:
        labels = [f"#{r.pk} {r.scenario_name}" for r in runs]
        return [
            chart(
                "compare-power",
                "Facility power",
                power_charts.power_compare_figure(labels, [r.summary or {} for r in runs]),
            )
        ]

    def page_context(self, run) -> dict[str, Any]:
        """The busiest feeds (the page's table) from the stored per-feed arrays."""
        names = ("power_feed_utilisation", "power_feed_side_loss_utilisation", "power_feed_peak_kw")
        values = {n: run_array(run=run, name=n) for n in names}
        summary = run.summary or {}
        out = {
            "feeds": [],
            "racks_aligned": summary.get("racks_aligned", False),
            "event_source": summary.get("event_source", ""),
            "coarse": summary.get("coarse"),
        }
        if any(v is None for v in values.values()):
            return out
        from topology.models import PowerFeed

        feeds = list(
            PowerFeed.objects.filter(design=run.scenario.design)
            .order_by("pk")
            .values_list("name", "panel", "side")
        )
        if len(feeds) != values["power_feed_peak_kw"].size:
            return out
        order = np.argsort(-values["power_feed_side_loss_utilisation"])[:10]
        return {
            **out,
            "feeds": [
                {
                    "name": feeds[i][0],
                    "panel": feeds[i][1],
                    "side": "AB"[feeds[i][2]] if feeds[i][2] in (0, 1) else feeds[i][2],
                    "peak_kw": float(values["power_feed_peak_kw"][i]),
                    "utilisation": float(values["power_feed_utilisation"][i]),
                    "side_loss": float(values["power_feed_side_loss_utilisation"][i]),
                }
                for i in order
            ],
        }


KIND = PowerKind()
