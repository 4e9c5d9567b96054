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
    """The layout every chart starts from (title, margins, font, white background, legend below,
    340 px), with ``extra`` keys replacing or adding to it."""
    base = {
        "title": {"text": title, "font": {"size": 14}},
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "font": {"family": "system-ui, sans-serif", "size": 12},
        "plot_bgcolor": "#fff",
        "paper_bgcolor": "#fff",
        "legend": {"orientation": "h", "y": -0.2},
        "height": 340,
    }
    base.update(extra)
    return base


def chart(chart_id: str, title: str, figure: go.Figure) -> dict[str, Any]:
    """One chart as the page draws it: ``{"id", "title", "figure": {"data", "layout"}}``."""
    # plotly's own encoder turns numpy values into plain JSON; the page gets lists and numbers.
    return {"id": chart_id, "title": title, "figure": json.loads(figure.to_json())}
