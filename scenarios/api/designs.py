"""API doors of the design file (``scenarios.services.designs``): export a generated design with
its scenarios as YAML, and create a design with its scenarios from one. They sit with the
scenarios API because the file is in the scenario format, read by the bounded loader."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from scenarios.api.serializers import id_field
from scenarios.services.designs import design_export_yaml, design_import_yaml
from teams.api.base import path_object, referenced
from teams.models import Team
from teams.permissions import CHANGE
from topology.api.views import design_detail
from topology.models import Design
from twin.api.base import ApiViewMixin, query_id, yaml_body, yaml_download
from twin.api.parsers import YAML_PARSERS, BoundedJSONParser


class DesignImportSerializer(serializers.Serializer):
    """A design file: the body itself (``application/yaml``), a multipart ``file``, or JSON
    ``{"yaml": "..."}``; ``team`` (body or ``?team=``) is the team to save it in."""

    team = id_field(required=False, allow_null=True)
    yaml = serializers.CharField(required=False, trim_whitespace=False, help_text="design file text")
    file = serializers.FileField(required=False, help_text="design file upload (multipart)")


@extend_schema(
    tags=["designs"],
    responses={
        (200, "application/yaml"): OpenApiResponse(
            OpenApiTypes.OBJECT, description="a design file (YAML mapping)"
        )
    },
    parameters=[OpenApiParameter("id", int, OpenApiParameter.PATH)],
)
class DesignYAMLView(ApiViewMixin, APIView):
    """A generated design and its scenarios as one design file (``manage.py simulate`` runs it)."""

    def get(self, request, pk):
        design = path_object(Design, request.user, pk)
        return yaml_download(design_export_yaml(design=design, user=request.user), design.name)


@extend_schema(
    tags=["designs"],
    request={
        "application/yaml": OpenApiTypes.BINARY,
        "multipart/form-data": DesignImportSerializer,
        "application/json": DesignImportSerializer,
    },
    parameters=[OpenApiParameter("team", int, description="team to save the design in")],
    responses={201: OpenApiTypes.OBJECT},
)
class DesignImportView(ApiViewMixin, APIView):
    """Create a design and its scenarios from a design file (errors by field path and line:
    ``cluster.nodes``, ``scenarios[0].job.parallel.tp``...)."""

    parser_classes = [*YAML_PARSERS, MultiPartParser, BoundedJSONParser]

    def post(self, request):
        text, fields = yaml_body(request, DesignImportSerializer, "design file")
        team_id = fields.get("team") or query_id(request, "team")
        if team_id is None:
            raise ValidationError({"team": "team: choose the team to save the design in (?team=<id>)"})
        team = referenced(Team, request.user, team_id, field="team", action=CHANGE)
        design = design_import_yaml(text=text, team=team, user=request.user)
        return Response(design_detail(design), status=status.HTTP_201_CREATED)
