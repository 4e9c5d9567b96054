"""URLs of designs."""

from __future__ import annotations

from django.urls import path

from topology import views

app_name = "topology"
urlpatterns = [
    path("", views.design_list, name="design-list"),
    path("new/", views.design_new, name="design-new"),
    path("new/preview/", views.design_preview, name="design-preview"),
    path("builds/<pk:pk>/", views.build_detail, name="build-detail"),
    path("builds/<pk:pk>/status/", views.build_status, name="build-status"),
    path("<pk:pk>/", views.design_detail, name="design-detail"),
    path("<pk:pk>/edit/", views.design_edit, name="design-edit"),
    path("<pk:pk>/history/", views.design_history, name="design-history"),
    path("<pk:pk>/fork/", views.design_fork, name="design-fork"),
    path("<pk:pk>/delete/", views.design_delete, name="design-delete"),
    path("<pk:pk>/racks/", views.design_racks, name="design-racks"),
    path("<pk:pk>/racks/<pk:rack_pk>/", views.rack_detail, name="rack-detail"),
    path("<pk:pk>/racks/<pk:rack_pk>/edit/", views.rack_edit, name="rack-edit"),
    path("<pk:pk>/racks/<pk:rack_pk>/add-like/", views.rack_add, name="rack-add"),
    path("<pk:pk>/racks/<pk:rack_pk>/remove/", views.rack_remove, name="rack-remove"),
    path("<pk:pk>/feeds/", views.design_feeds, name="design-feeds"),
    path("<pk:pk>/feeds/<pk:feed_pk>/edit/", views.feed_edit, name="feed-edit"),
]
