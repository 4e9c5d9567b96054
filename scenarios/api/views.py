"""API views of scenarios and runs: thin doors over the same services and selectors as the
pages, every object through ``teams.permissions`` (another team's object is a 404; a role that
may see but not act is a 403)."""

from __future__ import annotations

import math

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from scenarios import services
from scenarios.api.filters import RunFilter, ScenarioFilter
from scenarios.api.serializers import (
    ArrayPageSerializer,
    KindSerializer,
    RunResultsSerializer,
    RunSerializer,
    RunStartSerializer,
    ScenarioCreateSerializer,
    ScenarioImportSerializer,
    ScenarioSerializer,
    ScenarioUpdateSerializer,
)
from scenarios.kinds import registry
from scenarios.models import Run, RunArray, Scenario
from scenarios.provenance import RunInputs
from scenarios.scenario_file import SECTIONS
from scenarios.selectors import run_charts, run_state_brief
from scenarios.storage import array_from_row
from teams.api.base import TeamObjectViewSet, referenced
from teams.permissions import CHANGE, RUN, VIEW
from topology.models import Design
from twin.api.base import ApiViewMixin, query_id, query_int, validated, yaml_body, yaml_download
from twin.api.parsers import YAML_PARSERS, BoundedJSONParser
from utilities.jsonsafe import json_safe

#: Most values one page of a stored array gives (``?limit=``); the default is 1,000.
MAX_ARRAY_PAGE = 10_000
YAML_RESPONSE = OpenApiResponse(
    response=OpenApiTypes.OBJECT, description="a version-1 scenario file (YAML mapping)"
)


@extend_schema(tags=["scenarios"])
class ScenarioViewSet(mixins.ListModelMixin, TeamObjectViewSet):
    """Scenarios: a design + the other sections of the scenario file (job, what-if, ...)."""

    model = Scenario
    serializer_class = ScenarioSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = ScenarioFilter

    def base_queryset(self):
        return Scenario.objects.select_related("design", "created_by")

    @extend_schema(request=ScenarioCreateSerializer, responses={201: ScenarioSerializer})
    def create(self, request):
        """Create a scenario from JSON (validated like the scenario file: errors by field path)."""
        data = validated(ScenarioCreateSerializer, request.data)
        design = referenced(Design, request.user, data["design"], field="design", action=CHANGE)
        scenario = services.scenario_create(
            design=design,
            name=data["name"],
            description=data["description"],
            user=request.user,
            **{key: data[key] for key in SECTIONS},
        )
        return Response(ScenarioSerializer(scenario).data, status=status.HTTP_201_CREATED)

    def retrieve(self, request, pk=None):
        return Response(ScenarioSerializer(self.get_object()).data)

    @extend_schema(request=ScenarioUpdateSerializer, responses={200: ScenarioSerializer})
    def partial_update(self, request, pk=None):
        """Change the given fields of a scenario (re-validated as a whole)."""
        scenario = self.get_object(CHANGE)
        data = validated(ScenarioUpdateSerializer, request.data)
        scenario = services.scenario_update(scenario=scenario, user=request.user, **data)
        return Response(ScenarioSerializer(scenario).data)

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        """Delete a scenario and its runs."""
        services.scenario_delete(scenario=self.get_object(CHANGE), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses={(200, "application/yaml"): YAML_RESPONSE})
    @action(detail=True, methods=["get"], url_path="yaml")
    def export_yaml(self, request, pk=None):
        """The scenario as a version-1 scenario file (``manage.py simulate`` runs it as is)."""
        scenario = self.get_object()
        return yaml_download(services.scenario_to_yaml(scenario=scenario), scenario.name)

    @extend_schema(
        request={
            "application/yaml": OpenApiTypes.BINARY,
            "multipart/form-data": ScenarioImportSerializer,
            "application/json": ScenarioImportSerializer,
        },
        parameters=[OpenApiParameter("design", int, description="design to save the scenario on")],
        responses={201: ScenarioSerializer},
    )
    @action(
        detail=False,
        methods=["post"],
        url_path="import",
        parser_classes=[*YAML_PARSERS, MultiPartParser, BoundedJSONParser],
    )
    def import_yaml(self, request):
        """Create a scenario from a scenario file (the bounded loader: errors by field path)."""
        text, fields = yaml_body(request, ScenarioImportSerializer, "scenario file")
        design_id = fields.get("design") or query_id(request, "design")
        design = None
        if design_id is not None:
            design = referenced(Design, request.user, design_id, field="design", action=CHANGE)
        scenario = services.scenario_from_yaml(text=text, design=design, user=request.user)
        return Response(ScenarioSerializer(scenario).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["runs"])
