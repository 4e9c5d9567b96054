"""API views of designs, racks and the hardware catalog: thin doors over the same
services as the pages and the admin, every object through ``teams.permissions`` (another team's
object is a 404; a role that may see but not act is a 403; the catalog is read by everyone
logged in and changed by staff)."""

from __future__ import annotations

import re

import django_filters
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from teams.api.base import TeamObjectViewSet, referenced
from teams.models import Team
from teams.permissions import CHANGE, MANAGE, VIEW, require_catalog
from topology import services
from topology.api.serializers import (
    CatalogSerializer,
    DesignCreateSerializer,
    DesignDetailSerializer,
    DesignForkSerializer,
    DesignSerializer,
    DesignUpdateSerializer,
    RackSerializer,
    RackUpdateSerializer,
)
from topology.choices import Generator
from topology.fabric.specs import SPEC_TYPES
from topology.models import Design, Rack
from topology.selectors import catalog_load, design_counts
from twin.api.base import ApiViewMixin, validated
from twin.api.errors import rekeyed
from twin.api.filters import IdFilter

# --- designs ---------------------------------------------------------------------------------


class DesignFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id", help_text="team id")
    generator = django_filters.ChoiceFilter(choices=Generator.choices)

    class Meta:
        model = Design
        fields = ("team", "generator")


def design_detail(design: Design) -> dict:
    design.counts = design_counts(design=design)
    return DesignDetailSerializer(design).data


def generate_design(*, prefix: str, **kwargs) -> Design:
    """``services.design_generate``, its parameter errors keyed by their path in the request
    (``params.nodes``)."""
    try:
        return services.design_generate(**kwargs)
    except DjangoValidationError as error:
        raise rekeyed(error, prefix, services.GENERATOR_PARAMS) from None


@extend_schema(tags=["designs"])
class DesignViewSet(mixins.ListModelMixin, TeamObjectViewSet):
    """Designs: generated clusters with their totals; edits carry the version they were read at."""

    model = Design
    serializer_class = DesignSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = DesignFilter

    def base_queryset(self):
        return Design.objects.select_related("team", "owner")

    @extend_schema(request=DesignCreateSerializer, responses={201: DesignDetailSerializer})
    def create(self, request):
        """Generate a design in a team (the generator names a bad parameter and its limit)."""
        data = validated(DesignCreateSerializer, request.data)
        team = referenced(Team, request.user, data["team"], field="team", action=CHANGE)
        design = generate_design(
            generator=data["generator"],
            params=data["params"],
            name=data["name"],
            team=team,
            user=request.user,
            description=data["description"],
            prefix="params",
        )
        return Response(design_detail(design), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: DesignDetailSerializer})
    def retrieve(self, request, pk=None):
        """A design with its totals and row counts."""
        return Response(design_detail(self.get_object()))

    @extend_schema(request=DesignUpdateSerializer, responses={200: DesignDetailSerializer})
    def partial_update(self, request, pk=None):
        """Rename or describe a design at the version you read (409 when it moved since)."""
        design = self.get_object(CHANGE)
        data = validated(DesignUpdateSerializer, request.data)
        design = services.design_update(
            design=design,
            user=request.user,
            expected_version=data["version"],
            name=data.get("name"),
            description=data.get("description"),
        )
        return Response(design_detail(design))

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        """Delete a design with its scenarios and runs (team admins)."""
        services.design_delete(design=self.get_object(MANAGE), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=DesignForkSerializer, responses={201: DesignDetailSerializer})
    @action(detail=True, methods=["post"])
    def fork(self, request, pk=None):
        """Copy a design (every rack, node, switch, link and feed) into a team."""
        design = self.get_object(VIEW)
        data = validated(DesignForkSerializer, request.data)
        team = referenced(Team, request.user, data["team"], field="team", action=CHANGE)
        copy = services.design_fork(design=design, team=team, user=request.user, name=data.get("name"))
        return Response(design_detail(copy), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: RackSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def racks(self, request, pk=None):
        """The design's racks (paginated)."""
        design = self.get_object(VIEW)
        racks = Rack.objects.filter(hall__design=design).order_by("pk")
        page = self.paginate_queryset(racks)
        return self.get_paginated_response(RackSerializer(page, many=True).data)

    @extend_schema(
        request=RackUpdateSerializer,
        responses={200: RackSerializer},
        parameters=[OpenApiParameter("rack", int, OpenApiParameter.PATH)],
    )
    @action(detail=True, methods=["patch"], url_path=r"racks/(?P<rack>[0-9]{1,18})")
    def rack(self, request, pk=None, rack=None):
        """Change a rack's name or power budget at the design version you read (409 if moved)."""
        design = self.get_object(CHANGE)
        row = Rack.objects.filter(hall__design=design, pk=int(rack)).first()
        if row is None:
            raise NotFound(f"rack {rack}: not found")
        data = validated(RackUpdateSerializer, request.data)
        row = services.rack_update(
            rack=row,
            user=request.user,
            expected_version=data["version"],
            power_budget_kw=data.get("power_budget_kw"),
            name=data.get("name"),
        )
        return Response(RackSerializer(row).data)


# --- catalog ---------------------------------------------------------------------------------

KIND_PATTERN = "|".join(SPEC_TYPES)
_ENTRY_MESSAGE = re.compile(r"^(?P<kind>\w+)\[(?P<slug>[^\]]*)\](?:[.:] ?(?P<field>\w+))?")


def _catalog_errors(error: DjangoValidationError) -> DjangoValidationError:
    """A catalog service error keyed by ``kind[slug].field`` (its messages name them)."""
    if hasattr(error, "error_dict"):
        return error
    keyed: dict[str, list[str]] = {}
    for message in error.messages:
        match = _ENTRY_MESSAGE.match(message)
        key = "__all__"
        if match:
            key = f"{match['kind']}[{match['slug']}]" + (f".{match['field']}" if match["field"] else "")
        keyed.setdefault(key, []).append(message)
    return DjangoValidationError(keyed)


def _catalog_save(kind: str, entry: dict, *, update: bool) -> dict:
    try:
        with transaction.atomic():
            services.catalog_import(data={kind: [entry]}, update=update)
    except DjangoValidationError as error:
        raise _catalog_errors(error) from None
    return _kind_entries(kind)[entry["slug"]]


def _kind_entries(kind: str) -> dict[str, dict]:
    return {entry["slug"]: entry for entry in catalog_load().to_dict()[kind]}


KIND_PARAMETER = OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=list(SPEC_TYPES))
SLUG_PARAMETER = OpenApiParameter("slug", str, OpenApiParameter.PATH, pattern="^[-a-zA-Z0-9_]{1,64}$")


