"""Admin for scenarios and runs (read-mostly: runs are written by workers)."""

from __future__ import annotations

from django.contrib import admin, messages

from scenarios import services
from scenarios.models import Run, RunArray, Scenario


class RunInline(admin.TabularInline):
    model = Run
    extra = 0
    fields = ("kind", "status", "progress", "stage", "created", "finished")
    readonly_fields = fields
    show_change_link = True
    can_delete = False


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    list_display = ("name", "design", "created_by", "updated")
    list_filter = ("design__team",)
    search_fields = ("name", "design__name")
    raw_id_fields = ("design", "created_by")
    inlines = (RunInline,)


class RunArrayInline(admin.TabularInline):
    model = RunArray
    extra = 0
    fields = ("name", "dtype", "shape", "size_bytes")
    readonly_fields = fields
    can_delete = False


@admin.action(description="Cancel selected runs")
def cancel_runs(modeladmin, request, queryset):
    for run in queryset.active():
        services.run_cancel(run=run, user=request.user)
    messages.info(request, "Cancelled the active runs among the selection.")


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("pk", "scenario", "kind", "status", "progress", "created", "finished")
    list_filter = ("status", "kind")
    search_fields = ("scenario__name",)
    raw_id_fields = ("scenario", "created_by")
    readonly_fields = ("task_id", "heartbeat", "started", "finished", "created")
    inlines = (RunArrayInline,)
    actions = (cancel_runs,)
