"""Root URL configuration."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from twin import views

team_patterns = [
    path("", views.team_list, name="list"),
    path("switch/", views.team_switch_view, name="switch"),
    path("<pk:pk>/", views.team_detail, name="detail"),
    path("<pk:pk>/invite/", views.team_invite, name="invite"),
    path("<pk:pk>/members/<pk:membership_pk>/role/", views.membership_role, name="member-role"),
    path("<pk:pk>/members/<pk:membership_pk>/remove/", views.membership_remove, name="member-remove"),
]

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="topology:design-list", permanent=False)),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("teams/", include((team_patterns, "teams"))),
    path("account/", views.account, name="account"),
    path("api/", include("twin.api.urls")),
    path("designs/", include("topology.urls")),
    path("", include("scenarios.urls")),  # scenarios/, runs/, compare/
]
