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


def figure_layout(title: str, **extra: Any) -> dict[str, Any]:
    """The layout every chart starts from (title, margins, font, white background, legend above
    the plot under the title, 340 px), with ``extra`` keys replacing or adding to it.

    The legend sits above the plot area, not below it: below, it collided with the x-axis title
    whenever tick labels were tall or the plot short (its place is a fraction of the plot's
    height, the axis title's a number of pixels). Above, Plotly pushes the top margin to fit it
    and the title stays at the very top (its own automargin)."""
    base = {
        "title": {
            "text": title,
            "font": {"size": 14},
            "x": 0,
            "xanchor": "left",
            "xref": "paper",
            "y": 1,
            "yanchor": "top",
            "yref": "container",
            "pad": {"t": 8},
            "automargin": True,
        },
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "font": {"family": "system-ui, sans-serif", "size": 12},
        "plot_bgcolor": "#fff",
        "paper_bgcolor": "#fff",
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"},
        "xaxis": {"automargin": True},
        "yaxis": {"automargin": True},
        "height": 340,
    }
    base.update(extra)
    return base


def chart(chart_id: str, title: str, figure: go.Figure) -> dict[str, Any]:
    """One chart as the page draws it: ``{"id", "title", "figure": {"data", "layout"}}``."""
    # plotly's own encoder turns numpy values into plain JSON; the page gets lists and numbers.
    return {"id": chart_id, "title": title, "figure": json.loads(figure.to_json())}