class RunViewSet(mixins.ListModelMixin, TeamObjectViewSet):
    """Runs: start one (kind + options), follow its state, cancel it, read its results."""

    model = Run
    serializer_class = RunSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = RunFilter

    def base_queryset(self):
        return Run.objects.select_related("scenario", "scenario__design")

    def list(self, request):
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([_run_json(run) for run in page])

    @extend_schema(request=RunStartSerializer, responses={201: RunSerializer})
    def create(self, request):
        """Start a run: queued now, computed by a worker (poll ``GET /api/runs/{id}/``)."""
        data = validated(RunStartSerializer, request.data)
        scenario = referenced(Scenario, request.user, data["scenario"], field="scenario", action=RUN)
        run = services.run_start(
            scenario=scenario,
            kind=data["kind"],
            options=data["options"],
            user=request.user,
            seen_revision=data.get("scenario_revision"),
        )
        return Response(_run_json(run), status=status.HTTP_201_CREATED)

    def retrieve(self, request, pk=None):
        """The run's state (status, progress, stage, live figures)."""
        return Response(_run_json(self.get_object()))

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        """Delete a run and its results."""
        services.run_delete(run=self.get_object(CHANGE), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={200: RunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Cancel a queued or running run (a finished run is returned unchanged)."""
        run = services.run_cancel(run=self.get_object(RUN), user=request.user)
        return Response(_run_json(run))

    @extend_schema(request=None, responses={201: RunSerializer})
    @action(detail=True, methods=["post"])
    def rerun(self, request, pk=None):
        """Start a new run from this run's stored inputs (its scenario document and catalog
        snapshot: the run "as it ran"); ``POST /api/runs/`` is the run with today's inputs."""
        run = services.run_rerun(run=self.get_object(RUN), user=request.user)
        return Response(_run_json(run), status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[OpenApiParameter("charts", bool, description="include the charts (default true)")],
        responses={200: RunResultsSerializer},
    )
    @action(detail=True, methods=["get"])
    def results(self, request, pk=None):
        """Summary, figures and charts; the stored arrays by name and shape only."""
        run = self.get_object(VIEW)
        spec = registry().get(run.kind)
        with_charts = request.query_params.get("charts", "true").lower() not in ("0", "false", "no")
        arrays = RunArray.objects.filter(run=run).values_list("name", "dtype", "shape")
        body = {
            "id": run.pk,
            "status": run.status,
            "error": run.error,
            "summary": json_safe(run.summary or {}),
            "figures": spec.summary_figures(run.summary or {}) if spec is not None else [],
            "charts": json_safe(run_charts(run=run)) if with_charts else [],
            "arrays": [
                {"name": name, "dtype": dtype, "shape": list(shape), "size": math.prod(shape)}
                for name, dtype, shape in arrays
            ],
        }
        return Response(body)

    @extend_schema(
        parameters=[
            OpenApiParameter("name", str, OpenApiParameter.PATH, pattern="^[A-Za-z0-9_]{1,64}$"),
            OpenApiParameter("offset", int, description="first element (default 0)"),
            OpenApiParameter("limit", int, description=f"elements (1,000 by default, ≤ {MAX_ARRAY_PAGE:,})"),
        ],
        responses={200: ArrayPageSerializer},
    )
    @action(detail=True, methods=["get"], url_path=r"arrays/(?P<name>[A-Za-z0-9_]{1,64})")
    def arrays(self, request, pk=None, name=None):
        """A bounded page of one stored array's values (flattened in C order)."""
        run = self.get_object(VIEW)
        row = RunArray.objects.filter(run=run, name=name).first()
        if row is None:
            raise NotFound(f"run {run.pk}: no array named {name!r}")
        offset = query_int(request, "offset", 0, 0, 2**62)
        limit = query_int(request, "limit", 1000, 1, MAX_ARRAY_PAGE)
        values = array_from_row(row).reshape(-1)
        return Response(
            {
                "name": row.name,
                "dtype": row.dtype,
                "shape": list(row.shape),
                "size": int(values.size),
                "offset": offset,
                "limit": limit,
                "values": json_safe(values[offset : offset + limit].tolist()),
            }
        )


def _run_json(run: Run) -> dict:
    inputs = RunInputs.of(run)
    return {
        **run_state_brief(run=run),
        "options": json_safe(run.options or {}),
        "inputs": json_safe(inputs.api()) if inputs is not None else None,
    }


@extend_schema(tags=["runs"], responses={200: KindSerializer(many=True)})
class KindListView(ApiViewMixin, APIView):
    """The registered run kinds and the names of their options."""

    def get(self, request):
        return Response(
            [
                {"name": kind.name, "label": kind.label, "options": list(kind.options_form.base_fields)}
                for kind in registry().values()
            ]
        )
