"""Figure of a scaling sweep: time to train and per-GPU efficiency against the GPU count."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from scenarios.charts.base import PALETTE, figure_layout


def scaling_figure(points: Sequence[dict[str, Any]], knee_gpus: int | None = None) -> go.Figure:
    """Time to train (or step time) and per-GPU scaling efficiency against GPU count.

    Efficiency is tokens/s per GPU relative to the smallest point. ``knee_gpus`` (a knee found
    inside the range: the marginal GPUs deliver less than half their share) is marked; without
    one the title says the cluster still scales. Points of one GPU count appear once; the log
    axis is ticked at the sizes tried ("1,024"), not at powers of ten.
    """
    by_gpus = {p["gpus"]: p for p in points if not p.get("error") and p.get("gpus")}
    ok = [by_gpus[g] for g in sorted(by_gpus)]
    gpus = [p["gpus"] for p in ok]
    use_ttt = all(p.get("time_to_train_days") for p in ok) and ok
    y_main = [p["time_to_train_days"] if use_ttt else p.get("step_time_s") for p in ok]
    efficiency = [p.get("efficiency") for p in ok]
    if ok and any(e is None for e in efficiency):
        per_gpu = [p.get("tokens_per_s", 0.0) / p["gpus"] for p in ok]
        efficiency = [v / per_gpu[0] if per_gpu[0] else None for v in per_gpu]
    top = max([1.0, *(e for e in efficiency if e is not None)]) * 1.05
    title = (
        f"Scaling: adding GPUs stops paying at {knee_gpus:,}"
        if knee_gpus
        else "Scaling: still scaling at the largest size tried"
    )
    figure = go.Figure(
        layout=figure_layout(
            title,
            xaxis={
                "title": {"text": "GPUs"},
                "type": "log",
                "gridcolor": "#eee",
                "tickvals": gpus,
                "ticktext": [f"{g:,}" for g in gpus],
            },
            yaxis={
                "title": {"text": "time to train (days)" if use_ttt else "step time (s)"},
                "gridcolor": "#eee",
                "rangemode": "tozero",
            },
            yaxis2={
                "title": {"text": "per-GPU efficiency"},
                "overlaying": "y",
                "side": "right",
                "tickformat": ".0%",
                "range": [0, top],
                "tickmode": "linear",
                "tick0": 0,
                "dtick": 0.25,
                "showgrid": False,
            },
        )
    )
    figure.add_trace(
        go.Scatter(
            x=gpus,
            y=y_main,
            name="time to train" if use_ttt else "step time",
            mode="lines+markers",
            marker_color=PALETTE[0],
        )
    )
    figure.add_trace(
        go.Scatter(
            x=gpus,
            y=efficiency,
            name="per-GPU efficiency",
            yaxis="y2",
            mode="lines+markers",
            line_dash="dot",
            marker_color=PALETTE[1],
        )
    )
    if knee_gpus:
        figure.add_vline(
            x=knee_gpus,
            line_dash="dash",
            line_color="#b00020",
            annotation_text=f"knee {knee_gpus:,}",
            annotation_position="top",
        )
    return figure
