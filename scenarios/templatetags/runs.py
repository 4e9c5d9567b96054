"""Template filters of runs: ``{{ run|kind_label }}`` and ``{{ run|headline }}``, read from the
kind registry through the selectors (the model does not import the registry), a scenario
setting's label and text (``{{ path|setting_label }}``, ``{{ value|setting_text }}``) and
``{{ row|layout_label }}`` (a parallel layout as the search names it)."""

from __future__ import annotations

from django import template

from scenarios.charts.search import layout_label as _layout_label
from scenarios.selectors import run_headline, run_kind_label, setting_label, setting_text

register = template.Library()


@register.filter
def kind_label(run) -> str:
    """The run's kind as pages name it (``scenarios.selectors.run_kind_label``)."""
    return run_kind_label(run)


@register.filter
def headline(run) -> str:
    """The one result a list of runs shows (``scenarios.selectors.run_headline``)."""
    return run_headline(run)


@register.filter(name="setting_label")
def setting_label_filter(path: str) -> str:
    """What the scenario form calls a scenario path (``scenarios.selectors.setting_label``)."""
    return setting_label(path)


@register.filter(name="setting_text")
def setting_text_filter(value) -> str:
    """A setting's value as the compare page shows it (``scenarios.selectors.setting_text``)."""
    return setting_text(value)


@register.filter
def layout_label(row) -> str:
    """``tp8 pp4 dp16 · mb2 · selective · ZeRO-1`` of a layout row (``charts.search.layout_label``)."""
    return _layout_label(row) if isinstance(row, dict) else ""
