"""API views of teams and their members: thin doors over the team services, every object
through ``teams.permissions`` (another team is a 404; a role that may see but not act, a 403)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from teams import services, tokens
from teams.api.base import TeamObjectViewSet
from teams.api.serializers import (
    ApiTokenSerializer,
    InviteSerializer,
    IssuedApiTokenSerializer,
    MembershipSerializer,
    RoleSerializer,
    TeamSerializer,
)
from teams.models import Team, TeamMembership
from teams.permissions import MANAGE, VIEW, restrict
from twin.api.base import ApiViewMixin, validated


@extend_schema(tags=["teams"])
class TeamViewSet(mixins.ListModelMixin, TeamObjectViewSet):
    """Your teams and their members; admins invite, change roles and remove members."""

    model = Team
    serializer_class = TeamSerializer

    def retrieve(self, request, pk=None):
        return Response(TeamSerializer(self.get_object()).data)

    @extend_schema(methods=["get"], responses={200: MembershipSerializer(many=True)})
    @extend_schema(methods=["post"], request=InviteSerializer, responses={201: MembershipSerializer})
    @action(detail=True, methods=["get", "post"])
    def members(self, request, pk=None):
        """The team's members (GET); invite a user with a role (POST, team admins)."""
        if request.method == "GET":
            team = self.get_object(VIEW)
            members = restrict(TeamMembership.objects, request.user, VIEW).filter(team=team)
            page = self.paginate_queryset(members.select_related("user").order_by("pk"))
            return self.get_paginated_response(MembershipSerializer(page, many=True).data)
        team = self.get_object(MANAGE)
        data = validated(InviteSerializer, request.data)
        membership = services.team_invite(
            team=team, username=data["username"], role=data["role"], user=request.user
        )
        return Response(MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(methods=["patch"], request=RoleSerializer, responses={200: MembershipSerializer})
    @extend_schema(methods=["delete"], responses={204: None})
    @extend_schema(parameters=[OpenApiParameter("member", int, OpenApiParameter.PATH)])
    @action(detail=True, methods=["patch", "delete"], url_path=r"members/(?P<member>[0-9]{1,18})")
    def member(self, request, pk=None, member=None):
        """Change a member's role (PATCH, team admins) or remove them (DELETE: team admins, or
        the member leaving); a team keeps at least one admin."""
        team = self.get_object(VIEW)
        membership = (
            restrict(TeamMembership.objects, request.user, VIEW).filter(team=team, pk=int(member)).first()
        )
        if membership is None:
            raise NotFound(f"member {member}: not found")
        if request.method == "DELETE":
            services.membership_remove(membership=membership, user=request.user)
            return Response(status=status.HTTP_204_NO_CONTENT)
        data = validated(RoleSerializer, request.data)
        membership = services.membership_update(membership=membership, role=data["role"], user=request.user)
        return Response(MembershipSerializer(membership).data)


@extend_schema(tags=["account"])
class ApiTokenViewSet(ApiViewMixin, viewsets.ViewSet):
    """Your API tokens: list them, create one (its secret is in this answer only), revoke one
    by its ``token_key``, or revoke them all."""

    lookup_field = "token_key"
    lookup_value_regex = "[0-9A-Za-z_-]{1,25}"

    @extend_schema(responses={200: ApiTokenSerializer(many=True)})
    def list(self, request):
        return Response(ApiTokenSerializer(tokens.api_tokens_of(user=request.user), many=True).data)

    @extend_schema(request=None, responses={201: IssuedApiTokenSerializer})
    def create(self, request):
        issued = tokens.api_token_create(user=request.user)
        body = {**ApiTokenSerializer(issued.token).data, "key": issued.key}
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(responses={204: None})
    def destroy(self, request, token_key=None):
        if not tokens.api_token_revoke(user=request.user, token_key=token_key):
            raise NotFound(f"token {token_key}: not found")
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={204: None})
    @action(detail=False, methods=["post"], url_path="revoke-all")
    def revoke_all(self, request):
        """Revoke every token of yours (this request's own token too)."""
        tokens.api_tokens_revoke_all(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