@extend_schema(tags=["catalog"])
class CatalogView(ApiViewMixin, APIView):
    """The whole hardware catalog (every logged-in user)."""

    @extend_schema(responses={200: CatalogSerializer}, operation_id="catalog_all")
    def get(self, request):
        require_catalog(request.user, VIEW)
        return Response(services.catalog_export())


@extend_schema(tags=["catalog"], parameters=[KIND_PARAMETER])
class CatalogKindView(ApiViewMixin, APIView):
    """One kind of catalog entries: ``gpus``, ``servers``, ``switches``, ``links``, ``feeds``."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT}, operation_id="catalog_kind_list")
    def get(self, request, kind):
        """Every entry of the kind (the catalog is small: no pages)."""
        require_catalog(request.user, VIEW)
        return Response({kind: list(_kind_entries(kind).values())})

    @extend_schema(
        request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT}, operation_id="catalog_kind_create"
    )
    def post(self, request, kind):
        """Add an entry (staff): every field of the kind, validated like ``catalog import``."""
        require_catalog(request.user, CHANGE)
        entry = request.data
        if not isinstance(entry, dict) or not isinstance(entry.get("slug"), str) or not entry["slug"]:
            raise DjangoValidationError({"slug": "slug: every entry needs a slug (text)"})
        if entry["slug"] in _kind_entries(kind):
            raise DjangoValidationError({"slug": f"slug: {kind} already has {entry['slug'][:64]!r}"})
        return Response(_catalog_save(kind, entry, update=False), status=status.HTTP_201_CREATED)


@extend_schema(tags=["catalog"], parameters=[KIND_PARAMETER, SLUG_PARAMETER])
class CatalogEntryView(ApiViewMixin, APIView):
    """One catalog entry; a change gives every design using it a new version."""

    def _entry(self, kind: str, slug: str) -> dict:
        entry = _kind_entries(kind).get(slug)
        if entry is None:
            raise NotFound(f"{kind}[{slug}]: not found")
        return entry

    @extend_schema(responses={200: OpenApiTypes.OBJECT}, operation_id="catalog_entry_retrieve")
    def get(self, request, kind, slug):
        require_catalog(request.user, VIEW)
        return Response(self._entry(kind, slug))

    @extend_schema(
        request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT}, operation_id="catalog_entry_update"
    )
    def patch(self, request, kind, slug):
        """Change the given fields of an entry (staff); designs using it get a new version."""
        require_catalog(request.user, CHANGE)
        entry = self._entry(kind, slug)
        if not isinstance(request.data, dict):
            raise DjangoValidationError({"body": "body: must be a mapping of fields"})
        changed = {**entry, **{k: v for k, v in request.data.items() if k != "slug"}}
        return Response(_catalog_save(kind, changed, update=True))
