"""Pages of designs, by concern: ``designs`` (list, one design, edit, history, fork, delete),
``generate`` (a new design from a generator, its preview, the save's progress) and ``racks``
(rack budgets, racks of servers, feeds and panels)."""

from __future__ import annotations

from topology.views.designs import (
    design_delete,
    design_detail,
    design_edit,
    design_fork,
    design_history,
    design_list,
    rack_detail,
)
from topology.views.generate import build_detail, build_status, design_new, design_preview
from topology.views.racks import design_feeds, design_racks, feed_edit, rack_add, rack_edit, rack_remove

__all__ = [
    "build_detail",
    "build_status",
    "design_delete",
    "design_detail",
    "design_edit",
    "design_feeds",
    "design_fork",
    "design_history",
    "design_list",
    "design_new",
    "design_preview",
    "design_racks",
    "feed_edit",
    "rack_add",
    "rack_detail",
    "rack_edit",
    "rack_remove",
]
