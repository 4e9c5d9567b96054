"""Admin for the hardware catalog (curated here) and for designs and their parts.

Every save or delete of a design part goes through ``services.design_changed`` (in the admin's
transaction), and every catalog edit through ``services.catalog_changed``, so the designs' version
moves and no cache serves stale derived data.
"""

from __future__ import annotations

import yaml
from django.contrib import admin, messages
from django.db import transaction
from django.http import HttpResponse

from topology import models, services
from topology.fabric.specs import spec_to_dict
from topology.selectors import catalog_load

CATALOG_KIND = {
    models.GpuType: "gpus",
    models.ServerType: "servers",
    models.SwitchType: "switches",
    models.LinkType: "links",
    models.PowerFeedType: "feeds",
}


@admin.action(description="Export selected as catalog YAML")
def export_yaml(modeladmin, request, queryset):
    """Download the selected entries in the format `manage.py catalog import` reads."""
    kind = CATALOG_KIND[queryset.model]
    table = getattr(catalog_load(), kind)
    document = {kind: [spec_to_dict(table[slug]) for slug in queryset.values_list("slug", flat=True)]}
    response = HttpResponse(yaml.safe_dump(document, sort_keys=False), content_type="application/yaml")
    response["Content-Disposition"] = f'attachment; filename="catalog-{kind}.yaml"'
    messages.info(request, f"Exported {queryset.count()} {kind}.")
    return response


class CatalogAdmin(admin.ModelAdmin):
    search_fields = ("slug", "name")
    actions = (export_yaml,)
    prepopulated_fields = {"slug": ("name",)}

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change:
            services.catalog_changed(obj)


class DesignPartAdmin(admin.ModelAdmin):
    """Admin of a design or one of its parts: every change bumps the design's version."""

    def save_related(self, request, form, formsets, change):
        # Called after save_model, inside the same transaction, once the many-to-many rows
        # (a feed's racks) are saved too: one version bump per saved form. A new design starts
        # at version 1.
        super().save_related(request, form, formsets, change)
        if change or not isinstance(form.instance, models.Design):
            services.design_changed(services.design_of(form.instance))

    def delete_model(self, request, obj):
        if isinstance(obj, models.Design):
            return super().delete_model(request, obj)
        design = services.design_of(obj)
        with transaction.atomic():
            super().delete_model(request, obj)
            services.design_changed(design)

    def delete_queryset(self, request, queryset):
        if queryset.model is models.Design:
            return super().delete_queryset(request, queryset)
        with transaction.atomic():
            designs = list(services.designs_of(queryset))
            super().delete_queryset(request, queryset)
            services.designs_changed(models.Design.objects.filter(pk__in=[d.pk for d in designs]))


@admin.register(models.GpuType)
class GpuTypeAdmin(CatalogAdmin):
    list_display = (
        "slug",
        "vendor",
        "name",
        "peak_tflops_bf16",
        "peak_tflops_fp8",
        "hbm_gib",
        "hbm_tbps",
        "tdp_w",
        "scaleup_gbytes_per_s",
        "annual_failure_rate",
    )
    list_filter = ("vendor",)
    search_fields = ("slug", "name", "vendor")


@admin.register(models.ServerType)
class ServerTypeAdmin(CatalogAdmin):
    list_display = (
        "slug",
        "name",
        "gpu_type",
        "gpus_per_server",
        "scaleup_domain_gpus",
        "nics_per_server",
        "nic_gbps",
        "base_power_w",
        "rack_units",
    )
    list_filter = ("gpu_type__vendor", "nic_gbps", "scaleup_domain_gpus")
    list_select_related = ("gpu_type",)


@admin.register(models.SwitchType)
class SwitchTypeAdmin(CatalogAdmin):
    list_display = ("slug", "name", "roles", "radix", "port_gbps", "latency_ns", "power_w")
    list_filter = ("port_gbps", "radix")


@admin.register(models.LinkType)
class LinkTypeAdmin(CatalogAdmin):
    list_display = ("slug", "name", "gbps", "latency_ns", "power_w", "annual_failure_rate")
    list_filter = ("gbps",)


@admin.register(models.PowerFeedType)
class PowerFeedTypeAdmin(CatalogAdmin):
    list_display = ("slug", "name", "volts", "amps", "phases", "derating", "capacity")
    list_filter = ("phases", "volts")

    @admin.display(description="derated kW")
    def capacity(self, obj):
        return round(obj.capacity_kw, 1)


class MembershipInline(admin.TabularInline):
    model = models.TeamMembership
    extra = 1
    autocomplete_fields = ("user",)


@admin.register(models.Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "slug")
    search_fields = ("name",)
    prepopulated_fields = {"slug": ("name",)}
    inlines = (MembershipInline,)


@admin.register(models.TeamMembership)
class TeamMembershipAdmin(admin.ModelAdmin):
    list_display = ("team", "user", "role")
    list_filter = ("role", "team")
    search_fields = ("user__username", "team__name")


@admin.register(models.Design)
class DesignAdmin(DesignPartAdmin):
    list_display = ("name", "team", "generator", "owner", "updated")
    list_filter = ("generator", "team")
    search_fields = ("name", "description")
    readonly_fields = ("summary", "parameters", "version", "created", "updated")


@admin.register(models.Hall)
class HallAdmin(DesignPartAdmin):
    list_display = ("name", "design", "rows", "columns")
    list_filter = ("design",)


@admin.register(models.Rack)
class RackAdmin(DesignPartAdmin):
    list_display = ("name", "hall", "row", "column", "kind", "u_height", "power_budget_kw")
    list_filter = ("kind", "hall__design")
    search_fields = ("name",)
    list_select_related = ("hall__design",)


@admin.register(models.Node)
class NodeAdmin(DesignPartAdmin):
    list_display = ("name", "rack", "server_type", "u_position")
    list_filter = ("server_type", "rack__hall__design")
    search_fields = ("name", "rack__name")
    list_select_related = ("rack", "server_type")
    raw_id_fields = ("rack",)


@admin.register(models.Gpu)
class GpuAdmin(DesignPartAdmin):
    list_display = ("__str__", "node", "index")
    search_fields = ("node__name",)
    list_select_related = ("node",)
    raw_id_fields = ("node",)


@admin.register(models.Switch)
class SwitchAdmin(DesignPartAdmin):
    list_display = ("name", "design", "switch_type", "tier", "rack", "group", "rail")
    list_filter = ("tier", "switch_type", "design")
    search_fields = ("name",)
    list_select_related = ("design", "switch_type", "rack")
    raw_id_fields = ("rack",)


@admin.register(models.Link)
class LinkAdmin(DesignPartAdmin):
    list_display = ("__str__", "design", "tier", "gbps", "link_type")
    list_filter = ("tier", "link_type", "design")
    list_select_related = ("node", "lower_switch", "upper_switch", "design", "link_type")
    raw_id_fields = ("node", "lower_switch", "upper_switch")


@admin.register(models.PowerFeed)
class PowerFeedAdmin(DesignPartAdmin):
    list_display = ("name", "design", "feed_type", "side", "panel")
    list_filter = ("side", "feed_type", "design")
    search_fields = ("name", "panel")
    raw_id_fields = ("racks",)
