"""Shapes of scenarios and runs in the API. They only shape data: every rule is the services'
(``scenarios.scenario_file.scenario_check`` names the field by its scenario-file path)."""

from __future__ import annotations

from rest_framework import serializers

from scenarios.choices import RunStatus
from scenarios.models import Scenario
from scenarios.scenario_file import SECTIONS, scenario_revision

MAX_PK = 2**63 - 1


def id_field(**kwargs) -> serializers.IntegerField:
    """An object id in a body (the number of a row; whether the user may see it is the view's)."""
    return serializers.IntegerField(min_value=1, max_value=MAX_PK, **kwargs)


#: The section every scenario needs (a scenario is a job on a design); the others are overrides.
REQUIRED_SECTION = "job"


def section_field(key: str, **options) -> serializers.DictField:
    """The API field of one section of a saved scenario (``scenario_file.SECTIONS``)."""
    optional = "" if key == REQUIRED_SECTION else " ({} when the scenario has none)"
    return serializers.DictField(
        help_text=f"the scenario file's {key}: mapping{optional}; docs/scenario-format.md", **options
    )


class SectionsMixin:
    """A field for every section of a saved scenario (``scenario_file.SECTIONS``, derived from the
    scenario format's schema), so that no door of the API drops one; ``section_options(key)`` says
    whether it is read-only, required or defaulted."""

    def section_options(self, key: str) -> dict:
        raise NotImplementedError

    def get_fields(self):
        fields = list(super().get_fields().items())
        at = next((i for i, (name, _) in enumerate(fields) if name == "created_by"), len(fields))
        sections = [(key, section_field(key, **self.section_options(key))) for key in SECTIONS]
        return dict(fields[:at] + sections + fields[at:])


class ScenarioSerializer(SectionsMixin, serializers.ModelSerializer):
    """A saved scenario: its design and every section of its scenario file but the cluster."""

    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    revision = serializers.SerializerMethodField(
        help_text="digest of the saved sections; give it to POST /api/runs/ as scenario_revision"
    )

    class Meta:
        model = Scenario
        fields = ("id", "name", "description", "design", "created_by", "created", "updated", "revision")
        read_only_fields = fields

    def section_options(self, key: str) -> dict:
        return {"read_only": True}

    def get_revision(self, scenario) -> str:
        return scenario_revision(scenario)


class ScenarioCreateSerializer(SectionsMixin, serializers.Serializer):
    """A new scenario from JSON: a design id, a name, the job and the other sections' mappings."""

    design = id_field()
    name = serializers.CharField(allow_blank=True, trim_whitespace=False)
    description = serializers.CharField(allow_blank=True, trim_whitespace=False, default="")

    def section_options(self, key: str) -> dict:
        return {} if key == REQUIRED_SECTION else {"default": dict}


class ScenarioUpdateSerializer(SectionsMixin, serializers.Serializer):
    """A change of a scenario: only the given fields change (a whole section when given)."""

    name = serializers.CharField(allow_blank=True, trim_whitespace=False, required=False)
    description = serializers.CharField(allow_blank=True, trim_whitespace=False, required=False)

    def section_options(self, key: str) -> dict:
        return {"required": False}


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
    scenario_revision = serializers.CharField(
        required=False,
        max_length=64,
        help_text="the scenario's revision the client showed (GET /api/scenarios/{id}/): 409 if it changed",
    )


class FigureSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    text = serializers.CharField()


class ScenarioRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class RunInputsSerializer(serializers.Serializer):
    """What a run simulated (``scenarios.provenance.RunInputs``)."""

    scenario = serializers.DictField(help_text="the scenario document as it ran (docs/scenario-format.md)")
    design_version = serializers.IntegerField(help_text="the design version it simulated")
    catalog_digest = serializers.CharField(help_text="sha256 of the catalog rows it used (canonical JSON)")
    rerun_of = serializers.IntegerField(allow_null=True, help_text="the run it re-ran as it ran, if any")


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
    inputs = RunInputsSerializer(
        allow_null=True, help_text="what it simulated; null for a run from before provenance was kept"
    )


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
