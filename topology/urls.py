"""URLs of designs."""

from __future__ import annotations

from django.urls import path

from topology import views

app_name = "topology"
urlpatterns = [
    path("", views.design_list, name="design-list"),
    path("<int:pk>/", views.design_detail, name="design-detail"),
    path("<int:pk>/racks/<int:rack_pk>/", views.rack_detail, name="rack-detail"),
]
