"""Root URL configuration: every app's pages and the API, mounted in one place."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from teams.urls import account_urlpatterns

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="topology:design-list", permanent=False)),
    *account_urlpatterns,  # login/, logout/, account/
    path("admin/", admin.site.urls),
    path("teams/", include("teams.urls")),
    path("api/", include("twin.api.urls")),
    path("designs/", include("topology.urls")),
    path("", include("scenarios.urls")),  # scenarios/, runs/, compare/
]
