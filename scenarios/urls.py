"""URLs of scenarios, runs and comparisons (included at the site root by ``twin/urls.py``)."""

from __future__ import annotations

from django.urls import path

from scenarios import views

app_name = "scenarios"
urlpatterns = [
    path("scenarios/", views.scenario_list, name="scenario-list"),
    path("scenarios/new/", views.scenario_new, name="scenario-new"),
    path("scenarios/import/", views.scenario_import, name="scenario-import"),
    path("scenarios/<pk:pk>/", views.scenario_detail, name="scenario-detail"),
    path("scenarios/<pk:pk>/duplicate/", views.scenario_duplicate_view, name="scenario-duplicate"),
    path("scenarios/<pk:pk>/delete/", views.scenario_delete_view, name="scenario-delete"),
    path("scenarios/<pk:pk>/yaml/", views.scenario_yaml, name="scenario-yaml"),
    path("scenarios/<pk:pk>/runs/", views.run_start_view, name="run-start"),
    path("scenarios/designs/<pk:pk>/floor-plan/", views.design_floor_plan, name="design-floor-plan"),
    path("scenarios/designs/<pk:pk>/panel/", views.design_panel, name="design-panel"),
    path("scenarios/designs/<pk:pk>/propose-layout/", views.propose_layout, name="propose-layout"),
    path("scenarios/designs/<pk:pk>/export/", views.design_export, name="design-export"),
    path(
        "scenarios/designs/<pk:pk>/version-runs/",
        views.design_version_runs,
        name="design-version-runs",
    ),
    path("scenarios/designs/import/", views.design_import, name="design-import"),
    path("runs/<pk:pk>/", views.run_detail, name="run-detail"),
    path("runs/<pk:pk>/state/", views.run_state_json, name="run-state"),
    path("runs/<pk:pk>/charts/", views.run_charts, name="run-charts"),
    path("runs/<pk:pk>/cancel/", views.run_cancel_view, name="run-cancel"),
    path("runs/<pk:pk>/rerun/", views.run_rerun_view, name="run-rerun"),
    path("runs/<pk:pk>/again/", views.run_again_view, name="run-again"),
    path("runs/<pk:pk>/scenario.yaml", views.run_scenario_yaml, name="run-scenario-yaml"),
    path("runs/<pk:pk>/kind-data/", views.run_kind_data, name="run-kind-data"),
    path("runs/<pk:pk>/arrays/<slug:name>/", views.run_array_bytes, name="run-array"),
    path("runs/<pk:pk>/delete/", views.run_delete_view, name="run-delete"),
    path("runs/<pk:pk>/apply-layout/", views.search_apply_view, name="search-apply"),
    path("compare/", views.compare, name="compare"),
]
