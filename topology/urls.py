"""URLs of designs."""

from __future__ import annotations

from django.urls import path

from topology import views

app_name = "topology"
urlpatterns = [
    path("", views.design_list, name="design-list"),
    path("<pk:pk>/", views.design_detail, name="design-detail"),
    path("<pk:pk>/racks/<pk:rack_pk>/", views.rack_detail, name="rack-detail"),
]
