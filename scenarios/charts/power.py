"""Figures of a power run: the facility series, its spectrum, the job-life series, the mitigations
and the comparison of several runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from scenarios.charts.base import PALETTE, figure_layout

#: Points a power series is drawn with at most: each bucket keeps its minimum and maximum, so the
#: swings the grid sees stay visible however long the window.
SERIES_MAX_POINTS = 4000


def envelope(
    values: np.ndarray, dt_s: float, max_points: int = SERIES_MAX_POINTS
) -> tuple[np.ndarray, np.ndarray]:
    """(times, values) of a series thinned to about ``max_points`` by a min/max envelope."""
    values = np.asarray(values, dtype=float)
    n = values.size
    if n <= max_points:
        return np.arange(n) * dt_s, values
    per = int(np.ceil(n / (max_points // 2)))
    blocks = values[: n - n % per].reshape(-1, per)
    lows, highs = blocks.argmin(axis=1), blocks.argmax(axis=1)
    starts = np.arange(blocks.shape[0]) * per
    index = np.sort(np.concatenate([starts + lows, starts + highs]))
    return index * dt_s, values[index]


#: Time bins of the job-life chart: each draws its minimum, mean and maximum, so weeks of
#: samples read as a band around a line instead of a solid block of oscillation.
JOB_LIFE_BINS = 400


def binned_envelope(
    values: np.ndarray, dt_s: float, bins: int = JOB_LIFE_BINS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(bin mid-times, minimum, mean, maximum) of a series cut into about ``bins`` equal bins.

    Parameters
    ----------
    values : ndarray, (N,)
        The series, one sample per ``dt_s`` seconds.
    dt_s : float
        Sample spacing (s).
    bins : int
        At most this many bins; a series shorter than that keeps one sample per bin.

    Returns
    -------
    times_s, low, mean, high : ndarray, (B,)
    """
    values = np.asarray(values, dtype=float)
    n = values.size
    if n == 0:
        empty = np.zeros(0)
        return empty, empty, empty, empty
    per = max(1, int(np.ceil(n / bins)))
    edges = np.arange(0, n, per)
    counts = np.diff(np.append(edges, n))
    low = np.minimum.reduceat(values, edges)
    high = np.maximum.reduceat(values, edges)
    mean = np.add.reduceat(values, edges) / counts
    times_s = (edges + (counts - 1) / 2.0) * dt_s
    return times_s, low, mean, high


def power_series_figure(facility_mw: np.ndarray, dt_s: float, summary: dict[str, Any]) -> go.Figure:
    """Facility draw over the simulated window (MW), with its window events shaded."""
    t, mw = envelope(facility_mw, dt_s)
    figure = go.Figure(
        layout=figure_layout(
            "Facility power over the window",
            xaxis={"title": {"text": "seconds"}, "gridcolor": "#eee"},
            yaxis={"title": {"text": "MW"}, "gridcolor": "#eee"},
        )
    )
    figure.add_trace(
        go.Scatter(x=t, y=mw, mode="lines", name="facility", line={"color": PALETTE[0], "width": 1})
    )
    for event in summary.get("events") or []:
        figure.add_vrect(
            x0=event["at_s"],
            x1=event["at_s"] + max(event["duration_s"], dt_s),
            fillcolor="#f58518",
            opacity=0.18,
            line_width=0,
            annotation_text=event["kind"],
            annotation_position="top left",
        )
    return figure


def spectrum_figure(facility_mw: np.ndarray, dt_s: float, summary: dict[str, Any]) -> go.Figure:
    """Amplitude spectrum of the de-meaned facility draw (MW), the grid's band shaded."""
    values = np.asarray(facility_mw, dtype=float)
    amplitude = np.abs(np.fft.rfft(values - values.mean())) * 2.0 / max(values.size, 1)
    freq = np.fft.rfftfreq(values.size, d=dt_s)
    keep = freq > 0
    freq, amplitude = freq[keep], amplitude[keep]
    if freq.size > SERIES_MAX_POINTS:  # log-spaced picks: the low band stays resolved
        picks = np.unique(np.geomspace(1, freq.size - 1, SERIES_MAX_POINTS).astype(int))
        freq, amplitude = freq[picks], amplitude[picks]
    figure = go.Figure(
        layout=figure_layout(
            "Spectrum of the facility draw",
            xaxis={"title": {"text": "frequency (Hz)"}, "type": "log", "gridcolor": "#eee"},
            yaxis={"title": {"text": "amplitude (MW)"}, "type": "log", "gridcolor": "#eee"},
        )
    )
    figure.add_trace(
        go.Scatter(x=freq, y=amplitude, mode="lines", name="amplitude", line={"color": PALETTE[0]})
    )
    low, high = summary.get("band_hz") or (None, None)
    if low is not None:
        share = summary.get("band_energy_share")
        text = f"grid band {low:g}–{high:g} Hz" + (
            f": {share:.0%} of the variance" if share is not None else ""
        )
        figure.add_vrect(
            x0=max(low, float(freq.min(initial=low))),
            x1=high,
            fillcolor="#54a24b",
            opacity=0.12,
            line_width=0,
            annotation_text=text,
            annotation_position="top left",
        )
    # Where utilities have reported oscillations, with the draw's variance near each: traces,
    # not add_vline (on a log axis a shape's annotation lands at log10(x) and stretches it).
    top, bottom = float(amplitude.max(initial=1.0)), float(amplitude.min(initial=1e-6))
    for mark in (summary.get("grid") or {}).get("oscillations") or []:
        if mark.get("share") is None:
            continue
        figure.add_trace(
            go.Scatter(
                x=[mark["hz"], mark["hz"]],
                y=[max(bottom, top * 1e-6), top],
                mode="lines",
                name=f"{mark['hz']:g} Hz (reported): {mark['share']:.0%} of the variance near it",
                line={"color": "#b26a00", "dash": "dot"},
                hovertext=mark.get("source"),
                hoverinfo="text",
            )
        )
    return figure


