"""``/api/``: every app's API routes (``scenarios.api.urls``: scenarios, runs, kinds and the
design URL space; ``topology.api.urls``: the catalog; ``teams.api.urls``: teams), the OpenAPI
schema and its docs page (served from the project: drf-spectacular-sidecar, no CDN), and a JSON
404 for every other path under ``/api/``."""

from __future__ import annotations

from django.urls import include, path, re_path
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.exceptions import NotFound


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
    path("", include("scenarios.api.urls")),
    path("", include("topology.api.urls")),
    path("", include("teams.api.urls")),
    # [\s\S], not ".": a path holding a newline (%0A) is an API path too, answered in JSON
    re_path(r"^(?P<rest>[\s\S]*)$", not_found, name="not-found"),
]
