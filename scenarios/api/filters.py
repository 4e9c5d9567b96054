"""List filters of the scenarios API (django-filter): scenarios by design; runs by scenario,
design, kind and status. Lists are already narrowed to what the user may view, so filtering by
another team's id simply finds nothing."""

from __future__ import annotations

import django_filters

from scenarios.choices import RunStatus
from scenarios.kinds import kind_choices
from scenarios.models import Run, Scenario
from twin.api.filters import IdFilter


class ScenarioFilter(django_filters.FilterSet):
    design = IdFilter(field_name="design_id", help_text="design id")

    class Meta:
        model = Scenario
        fields = ("design",)


class RunFilter(django_filters.FilterSet):
    scenario = IdFilter(field_name="scenario_id", help_text="scenario id")
    design = IdFilter(field_name="scenario__design_id", help_text="design id")
    kind = django_filters.ChoiceFilter(choices=kind_choices, help_text="run kind")
    status = django_filters.ChoiceFilter(choices=RunStatus.choices)

    class Meta:
        model = Run
        fields = ("scenario", "design", "kind", "status")
