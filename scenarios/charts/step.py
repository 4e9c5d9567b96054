"""Figures of a step-time run: the step-time breakdown, what the overlap hides, the pipeline
timeline, memory per GPU and the link-utilization histogram (the breakdown and memory bars also
compare several runs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from scenarios.charts.base import PALETTE, figure_layout
from scenarios.sim.step.result import BREAKDOWN_KEYS, MEMORY_KEYS, OVERLAP_KEYS

BREAKDOWN_LABELS = {
    "compute": "Compute",
    "tp": "Tensor-parallel comm.",
    "cp": "Context-parallel comm.",
    "ep": "Expert all-to-all",
    "pp": "Pipeline send/recv",
    "bubble": "Pipeline bubble",
    "dp": "Data-parallel comm. (exposed)",
    "optimizer": "Optimizer",
    "straggler": "Straggler wait",
}


MEMORY_LABELS = {
    "weights": "Weights",
    "gradients": "Gradients",
    "optimizer": "Optimizer state",
    "activations": "Activations",
    "reserve": "Framework reserve",
}


LINK_UTIL_BINS = 40


#: Colours of the timeline's phase kinds (compute blue, communication orange/red, waits grey).
PHASE_COLORS = {
    "forward": "#4c78a8",
    "backward": "#72b7b2",
    "comm": "#f58518",
    "pp_wait": "#e45756",
    "bubble": "#d8d8d8",
    "dp": "#b279a2",
    "optimizer": "#54a24b",
    "straggler": "#9d755d",
    "idle": "#eeeeee",
}


#: Bars a timeline chart draws at most (a browser stays responsive); beyond it the chart shows
#: evenly spaced stages, first and last included, and says which.
TIMELINE_MAX_BARS = 24_000


def breakdown_figure(labels: Sequence[str], summaries: Sequence[dict[str, Any]]) -> go.Figure:
    """Stacked horizontal bars: seconds per step by component, one bar per run.

    Parameters
    ----------
    labels : sequence of str, (N,)
    summaries : sequence of step summaries, (N,), each with ``breakdown`` {component: s}
    """
    figure = go.Figure(
        layout=figure_layout(
            "Step-time breakdown",
            barmode="stack",
            xaxis={"title": {"text": "seconds per step"}, "gridcolor": "#eee"},
            yaxis={"automargin": True, "autorange": "reversed"},
        )
    )
    for i, key in enumerate(BREAKDOWN_KEYS):
        values = [float((s.get("breakdown") or {}).get(key, 0.0)) for s in summaries]
        if not any(values):
            continue
        figure.add_trace(
            go.Bar(
                name=BREAKDOWN_LABELS.get(key, key),
                y=list(labels),
                x=values,
                orientation="h",
                marker_color=PALETTE[i % len(PALETTE)],
                hovertemplate="%{x:.4f} s<extra>" + BREAKDOWN_LABELS.get(key, key) + "</extra>",
            )
        )
    return figure


def memory_figure(
    labels: Sequence[str], summaries: Sequence[dict[str, Any]], hbm_gib: float | None = None
) -> go.Figure:
    """Stacked bars: GiB per GPU by component (first pipeline stage), one bar per run, with the
    GPU's HBM capacity as a line when known."""
    figure = go.Figure(
        layout=figure_layout(
            "Memory per GPU", barmode="stack", yaxis={"title": {"text": "GiB"}, "gridcolor": "#eee"}
        )
    )
    for i, key in enumerate(MEMORY_KEYS):
        values = [float((s.get("memory") or {}).get(key, 0.0)) for s in summaries]
        figure.add_trace(
            go.Bar(
                name=MEMORY_LABELS.get(key, key),
                x=list(labels),
                y=values,
                marker_color=PALETTE[i % len(PALETTE)],
                hovertemplate="%{y:.1f} GiB<extra>" + MEMORY_LABELS.get(key, key) + "</extra>",
            )
        )
    if hbm_gib:
        figure.add_hline(
            y=hbm_gib,
            line_dash="dash",
            line_color="#b00020",
            annotation_text=f"HBM {hbm_gib:g} GiB",
            annotation_position="top left",
        )
    return figure


def hbm_gib(summary: dict[str, Any]) -> float | None:
    """The GPU's HBM capacity a step summary reports (for the memory chart's line)."""
    details = summary.get("details") or {}
    value = details.get("hbm_gib") or summary.get("hbm_gib")
    return float(value) if value else None


