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


class ApiTokenSerializer(serializers.Serializer):
    """One of the user's API tokens: its clear prefix (its id here), never the secret."""

    token_key = serializers.CharField(read_only=True, help_text="the token's first characters: its id")
    created = serializers.DateTimeField(read_only=True)
    expiry = serializers.DateTimeField(read_only=True, allow_null=True)


class IssuedApiTokenSerializer(ApiTokenSerializer):
    """A token just created, with its secret (shown this once)."""

    key = serializers.CharField(read_only=True, help_text="the secret: send it as Authorization: Token <key>")
