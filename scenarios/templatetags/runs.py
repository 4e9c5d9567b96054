"""Template filters of runs: ``{{ run|kind_label }}``, ``{{ run|headline }}`` (read from the kind
registry through the selectors: the model does not import the registry) and ``{{ row|layout_label
}}`` (a parallel layout as the search names it)."""

from __future__ import annotations

from django import template

from scenarios.charts.search import layout_label as _layout_label
from scenarios.selectors import run_headline, run_kind_label

register = template.Library()


@register.filter
def kind_label(run) -> str:
    """The run's kind as pages name it (``scenarios.selectors.run_kind_label``)."""
    return run_kind_label(run)


@register.filter
def headline(run) -> str:
    """The one result a list of runs shows (``scenarios.selectors.run_headline``)."""
    return run_headline(run)


@register.filter
def layout_label(row) -> str:
    """``tp8 pp4 dp16 · mb2 · selective · ZeRO-1`` of a layout row (``charts.search.layout_label``)."""
    return _layout_label(row) if isinstance(row, dict) else ""
