"""Admin for the hardware catalog (curated here by staff) and for designs and their parts.

Every save or delete of a design part goes through ``services.design_changed`` (in the admin's
transaction, with a history entry of the form's changes), and every catalog edit through
``services.catalog_changed``, so the designs' version moves and no cache serves stale derived
data. Staff who are not superusers see and change only what the permission module lets them
(``teams.admin.TeamOwnedAdmin``: ``get_queryset`` through ``restrict``, object permissions
through ``allows``); teams and their members have their admin in ``teams.admin``.
"""

from __future__ import annotations

import yaml
from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import Model
from django.http import HttpResponse
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import mark_safe

from teams.admin import TeamOwnedAdmin
from teams.permissions import CHANGE, MANAGE, require
from topology import models, services
from topology.choices import ChangeAction
from topology.fabric.specs import spec_to_dict
from topology.selectors import catalog_load

CATALOG_KIND = {model: kind for kind, model in models.CATALOG_MODELS.items()}


def form_diff(form) -> tuple[services.FieldChange, ...]:
    """The fields an admin form changed, before and after, as the history shows them."""
    lines = []
    for name in form.changed_data:
        field = form.fields[name]
        before, after = form.initial.get(name), form.cleaned_data.get(name)
        if isinstance(field, forms.ModelMultipleChoiceField):
            before = list(before or [])
        elif (
            isinstance(field, forms.ModelChoiceField) and before is not None and not isinstance(before, Model)
        ):
            before = field.queryset.filter(pk=before).first()
        label = str(field.label or name)
        lines.append(
            services.FieldChange(name, label, services.display_value(before), services.display_value(after))
        )
    return tuple(lines)


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
    """A catalog table: every figure's source beside it (the row's ``sources``, field → datasheet
    or paper), and the model's rules (``clean``: failure-rate and efficiency ranges) on save."""

    search_fields = ("slug", "name")
    actions = (export_yaml,)
    prepopulated_fields = {"slug": ("name",)}
    readonly_fields = ("figure_sources",)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        sources = obj.sources if obj is not None and isinstance(obj.sources, dict) else {}
        for name, field in form.base_fields.items():
            source = sources.get(name)
            if source:
                # The admin renders help text as HTML: the source is escaped, the label is ours.
                before = escape(str(field.help_text)) + "<br>" if field.help_text else ""
                field.help_text = mark_safe(f"{before}<strong>Source:</strong> {escape(str(source))}")
            elif obj is not None and isinstance(field, forms.FloatField | forms.IntegerField):
                before = escape(str(field.help_text)) + "<br>" if field.help_text else ""
                field.help_text = mark_safe(f"{before}<em>No source recorded for this figure.</em>")
        return form

    @admin.display(description="sources of the figures")
    def figure_sources(self, obj):
        sources = obj.sources if obj is not None and isinstance(obj.sources, dict) else {}
        if not sources:
            return "none recorded"
        labels = {f.name: str(f.verbose_name) for f in obj._meta.concrete_fields}
        return format_html(
            "<dl class='figure-sources'>{}</dl>",
            format_html_join(
                "", "<dt>{}</dt><dd>{}</dd>", ((labels.get(k, k), v) for k, v in sorted(sources.items()))
            ),
        )

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change:
            services.catalog_changed(obj, user=request.user, diff=form_diff(form))


class DesignPartAdmin(TeamOwnedAdmin):
    """Admin of a design or one of its parts: every change bumps the design's version and
    writes its history entry."""

    def save_model(self, request, obj, form, change):
        if isinstance(obj, models.Design):
            require(obj.team, request.user, CHANGE)
        else:
            require(services.design_of(obj), request.user, CHANGE)
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        # Called after save_model, inside the same transaction, once the many-to-many rows
        # (a feed's racks) are saved too: one version bump per saved form. A new design starts
        # at version 1 with its own history entry.
        super().save_related(request, form, formsets, change)
        obj = form.instance
        kind, name = str(obj._meta.verbose_name), str(obj)
        if isinstance(obj, models.Design) and not change:
            services.history_record(
                design=obj,
                user=request.user,
                change=services.Change(ChangeAction.CREATED, "design", name, "created in the admin"),
            )
            return
        diff = form_diff(form)
        action = ChangeAction.CHANGED if change else ChangeAction.ADDED
        summary = (
            services.diff_summary(kind, name, diff) + " (in the admin)"
            if diff and change
            else f"{kind} {name} {action} in the admin"
        )
        services.design_changed(
            services.design_of(obj),
            user=request.user,
            change=services.Change(action, kind, name, summary, diff),
        )

    def delete_model(self, request, obj):
        if isinstance(obj, models.Design):
            services.design_delete(design=obj, user=request.user)
            return
        services.design_part_delete(part=obj, user=request.user)

    def delete_queryset(self, request, queryset):
        if queryset.model is models.Design:
            self._require_all(request, queryset, MANAGE)
            for design in list(queryset):
                services.design_delete(design=design, user=request.user)
            return
        self._require_all(request, queryset, CHANGE)
        with transaction.atomic():
            designs = list(services.designs_of(queryset))
            count, kind = queryset.count(), str(queryset.model._meta.verbose_name_plural)
            super().delete_queryset(request, queryset)
            for design in designs:
                services.design_changed(
                    design,
                    user=request.user,
                    change=services.Change(
                        ChangeAction.REMOVED, kind, "", f"{count} {kind} removed in the admin"
                    ),
                )


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