def coarse_power_figure(facility_mw: np.ndarray, dt_s: float, summary: dict[str, Any]) -> go.Figure:
    """Facility draw over the job's life (the failure trial's crashes, restarts, checkpoints):
    per time bin its range as a shaded band and its mean as a line."""
    hours, low, mean, high = binned_envelope(facility_mw, dt_s)
    hours = hours / 3600.0
    per_bin_h = (hours[1] - hours[0]) if hours.size > 1 else dt_s / 3600.0
    figure = go.Figure(
        layout=figure_layout(
            "Facility power over the job's life",
            xaxis={"title": {"text": "hours"}, "gridcolor": "#eee"},
            yaxis={"title": {"text": "MW"}, "gridcolor": "#eee"},
            hovermode="x unified",
        )
    )
    band = PALETTE[1]
    figure.add_trace(
        go.Scatter(
            x=hours, y=high, mode="lines", name="max", line={"width": 0, "color": band}, showlegend=False
        )
    )
    figure.add_trace(
        go.Scatter(
            x=hours,
            y=low,
            mode="lines",
            name=f"range per {_duration(per_bin_h)}",
            line={"width": 0, "color": band},
            fill="tonexty",
            fillcolor="rgba(245, 133, 24, 0.25)",
        )
    )
    figure.add_trace(
        go.Scatter(x=hours, y=mean, mode="lines", name="mean", line={"color": band, "width": 1.6})
    )
    return figure


def _duration(hours: float) -> str:
    if hours >= 1:
        return f"{hours:.3g} h"
    if hours * 60 >= 1:
        return f"{hours * 60:.3g} min"
    return f"{hours * 3600:.3g} s"


def mitigations_figure(summary: dict[str, Any]) -> go.Figure:
    """Each mitigation's swing reduction against its cost (extra MWh per day, slowdown)."""
    names = list(summary.get("mitigations") or {})
    rows = [summary["mitigations"][n] for n in names]
    figure = go.Figure(
        layout=figure_layout(
            "Mitigations: swing saved and what it costs",
            barmode="group",
            xaxis={"automargin": True},
            yaxis={"title": {"text": "swing reduction"}, "tickformat": ".0%", "gridcolor": "#eee"},
            yaxis2={"title": {"text": "extra MWh per day"}, "overlaying": "y", "side": "right"},
        )
    )
    labels = [n.replace("_", " ") for n in names]
    figure.add_trace(
        go.Bar(
            name="swing reduction",
            x=labels,
            y=[r.get("swing_reduction", 0.0) for r in rows],
            marker_color=PALETTE[4],
        )
    )
    figure.add_trace(
        go.Scatter(
            name="extra MWh/day",
            x=labels,
            y=[r.get("extra_mwh_per_day", 0.0) for r in rows],
            yaxis="y2",
            mode="markers",
            marker={"color": PALETTE[2], "size": 10},
            customdata=[r.get("slowdown", 0.0) for r in rows],
            hovertemplate="%{y:,.1f} MWh/day · slowdown %{customdata:.1%}<extra></extra>",
        )
    )
    return figure


def power_compare_figure(labels: Sequence[str], summaries: Sequence[dict[str, Any]]) -> go.Figure:
    """Peak, trough and swing of several power runs side by side (MW)."""
    figure = go.Figure(
        layout=figure_layout(
            "Facility peak, trough and swing",
            barmode="group",
            yaxis={"title": {"text": "MW"}, "gridcolor": "#eee"},
            xaxis={"automargin": True},
        )
    )
    for i, (key, name) in enumerate(
        (("facility_peak_mw", "peak"), ("facility_trough_mw", "trough"), ("swing_mw", "swing"))
    ):
        figure.add_trace(
            go.Bar(name=name, x=list(labels), y=[s.get(key) for s in summaries], marker_color=PALETTE[i])
        )
    return figure