def link_utilization_figure(utilization: np.ndarray) -> go.Figure:
    """Histogram (computed here, 40 bins over 0..max(1, max)) of per-link utilization, (L,)."""
    values = np.asarray(utilization, dtype=float)
    top = max(1.0, float(values.max(initial=0.0)))
    counts, edges = np.histogram(values, bins=LINK_UTIL_BINS, range=(0.0, top))
    centers = (edges[:-1] + edges[1:]) / 2
    figure = go.Figure(
        layout=figure_layout(
            f"Link-utilization distribution ({values.size:,} links)",
            xaxis={"title": {"text": "mean utilization over a step"}, "tickformat": ".0%"},
            yaxis={"title": {"text": "links"}, "gridcolor": "#eee"},
            bargap=0.05,
        )
    )
    figure.add_trace(
        go.Bar(
            x=centers,
            y=counts,
            width=float(edges[1] - edges[0]),
            marker_color=PALETTE[0],
            hovertemplate="%{x:.0%}: %{y} links<extra></extra>",
        )
    )
    return figure


def overlap_figure(summary: dict[str, Any]) -> go.Figure:
    """Per communication kind, the seconds per step it costs the step (exposed) and the seconds
    the overlap hid behind compute: what the stack's overlap buys, kind by kind."""
    breakdown, hidden = summary.get("breakdown") or {}, summary.get("hidden") or {}
    kinds = [k for k in OVERLAP_KEYS if breakdown.get(k) or hidden.get(k)]
    names = [BREAKDOWN_LABELS.get(k, k).replace(" (exposed)", "") for k in kinds]
    figure = go.Figure(
        layout=figure_layout(
            "Communication: exposed and hidden",
            barmode="stack",
            xaxis={"title": {"text": "seconds per step"}, "gridcolor": "#eee"},
            yaxis={"automargin": True, "autorange": "reversed"},
        )
    )
    for name, source, color in (
        ("Exposed (in the step time)", breakdown, PALETTE[2]),
        ("Hidden behind compute", hidden, PALETTE[9]),
    ):
        figure.add_trace(
            go.Bar(
                name=name,
                y=names,
                x=[float(source.get(k, 0.0)) for k in kinds],
                orientation="h",
                marker_color=color,
                hovertemplate="%{x:.4f} s<extra>" + name + "</extra>",
            )
        )
    return figure


def timeline_figure(timeline) -> go.Figure:
    """Gantt chart of one step: a row per pipeline stage, its phases as bars from their start.

    Parameters
    ----------
    timeline : scenarios.sim.step.pipeline.StageTimeline
    """
    from scenarios.sim.step.pipeline import PHASE_KINDS, PHASE_LABELS

    kind, start, duration = timeline.kind, timeline.start_s, timeline.duration_s
    n_stages = int(kind.shape[0])
    stages = np.arange(n_stages)
    valid = kind >= 0
    note = ""
    if valid.sum() > TIMELINE_MAX_BARS:
        keep = max(2, TIMELINE_MAX_BARS // max(1, int(valid.sum() // n_stages)))
        stages = np.unique(np.linspace(0, n_stages - 1, min(keep, n_stages)).round().astype(int))
        note = (
            f" (stages {', '.join(str(s) for s in stages[:6])}{'…' if stages.size > 6 else ''} of {n_stages})"
        )
    figure = go.Figure(
        layout=figure_layout(
            f"One step on every pipeline stage{note}",
            barmode="overlay",
            xaxis={"title": {"text": "seconds into the step"}, "gridcolor": "#eee"},
            yaxis={"title": {"text": "pipeline stage"}, "autorange": "reversed", "type": "category"},
            height=max(300, 22 * stages.size + 140),
            bargap=0.15,
        )
    )
    rows = kind[stages]
    for code, name in enumerate(PHASE_KINDS):
        mask = rows == code
        if not mask.any():
            continue
        stage_of = np.broadcast_to(stages[:, None], rows.shape)[mask]
        figure.add_trace(
            go.Bar(
                name=PHASE_LABELS[name],
                y=[f"stage {int(s)}" for s in stage_of],
                x=duration[stages][mask],
                base=start[stages][mask],
                orientation="h",
                marker={"color": PHASE_COLORS[name], "line": {"width": 0}},
                hovertemplate="%{base:.4f} s + %{x:.4f} s<extra>" + PHASE_LABELS[name] + "</extra>",
            )
        )
    return figure
