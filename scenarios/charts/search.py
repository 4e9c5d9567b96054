"""Figures of a layout search: the ranking of the fastest layouts and the step-time breakdown of
the best distinct ones, with the one-line label of a layout both use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from scenarios.charts.base import figure_layout
from scenarios.charts.step import breakdown_figure

#: Relative step-time difference under which two layouts predict the same (one bar).
SAME_STEP_TIME = 1e-6


SEARCH_BARS = 20


def search_figure(best: Sequence[dict[str, Any]]) -> go.Figure:
    """Layout-search ranking: step time of the fastest distinct layouts (fastest on top), colored
    by MFU. Layouts predicting the same step time share a bar ("+2 same"); the step-time axis
    spans the bars' values (not from 0, where 20 near-equal bars look identical) and the MFU
    scale spans the MFUs shown, ticked to a tenth of a percent."""
    rows: list[dict[str, Any]] = []
    same: list[int] = []
    for row in best:
        if rows and abs(row["step_time_s"] - rows[-1]["step_time_s"]) <= SAME_STEP_TIME * row["step_time_s"]:
            same[-1] += 1
            continue
        if len(rows) == SEARCH_BARS:
            break
        rows.append(row)
        same.append(0)
    # Two lines per label (degrees, then the rest): on one line the longest ran off the left
    # edge of a 1024-px page's chart.
    labels = [
        layout_label(r).replace(" · ", "<br>", 1) + (f" (+{n} same)" if n else "")
        for r, n in zip(rows, same, strict=True)
    ]
    times = [float(r.get("step_time_s") or 0.0) for r in rows]
    mfus = [float(r.get("mfu") or 0.0) for r in rows]
    lo, hi = (min(times), max(times)) if times else (0.0, 1.0)
    pad = max((hi - lo) * 0.15, hi * 0.02, 1e-6)
    m_lo, m_hi = (min(mfus), max(mfus)) if mfus else (0.0, 1.0)
    if m_hi - m_lo < 0.002:
        m_lo, m_hi = m_lo - 0.001, m_hi + 0.001
    figure = go.Figure(
        layout=figure_layout(
            "Layout search: fastest layouts",
            xaxis={
                "title": {"text": "step time (s)"},
                "gridcolor": "#eee",
                "range": [max(0.0, lo - pad), hi + pad],
            },
            yaxis={"automargin": True, "autorange": "reversed"},
            height=max(340, 30 * len(rows) + 120),
        )
    )
    figure.add_trace(
        go.Bar(
            y=labels,
            x=times,
            orientation="h",
            marker={
                "color": mfus,
                "colorscale": "Viridis",
                "cmin": m_lo,
                "cmax": m_hi,
                "showscale": True,
                "colorbar": {"title": {"text": "MFU"}, "tickformat": ".1%", "nticks": 5},
            },
            customdata=[[r.get("mfu", 0.0), r.get("memory_gib_per_gpu", 0.0)] for r in rows],
            hovertemplate=(
                "%{y}<br>%{x:.3f} s · MFU %{customdata[0]:.1%} · %{customdata[1]:.1f} GiB<extra></extra>"
            ),
        )
    )
    return figure


def layout_label(row: dict[str, Any]) -> str:
    """``tp8 pp4 dp16 cp1 · mb2 · selective · ZeRO-1`` for one layout."""
    degrees = " ".join(
        f"{k}{row[k]}"
        for k in ("tp", "pp", "dp", "cp", "ep", "vpp")
        if k in row and (row[k] != 1 or k in ("tp", "pp", "dp"))
    )
    parts = [degrees, f"mb{row.get('micro_batch', '?')}", str(row.get("recompute", ""))]
    if row.get("zero"):
        parts.append(f"ZeRO-{row['zero']}")
    return " · ".join(p for p in parts if p)


def layouts_breakdown_figure(rows: Sequence[dict[str, Any]]) -> go.Figure:
    """The step-time breakdown of several layouts (search rows), one bar each, by their labels."""
    return breakdown_figure([layout_label(r) for r in rows], rows)
