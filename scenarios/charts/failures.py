"""Figures of a failures run: the wall time over the trials, where the time goes, ETTR against
the checkpoint interval and the interruptions by category (the last two also compare runs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from scenarios.charts.base import PALETTE, figure_layout

BADPUT_LABELS = {
    "goodput": "Productive training (goodput)",
    "rework": "Rework since the last checkpoint",
    "detection": "Detecting the failure",
    "restart": "Restart and initialisation",
    "reload": "Checkpoint reload",
    "checkpoint": "Checkpoint saves",
    "spare_wait": "Waiting for a spare server",
    "degraded_slowdown": "Slow steps on a degraded fabric",
    "planned_maintenance": "Planned maintenance",
}


CATEGORY_LABELS = {
    "gpu": "GPU / HBM",
    "host": "Host (CPU, memory, NIC, PSU...)",
    "network": "Network switch / link",
    "software": "Software / NCCL",
    "maintenance": "Unplanned maintenance",
    "power": "Power feed",
}


def wall_time_figure(wall_time_s: np.ndarray, summary: dict[str, Any]) -> go.Figure:
    """Histogram of the per-trial wall time (days), p5 / p50 / p95 marked."""
    days = np.asarray(wall_time_s, dtype=float) / 86_400.0
    figure = go.Figure(
        layout=figure_layout(
            "Wall time to finish, over the trials",
            xaxis={"title": {"text": "days"}, "gridcolor": "#eee"},
            yaxis={"title": {"text": "trials"}, "gridcolor": "#eee"},
            bargap=0.05,
        )
    )
    figure.add_trace(go.Histogram(x=days, nbinsx=40, marker_color=PALETTE[0], name="trials"))
    for key, dash in (("p5", "dot"), ("p50", "solid"), ("p95", "dot")):
        value = (summary.get("wall_time_days") or {}).get(key)
        if value is not None:
            figure.add_vline(x=value, line_dash=dash, line_color="#333", annotation_text=key)
    return figure


def badput_figure(labels: Sequence[str], summaries: Sequence[dict[str, Any]]) -> go.Figure:
    """Where the wall time goes (mean hours per run).

    One run: a bar per cause of lost time, largest first, the goodput in the title (beside weeks
    of training the causes would be slivers of one stacked bar). Several runs: one stacked bar
    per run, goodput first, so the runs line up.
    """
    if len(summaries) == 1:
        return _lost_time_figure(summaries[0])
    figure = go.Figure(
        layout=figure_layout(
            "Where the time goes (mean per run)",
            barmode="stack",
            xaxis={"title": {"text": "hours"}, "gridcolor": "#eee"},
            yaxis={"automargin": True, "autorange": "reversed"},
        )
    )
    for i, key in enumerate(BADPUT_LABELS):
        values = [_time_s(s, key) for s in summaries]
        if not any(values):
            continue
        figure.add_trace(
            go.Bar(
                name=BADPUT_LABELS[key],
                y=list(labels),
                x=[v / 3600.0 for v in values],
                orientation="h",
                marker_color=PALETTE[i % len(PALETTE)],
                hovertemplate="%{x:,.1f} h<extra>" + BADPUT_LABELS[key] + "</extra>",
            )
        )
    return figure


def _time_s(summary: dict[str, Any], key: str) -> float:
    if key == "goodput":
        return float(summary.get("goodput_s") or 0.0)
    return float((summary.get("badput") or {}).get(key, 0.0))


def _lost_time_figure(summary: dict[str, Any]) -> go.Figure:
    lost = sorted(
        ((BADPUT_LABELS[k], _time_s(summary, k) / 3600.0) for k in BADPUT_LABELS if k != "goodput"),
        key=lambda item: -item[1],
    )
    lost = [(label, hours) for label, hours in lost if hours > 0]
    good_h = _time_s(summary, "goodput") / 3600.0
    total_h = good_h + sum(h for _, h in lost)
    # The figures go in the subtitle: in one line the title ran off a third-width cell, and a
    # second line made with <br> was drawn above the chart's top edge (plotly anchors the first).
    figure = go.Figure(
        layout=figure_layout(
            "Lost time by cause",
            subtitle=f"mean per run; {good_h:,.1f} h of {total_h:,.1f} h trained",
            xaxis={"title": {"text": "hours lost"}, "gridcolor": "#eee"},
            yaxis={"automargin": True, "autorange": "reversed"},
            showlegend=False,
        )
    )
    figure.add_trace(
        go.Bar(
            y=[label for label, _ in lost],
            x=[hours for _, hours in lost],
            orientation="h",
            marker_color=PALETTE[1],
            hovertemplate="%{x:,.2f} h<extra>%{y}</extra>",
        )
    )
    return figure


def interval_figure(summary: dict[str, Any]) -> go.Figure:
    """ETTR against the checkpoint interval (the sweep), with the run's and the optimal interval.

    The two intervals are drawn as traces, not ``add_vline``: on a log axis a shape's annotation
    is placed at log10(x), which pushed the axis out to 10^30.
    """
    sweep = sorted(summary.get("checkpoint_sweep") or [], key=lambda r: r["interval_min"])
    etr = [r["etr"] for r in sweep]
    figure = go.Figure(
        layout=figure_layout(
            "ETTR against the checkpoint interval",
            xaxis={"title": {"text": "checkpoint interval (min)"}, "type": "log", "gridcolor": "#eee"},
            yaxis={"title": {"text": "ETTR"}, "tickformat": ".1%", "gridcolor": "#eee"},
        )
    )
    figure.add_trace(
        go.Scatter(
            x=[r["interval_min"] for r in sweep],
            y=etr,
            mode="lines+markers",
            name="simulated ETTR",
            marker_color=PALETTE[0],
            hovertemplate="%{x:,.2f} min: %{y:.2%}<extra></extra>",
        )
    )
    low, high = (min(etr), max(etr)) if etr else (0.0, 1.0)
    for key, label, color in (
        ("optimal_checkpoint_interval_min", "optimal (Young/Daly)", "#54a24b"),
        ("checkpoint_interval_min", "this run", "#e45756"),
    ):
        value = summary.get(key)
        if value:
            figure.add_trace(
                go.Scatter(
                    x=[value, value],
                    y=[low, high],
                    mode="lines",
                    name=f"{label}: {value:,.1f} min",
                    line={"color": color, "dash": "dash"},
                    hoverinfo="skip",
                )
            )
    return figure


def interruptions_figure(labels: Sequence[str], summaries: Sequence[dict[str, Any]]) -> go.Figure:
    """Mean interruptions per run by category, one group of bars per run."""
    categories = sorted(
        {c for s in summaries for c in ((s.get("interruptions") or {}).get("by_category") or {})},
        key=lambda c: list(CATEGORY_LABELS).index(c) if c in CATEGORY_LABELS else 99,
    )
    # Horizontal bars: the category names read in full on the y axis; as x tick labels six of
    # them in a third-width cell ran into one another.
    figure = go.Figure(
        layout=figure_layout(
            "Interruptions by category (mean per run)",
            barmode="group",
            xaxis={"title": {"text": "interruptions"}, "gridcolor": "#eee"},
            yaxis={"automargin": True, "autorange": "reversed"},
            showlegend=len(summaries) > 1,
        )
    )
    for i, (label, summary) in enumerate(zip(labels, summaries, strict=True)):
        by = (summary.get("interruptions") or {}).get("by_category") or {}
        figure.add_trace(
            go.Bar(
                name=label,
                y=[CATEGORY_LABELS.get(c, c) for c in categories],
                x=[by.get(c, 0.0) for c in categories],
                orientation="h",
                marker_color=PALETTE[i % len(PALETTE)],
                hovertemplate="%{x:,.1f}<extra>" + label + "</extra>",
            )
        )
    return figure
