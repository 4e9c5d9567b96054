"""URLs of teams (``teams:...``, included under ``/teams/`` by ``twin/urls.py``) and of the
account pages at the site root (``login``, ``logout``, ``account``: no namespace)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from teams import views

app_name = "teams"
urlpatterns = [
    path("", views.team_list, name="list"),
    path("switch/", views.team_switch_view, name="switch"),
    path("<pk:pk>/", views.team_detail, name="detail"),
    path("<pk:pk>/invite/", views.team_invite, name="invite"),
    path("<pk:pk>/members/<pk:membership_pk>/role/", views.membership_role, name="member-role"),
    path("<pk:pk>/members/<pk:membership_pk>/remove/", views.membership_remove, name="member-remove"),
]

#: Log in, log out and the account page (its API token), mounted at the site root.
account_urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("account/", views.account, name="account"),
    path("account/logout-everywhere/", views.logout_everywhere, name="logout-everywhere"),
]
