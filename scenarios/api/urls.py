"""The scenarios app's API routes: scenarios, runs, run kinds, and the whole design URL space
(``/api/designs/...``): topology's ``DesignViewSet`` together with the design file's import and
export, which sit here because the file is in the scenario format (topology may not import
scenarios). Included by ``twin/api/urls.py`` in the ``api`` namespace."""

from __future__ import annotations

from django.urls import path, re_path
from rest_framework.routers import SimpleRouter

from scenarios.api.designs import DesignImportView, DesignYAMLView
from scenarios.api.views import KindListView, RunViewSet, ScenarioViewSet
from topology.api.views import DesignViewSet
from twin.api.base import PK_PATTERN

router = SimpleRouter()
router.register("designs", DesignViewSet, basename="design")
router.register("scenarios", ScenarioViewSet, basename="scenario")
router.register("runs", RunViewSet, basename="run")

urlpatterns = [
    path("designs/import/", DesignImportView.as_view(), name="design-import"),
    re_path(rf"^designs/(?P<pk>{PK_PATTERN})/yaml/$", DesignYAMLView.as_view(), name="design-yaml"),
    path("kinds/", KindListView.as_view(), name="kind-list"),
    *router.urls,
]
