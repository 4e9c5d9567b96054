"""``/api/``: the routers of ``scenarios.api`` and ``topology.api``, the OpenAPI schema and its
docs page (served from the project: drf-spectacular-sidecar, no CDN), and a JSON 404 for every
other path under ``/api/``."""

from __future__ import annotations

from django.urls import path, re_path
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.exceptions import NotFound
from rest_framework.routers import SimpleRouter

from scenarios.api.designs import DesignImportView, DesignYAMLView
from scenarios.api.views import KindListView, RunViewSet, ScenarioViewSet
from topology.api.views import CatalogEntryView, CatalogKindView, CatalogView, DesignViewSet, TeamViewSet
from topology.fabric.specs import SPEC_TYPES
from twin.api.base import PK_PATTERN

router = SimpleRouter()
router.register("designs", DesignViewSet, basename="design")
router.register("scenarios", ScenarioViewSet, basename="scenario")
router.register("runs", RunViewSet, basename="run")
router.register("teams", TeamViewSet, basename="team")

KIND = "(?P<kind>" + "|".join(SPEC_TYPES) + ")"


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE"])
@authentication_classes([])
@permission_classes([])
def not_found(request, rest=""):
    raise NotFound(f"{request.path[:120]}: no such API path (see /api/docs/)")


app_name = "api"
urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("designs/import/", DesignImportView.as_view(), name="design-import"),
    re_path(rf"^designs/(?P<pk>{PK_PATTERN})/yaml/$", DesignYAMLView.as_view(), name="design-yaml"),
    path("kinds/", KindListView.as_view(), name="kind-list"),
    path("catalog/", CatalogView.as_view(), name="catalog"),
    re_path(rf"^catalog/{KIND}/$", CatalogKindView.as_view(), name="catalog-kind"),
    re_path(
        rf"^catalog/{KIND}/(?P<slug>[-a-zA-Z0-9_]{{1,64}})/$",
        CatalogEntryView.as_view(),
        name="catalog-entry",
    ),
    *router.urls,
    # [\s\S], not ".": a path holding a newline (%0A) is an API path too, answered in JSON
    re_path(r"^(?P<rest>[\s\S]*)$", not_found, name="not-found"),
]
