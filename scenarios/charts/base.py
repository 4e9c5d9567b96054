"""What every chart shares: the palette, the base layout and the chart envelope the page draws."""

from __future__ import annotations

import json
from typing import Any

import plotly.graph_objects as go

#: One color per step-time component / memory component (Tableau 10 order).
PALETTE = (
    "#4c78a8",
    "#f58518",
    "#e45756",
    "#72b7b2",
    "#54a24b",
    "#eeca3b",
    "#b279a2",
    "#ff9da6",
    "#9d755d",
    "#bab0ac",
)


def figure_layout(title: str, subtitle: str | None = None, **extra: Any) -> dict[str, Any]:
    """The layout every chart starts from (title top left, margins, font, white background,
    legend at the bottom, 340 px), with ``extra`` keys replacing or adding to it.

    The legend is placed in container coordinates (the figure's bottom edge), so Plotly pushes
    the bottom margin to hold the tick labels, the x-axis title *and* the legend: placed in plot
    coordinates (``y: -0.2``, a fraction of the plot's height) it sat on the axis title whenever
    the plot was short or the tick labels tall."""
    base = {
        "title": {
            "text": title,
            "font": {"size": 14},
            # From the figure's left edge (not the plot's, which long y labels push right and
            # a long title then runs off the figure).
            "x": 0,
            "xanchor": "left",
            "xref": "container",
            "y": 1,
            "yanchor": "top",
            "yref": "container",
            "pad": {"t": 8, "l": 12},
            "automargin": True,
        },
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "font": {"family": "system-ui, sans-serif", "size": 12},
        "plot_bgcolor": "#fff",
        "paper_bgcolor": "#fff",
        "legend": {
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "y": 0,
            "yanchor": "bottom",
            "yref": "container",
        },
        "xaxis": {"automargin": True},
        "yaxis": {"automargin": True},
        "height": 340,
    }
    if subtitle:
        base["title"]["subtitle"] = {"text": subtitle, "font": {"size": 11, "color": "#5b6472"}}
    base.update(extra)
    return base


def chart(chart_id: str, title: str, figure: go.Figure) -> dict[str, Any]:
    """One chart as the page draws it: ``{"id", "title", "figure": {"data", "layout"}}``."""
    # plotly's own encoder turns numpy values into plain JSON; the page gets lists and numbers.
    return {"id": chart_id, "title": title, "figure": json.loads(figure.to_json())}
