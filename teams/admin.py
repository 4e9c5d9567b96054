"""Admin of teams and their members, and the base of every team-owned model's admin.

Staff who are not superusers see and change only what the permission module lets them
(``get_queryset`` through ``restrict``, object permissions through ``allows``); members and
roles go through the team services (invitations, the last-admin rule).
"""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied, ValidationError
from rest_framework.authtoken.models import TokenProxy

from teams import services
from teams.models import Team, TeamMembership
from teams.permissions import CHANGE, MANAGE, TEAM_PATHS, VIEW, allows, restrict


class TeamOwnedAdmin(admin.ModelAdmin):
    """Admin of a team-owned model for staff: rows, choices and object permissions come from the
    permission module (superusers pass every check there)."""

    #: The action that changing (and deleting) a row needs.
    change_action = CHANGE
    delete_action = CHANGE

    def get_queryset(self, request):
        return restrict(super().get_queryset(request), request.user, VIEW)

    def has_change_permission(self, request, obj=None):
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or allows(obj, request.user, self.change_action))

    def has_delete_permission(self, request, obj=None):
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or allows(obj, request.user, self.delete_action))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None and db_field.related_model._meta.label_lower in TEAM_PATHS:
            field.queryset = restrict(field.queryset, request.user, self.change_action)
        return field

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        field = super().formfield_for_manytomany(db_field, request, **kwargs)
        if field is not None and db_field.related_model._meta.label_lower in TEAM_PATHS:
            field.queryset = restrict(field.queryset, request.user, self.change_action)
        return field

    def _require_all(self, request, queryset, action: str) -> None:
        if restrict(queryset, request.user, action).count() != queryset.count():
            raise PermissionDenied(f"your role does not allow '{action}' on every selected row")


class MembershipInline(admin.TabularInline):
    model = TeamMembership
    extra = 1
    autocomplete_fields = ("user",)


def _membership_saved(request, membership, change: bool) -> None:
    """An admin form's membership through the team services (their rules: a team keeps an admin)."""
    if change:
        services.membership_update(membership=membership, role=membership.role, user=request.user)
    else:
        services.team_invite(
            team=membership.team,
            username=membership.user.get_username(),
            role=membership.role,
            user=request.user,
        )


@admin.register(Team)
class TeamAdmin(TeamOwnedAdmin):
    list_display = ("name", "slug")
    search_fields = ("name",)
    prepopulated_fields = {"slug": ("name",)}
    inlines = (MembershipInline,)
    change_action = MANAGE
    delete_action = MANAGE

    def save_formset(self, request, form, formset, change):
        if formset.model is not TeamMembership:
            return super().save_formset(request, form, formset, change)
        try:
            for inline in formset.forms:
                if not inline.has_changed() or not inline.cleaned_data:
                    continue
                membership = inline.instance
                if inline.cleaned_data.get("DELETE") and membership.pk:
                    services.membership_remove(membership=membership, user=request.user)
                elif not inline.cleaned_data.get("DELETE"):
                    membership.team = form.instance
                    _membership_saved(request, membership, change=bool(membership.pk))
        except ValidationError as error:
            raise PermissionDenied("; ".join(error.messages)) from None


@admin.register(TeamMembership)
class TeamMembershipAdmin(TeamOwnedAdmin):
    list_display = ("team", "user", "role")
    list_filter = ("role", "team")
    search_fields = ("user__username", "team__name")
    change_action = MANAGE
    delete_action = MANAGE

    def save_model(self, request, obj, form, change):
        try:
            _membership_saved(request, obj, change)
        except ValidationError as error:
            raise PermissionDenied("; ".join(error.messages)) from None

    def delete_model(self, request, obj):
        services.membership_remove(membership=obj, user=request.user)

    def delete_queryset(self, request, queryset):
        self._require_all(request, queryset, MANAGE)
        for membership in list(queryset):
            services.membership_remove(membership=membership, user=request.user)


# Verbatim DRF tokens are gone (teams' hashed_tokens migration): knox's tokens have the admin.
if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)
