"""The power kind's job-life chart is an envelope a reader can read (per time bin its minimum,
mean and maximum: a shaded band around a line), not every sample drawn as a solid block; and
chart legends sit where axis titles are not."""

from __future__ import annotations

import numpy as np

from scenarios.charts.base import figure_layout
from scenarios.charts.power import JOB_LIFE_BINS, binned_envelope, coarse_power_figure


def test_binned_envelope_gives_min_mean_max_per_bin():
    values = np.arange(1000, dtype=float)
    times, low, mean, high = binned_envelope(values, dt_s=2.0, bins=10)
    assert low.tolist() == [100.0 * i for i in range(10)]
    assert high.tolist() == [100.0 * i + 99 for i in range(10)]
    assert np.allclose(mean, low + 49.5)
    assert np.allclose(times, (np.arange(10) * 100 + 49.5) * 2.0)


def test_binned_envelope_keeps_a_short_series_and_a_ragged_last_bin():
    _, low, mean, high = binned_envelope(np.array([3.0, 1.0, 2.0]), dt_s=1.0, bins=10)
    assert low.tolist() == mean.tolist() == high.tolist() == [3.0, 1.0, 2.0]
    _, low, mean, high = binned_envelope(np.arange(7, dtype=float), dt_s=1.0, bins=3)  # bins of 3
    assert low.tolist() == [0, 3, 6] and high.tolist() == [2, 5, 6] and mean.tolist() == [1, 4, 6]
    assert [a.size for a in binned_envelope(np.zeros(0), 1.0)] == [0, 0, 0, 0]


def test_job_life_chart_is_a_band_and_a_mean_line_of_a_few_hundred_points():
    rng = np.random.default_rng(0)
    hours = 24 * 14
    samples = hours * 3600 // 2  # two-second samples over two weeks: 604,800 points
    mw = 30 + 8 * (rng.random(samples) > 0.5)  # a step-to-step swing: every pixel column spans it
    figure = coarse_power_figure(mw, 2.0, {})
    traces = figure.data
    assert [t.fill for t in traces] == [None, "tonexty", None]
    assert traces[2].name == "mean" and traces[2].line.width > 1
    assert all(len(t.x) <= JOB_LIFE_BINS for t in traces)
    assert float(np.max(traces[0].y)) == 38.0 and float(np.min(traces[1].y)) == 30.0
    assert 33 < float(np.mean(traces[2].y)) < 35
    assert traces[2].x[-1] < hours and traces[1].name.startswith("range per ")


def test_chart_legends_sit_at_the_figure_edge_not_on_the_axis_titles():
    """Container coordinates make Plotly push the margin around the legend (the browser test
    measures the boxes on every kind's charts)."""
    legend = figure_layout("any")["legend"]
    assert legend["yref"] == "container" and legend["y"] == 0 and legend["yanchor"] == "bottom"
    assert figure_layout("any")["title"]["automargin"] is True


def test_spectrum_marks_the_reported_oscillations_with_the_variance_near_each():
    from scenarios.charts.power import spectrum_figure

    t = np.arange(4000) * 0.001
    facility = 10.0 + np.sin(2 * np.pi * 23.0 * t)
    summary = {
        "band_hz": [0.1, 20.0],
        "grid": {
            "oscillations": [
                {"hz": 14.7, "share": 0.0, "source": "Dominion Energy"},
                {"hz": 23.0, "share": 0.97, "source": "ERCOT 2024"},
                {"hz": 400.0, "share": None, "source": "beyond Nyquist"},
            ]
        },
    }
    figure = spectrum_figure(facility, 0.001, summary)
    marks = [trace for trace in figure.data if "reported" in (trace.name or "")]
    assert [trace.x[0] for trace in marks] == [14.7, 23.0]
    assert marks[1].name == "23 Hz (reported): 97% of the variance near it"
    assert marks[1].hovertext == "ERCOT 2024"
    assert not figure.layout.shapes or all(s.type == "rect" for s in figure.layout.shapes)  # no vline
