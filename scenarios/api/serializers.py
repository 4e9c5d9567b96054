"""Shapes of scenarios and runs in the API. They only shape data: every rule is the services'
(``scenarios.scenario_file.scenario_check`` names the field by its scenario-file path)."""

from __future__ import annotations

from rest_framework import serializers

from scenarios.choices import RunStatus
from scenarios.models import Scenario

MAX_PK = 2**63 - 1


def id_field(**kwargs) -> serializers.IntegerField:
    """An object id in a body (the number of a row; whether the user may see it is the view's)."""
    return serializers.IntegerField(min_value=1, max_value=MAX_PK, **kwargs)


class ScenarioSerializer(serializers.ModelSerializer):
    """A saved scenario: its design, the scenario file's ``job:`` and ``what_if:`` mappings."""

    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    job = serializers.DictField(help_text="the scenario file's job: mapping (docs/scenario-format.md)")
    what_if = serializers.DictField(
        help_text="the scenario file's what_if: mapping, plus the web-only key nodes"
    )

    class Meta:
        model = Scenario
        fields = ("id", "name", "description", "design", "job", "what_if", "created_by", "created", "updated")
        read_only_fields = fields


class ScenarioCreateSerializer(serializers.Serializer):
    """A new scenario from JSON: a design id, a name, the job and what-if mappings."""

    design = id_field()
    name = serializers.CharField(allow_blank=True, trim_whitespace=False)
    description = serializers.CharField(allow_blank=True, trim_whitespace=False, default="")
    job = serializers.DictField()
    what_if = serializers.DictField(default=dict)


class ScenarioUpdateSerializer(serializers.Serializer):
    """A change of a scenario: only the given fields change (the whole job when given)."""

    name = serializers.CharField(allow_blank=True, trim_whitespace=False, required=False)
    description = serializers.CharField(allow_blank=True, trim_whitespace=False, required=False)
    job = serializers.DictField(required=False)
    what_if = serializers.DictField(required=False)


class ScenarioImportSerializer(serializers.Serializer):
    """A scenario file: the body itself (``application/yaml``), a multipart ``file``, or JSON
    ``{"yaml": "..."}``; ``design`` (body or ``?design=``) is optional: without it the file's
    cluster is generated as a new design of your first team."""

    design = id_field(required=False, allow_null=True)
    yaml = serializers.CharField(required=False, trim_whitespace=False, help_text="scenario file text")
    file = serializers.FileField(required=False, help_text="scenario file upload (multipart)")


class RunStartSerializer(serializers.Serializer):
    """Start a run: a scenario id, a registered kind and the kind's options."""

    scenario = id_field()
    kind = serializers.CharField(default="step", help_text="a registered run kind (GET /api/kinds/)")
    options = serializers.DictField(default=dict, help_text="the kind's options (e.g. sweep: nodes)")


class FigureSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    text = serializers.CharField()


class ScenarioRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class RunSerializer(serializers.Serializer):
    """A run's state: what the run page and its WebSocket show (``selectors.run_state_brief``)."""

    id = serializers.IntegerField()
    scenario = ScenarioRefSerializer()
    design = serializers.IntegerField()
    kind = serializers.CharField()
    kind_label = serializers.CharField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    status_label = serializers.CharField()
    progress = serializers.FloatField()
    stage = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    summary = serializers.DictField(help_text="the live figures' raw values")
    figures = FigureSerializer(many=True)
    design_version = serializers.IntegerField()
    created = serializers.CharField(allow_null=True)
    started = serializers.CharField(allow_null=True)
    finished = serializers.CharField(allow_null=True)
    duration_s = serializers.FloatField(allow_null=True)
    active = serializers.BooleanField()
    options = serializers.DictField()


class ArrayInfoSerializer(serializers.Serializer):
    name = serializers.CharField()
    dtype = serializers.CharField()
    shape = serializers.ListField(child=serializers.IntegerField())
    size = serializers.IntegerField(help_text="elements")


class RunResultsSerializer(serializers.Serializer):
    """A run's results: the whole summary, its figures, its charts (Plotly JSON) and the names of
    its stored arrays (their values: ``GET /api/runs/{id}/arrays/{name}/``, in bounded pages)."""

    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    error = serializers.CharField(allow_blank=True)
    summary = serializers.DictField()
    figures = FigureSerializer(many=True)
    charts = serializers.ListField(child=serializers.DictField(), help_text="Plotly figures")
    arrays = ArrayInfoSerializer(many=True)


class ArrayPageSerializer(serializers.Serializer):
    """A page of one stored array's values, flattened in C order (``offset`` .. ``offset+limit``)."""

    name = serializers.CharField()
    dtype = serializers.CharField()
    shape = serializers.ListField(child=serializers.IntegerField())
    size = serializers.IntegerField()
    offset = serializers.IntegerField()
    limit = serializers.IntegerField()
    values = serializers.ListField(child=serializers.JSONField(), help_text="numbers; null for NaN/inf")


class KindSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    options = serializers.ListField(child=serializers.CharField(), help_text="option names")
