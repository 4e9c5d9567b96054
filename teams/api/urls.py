"""``/api/teams/``: the teams router (included, with every app's API routes, by
``twin/api/urls.py`` in the ``api`` namespace)."""

from __future__ import annotations

from rest_framework.routers import SimpleRouter

from teams.api.views import TeamViewSet

router = SimpleRouter()
router.register("teams", TeamViewSet, basename="team")

urlpatterns = [*router.urls]
