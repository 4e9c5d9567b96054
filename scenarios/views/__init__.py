"""Pages of scenarios and runs, by concern: ``scenarios`` (list, editor, duplicate, the scenario
file, delete), ``runs`` (start, the live run page, its state and charts, cancel, delete, apply a
searched layout), ``compare`` (runs side by side), ``designs`` (the design page's floor plan and
panel, the runs of each version, the design file) and ``kind_data`` (what a kind's page module
fetches). ``doors`` finds every object through the permission module. Thin doors: forms in,
services and selectors out; another team's object is a 404."""

from __future__ import annotations

from scenarios.views.compare import compare
from scenarios.views.designs import (
    design_export,
    design_floor_plan,
    design_import,
    design_panel,
    design_version_runs,
)
from scenarios.views.kind_data import run_array_bytes, run_kind_data
from scenarios.views.runs import (
    run_again_view,
    run_cancel_view,
    run_charts,
    run_delete_view,
    run_detail,
    run_rerun_view,
    run_scenario_yaml,
    run_start_view,
    run_state_json,
    search_apply_view,
)
from scenarios.views.scenarios import (
    propose_layout,
    scenario_delete_view,
    scenario_detail,
    scenario_duplicate_view,
    scenario_import,
    scenario_list,
    scenario_new,
    scenario_yaml,
)

__all__ = [
    "compare",
    "design_export",
    "design_floor_plan",
    "design_import",
    "design_panel",
    "design_version_runs",
    "propose_layout",
    "run_again_view",
    "run_array_bytes",
    "run_cancel_view",
    "run_charts",
    "run_delete_view",
    "run_detail",
    "run_kind_data",
    "run_rerun_view",
    "run_scenario_yaml",
    "run_start_view",
    "run_state_json",
    "scenario_delete_view",
    "scenario_detail",
    "scenario_duplicate_view",
    "scenario_import",
    "scenario_list",
    "scenario_new",
    "scenario_yaml",
    "search_apply_view",
]
