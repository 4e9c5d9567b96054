"""Writes and actions of the topology app, by concern:

- ``catalog``: import and export the hardware catalog; an edited entry reaches its designs;
- ``history``: the design-change service (version bump + history entry in the changing
  transaction) and optimistic concurrency (``design_lock``, ``DesignConflict``);
- ``building``: save a generated plan, the one validation of generator parameters and the one
  rule of design names (``design_name_check``; ``selectors.design_free_name`` picks a free one);
- ``builds``: background saves (generator or fork) with progress;
- ``editing``: rename, rack budgets, feeds and panels, racks of servers, fork, delete;
- ``demo``: the demo team and designs ``make run`` shows (teams and members: ``teams.services``).
"""

from __future__ import annotations

from topology.services.building import (
    BULK_BATCH,
    GENERATOR_PARAMS,
    design_create_from_plan,
    design_generate,
    design_name_check,
    generator_description,
    generator_plan,
)
from topology.services.builds import design_build_execute, design_build_start, design_builds_fail_orphaned
from topology.services.catalog import (
    CATALOG_MODELS,
    CatalogImportReport,
    catalog_changed,
    catalog_export,
    catalog_import,
)
from topology.services.demo import DEMO_DESIGNS, DEMO_TEAM, demo_seed
from topology.services.editing import (
    design_delete,
    design_fork,
    design_part_delete,
    design_part_save,
    design_update,
    design_validate,
    feed_update,
    rack_add,
    rack_remove,
    rack_update,
)
from topology.services.history import (
    Change,
    DesignConflict,
    FieldChange,
    design_changed,
    design_lock,
    design_of,
    designs_changed,
    designs_of,
    diff_of,
    diff_summary,
    display_value,
    history_record,
    snapshot,
)

__all__ = [
    "BULK_BATCH",
    "CATALOG_MODELS",
    "DEMO_DESIGNS",
    "DEMO_TEAM",
    "GENERATOR_PARAMS",
    "CatalogImportReport",
    "Change",
    "DesignConflict",
    "FieldChange",
    "catalog_changed",
    "catalog_export",
    "catalog_import",
    "demo_seed",
    "design_build_execute",
    "design_build_start",
    "design_builds_fail_orphaned",
    "design_changed",
    "design_create_from_plan",
    "design_delete",
    "design_fork",
    "design_generate",
    "design_lock",
    "design_name_check",
    "design_of",
    "design_part_delete",
    "design_part_save",
    "design_update",
    "design_validate",
    "designs_changed",
    "designs_of",
    "diff_of",
    "diff_summary",
    "display_value",
    "feed_update",
    "generator_description",
    "generator_plan",
    "history_record",
    "rack_add",
    "rack_remove",
    "rack_update",
    "snapshot",
]
