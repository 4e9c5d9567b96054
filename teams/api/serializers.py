"""Serializers of the teams API: they only shape data (the services validate)."""

from __future__ import annotations

from rest_framework import serializers

from teams.models import Team, TeamMembership


class TeamSerializer(serializers.ModelSerializer):
    class Meta:
        model = Team
        fields = ("id", "name", "slug")
        read_only_fields = fields


class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = TeamMembership
        fields = ("id", "team", "username", "role")
        read_only_fields = fields


class InviteSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.CharField(max_length=16, help_text="a role of teams.permissions.ROLE_ACTIONS")


class RoleSerializer(serializers.Serializer):
    role = serializers.CharField(max_length=16, help_text="a role of teams.permissions.ROLE_ACTIONS")
