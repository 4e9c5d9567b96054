"""Plotly figures of run results, built in Python with ``plotly.graph_objects`` and sent to the page
as plain JSON (``charts.js`` draws them with the plotly.js the project serves).

Every chart is ``{"id", "title", "figure": {"data", "layout"}}`` (:func:`chart`). Which charts a
run shows is its kind's business (``scenarios.kinds``); this module holds the figure builders.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from scenarios.sim.step.result import BREAKDOWN_KEYS, MEMORY_KEYS, OVERLAP_KEYS

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


def _layout(title: str, **extra: Any) -> dict[str, Any]:
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


# --- step time -------------------------------------------------------------------------------------


def breakdown_figure(labels: Sequence[str], summaries: Sequence[dict[str, Any]]) -> go.Figure:
    """Stacked horizontal bars: seconds per step by component, one bar per run.

    Parameters
    ----------
    labels : sequence of str, (N,)
    summaries : sequence of step summaries, (N,), each with ``breakdown`` {component: s}
    """
    figure = go.Figure(
        layout=_layout(
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
        layout=_layout(
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


def link_utilization_figure(utilization: np.ndarray) -> go.Figure:
    """Histogram (computed here, 40 bins over 0..max(1, max)) of per-link utilization, (L,)."""
    values = np.asarray(utilization, dtype=float)
    top = max(1.0, float(values.max(initial=0.0)))
    counts, edges = np.histogram(values, bins=LINK_UTIL_BINS, range=(0.0, top))
    centers = (edges[:-1] + edges[1:]) / 2
    figure = go.Figure(
        layout=_layout(
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


def overlap_figure(summary: dict[str, Any]) -> go.Figure:
    """Per communication kind, the seconds per step it costs the step (exposed) and the seconds
    the overlap hid behind compute: what the stack's overlap buys, kind by kind."""
    breakdown, hidden = summary.get("breakdown") or {}, summary.get("hidden") or {}
    kinds = [k for k in OVERLAP_KEYS if breakdown.get(k) or hidden.get(k)]
    names = [BREAKDOWN_LABELS.get(k, k).replace(" (exposed)", "") for k in kinds]
    figure = go.Figure(
        layout=_layout(
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
        layout=_layout(
            f"One step on every pipeline stage{note}",
            barmode="overlay",
            xaxis={"title": {"text": "seconds into the step"}, "gridcolor": "#eee"},
            yaxis={"title": {"text": "pipeline stage"}, "autorange": "reversed", "type": "category"},
            height=max(300, 22 * stages.size + 140),
            bargap=0.15,
            # Below the axis title whatever the row count (paper units shrink with few stages).
            legend={"orientation": "h", "y": -0.1 - 60 / max(160, 22 * stages.size)},
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


# --- sweep and search -------------------------------------------------------------------------------


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
        layout=_layout(
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
    labels = [layout_label(r) + (f" (+{n} same)" if n else "") for r, n in zip(rows, same, strict=True)]
    times = [float(r.get("step_time_s") or 0.0) for r in rows]
    mfus = [float(r.get("mfu") or 0.0) for r in rows]
    lo, hi = (min(times), max(times)) if times else (0.0, 1.0)
    pad = max((hi - lo) * 0.15, hi * 0.02, 1e-6)
    m_lo, m_hi = (min(mfus), max(mfus)) if mfus else (0.0, 1.0)
    if m_hi - m_lo < 0.002:
        m_lo, m_hi = m_lo - 0.001, m_hi + 0.001
    figure = go.Figure(
        layout=_layout(
            "Layout search: fastest layouts",
            xaxis={
                "title": {"text": "step time (s)"},
                "gridcolor": "#eee",
                "range": [max(0.0, lo - pad), hi + pad],
            },
            yaxis={"automargin": True, "autorange": "reversed"},
            height=max(340, 22 * len(rows) + 120),
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


def hbm_gib(summary: dict[str, Any]) -> float | None:
    """The GPU's HBM capacity a step summary reports (for the memory chart's line)."""
    details = summary.get("details") or {}
    value = details.get("hbm_gib") or summary.get("hbm_gib")
    return float(value) if value else None


# --- failures ---------------------------------------------------------------------------------

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
        layout=_layout(
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
        layout=_layout(
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
    title = f"Lost time by cause (mean per run; {good_h:,.1f} h of {total_h:,.1f} h trained)"
    figure = go.Figure(
        layout=_layout(
            title,
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
        layout=_layout(
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
    figure = go.Figure(
        layout=_layout(
            "Interruptions by category (mean per run)",
            barmode="group",
            xaxis={"automargin": True},
            yaxis={"title": {"text": "interruptions"}, "gridcolor": "#eee"},
        )
    )
    for i, (label, summary) in enumerate(zip(labels, summaries, strict=True)):
        by = (summary.get("interruptions") or {}).get("by_category") or {}
        figure.add_trace(
            go.Bar(
                name=label,
                x=[CATEGORY_LABELS.get(c, c) for c in categories],
                y=[by.get(c, 0.0) for c in categories],
                marker_color=PALETTE[i % len(PALETTE)],
                hovertemplate="%{y:,.1f}<extra>" + label + "</extra>",
            )
        )
    return figure
