"""The topology app's API routes: the hardware catalog (``/api/catalog/...``). Its designs
viewset is routed with the design file's endpoints by ``scenarios/api/urls.py``, which owns
``/api/designs/``. Included by ``twin/api/urls.py`` in the ``api`` namespace."""

from __future__ import annotations

from django.urls import path, re_path

from topology.api.views import CatalogEntryView, CatalogKindView, CatalogView
from topology.fabric.specs import SPEC_TYPES

KIND = "(?P<kind>" + "|".join(SPEC_TYPES) + ")"

urlpatterns = [
    path("catalog/", CatalogView.as_view(), name="catalog"),
    re_path(rf"^catalog/{KIND}/$", CatalogKindView.as_view(), name="catalog-kind"),
    re_path(
        rf"^catalog/{KIND}/(?P<slug>[-a-zA-Z0-9_]{{1,64}})/$",
        CatalogEntryView.as_view(),
        name="catalog-entry",
    ),
]
