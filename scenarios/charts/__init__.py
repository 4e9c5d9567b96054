"""Plotly figures of run results, built in Python with ``plotly.graph_objects`` and sent to the page
as plain JSON (``static/js/charts.js`` draws them with the plotly.js the project serves).

Every chart is ``{"id", "title", "figure": {"data", "layout"}}`` (:func:`scenarios.charts.base.chart`).
Which charts a run shows is its kind's business (``scenarios/kinds/``); the figure builders live
here, one module per kind: ``step``, ``search``, ``sweep``, ``failures``, ``power``, on the shared
palette and layout of ``base``.
"""
