"""``/api/teams/`` and ``/api/account/tokens/``: the teams router (included, with every app's API routes, by
``twin/api/urls.py`` in the ``api`` namespace)."""

from __future__ import annotations

from rest_framework.routers import SimpleRouter

from teams.api.views import ApiTokenViewSet, TeamViewSet

router = SimpleRouter()
router.register("teams", TeamViewSet, basename="team")
router.register("account/tokens", ApiTokenViewSet, basename="api-token")

urlpatterns = [*router.urls]
