"""Template filters of runs: ``{{ run|kind_label }}`` and ``{{ run|headline }}``, read from the
kind registry through the selectors (the model does not import the registry)."""

from __future__ import annotations

from django import template

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
