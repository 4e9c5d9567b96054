"""Object lookup of every API view through the permission module: a list holds what the user
may view, one object is looked up among those (404 otherwise, so another team's object reads
exactly like a missing one) and ``require``-d for the action the request needs."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from rest_framework import viewsets
from rest_framework.exceptions import NotFound

from teams.permissions import VIEW, require, restrict
from twin.api.base import PK_PATTERN, ApiViewMixin


class TeamObjectViewSet(ApiViewMixin, viewsets.GenericViewSet):
    """A viewset of team-owned rows: lists hold what the user may view; one object is looked up
    among those (404 otherwise) and ``require``-d for the action the request needs."""

    lookup_value_regex = PK_PATTERN
    model = None  # set by subclasses

    def base_queryset(self):
        return self.model.objects.all()

    def get_queryset(self):
        return restrict(self.base_queryset(), self.request.user, VIEW)

    def get_object(self, action: str = VIEW):
        value = self.kwargs[self.lookup_url_kwarg or self.lookup_field]
        obj = self.get_queryset().filter(pk=int(value)).first()
        if obj is None:
            raise NotFound(f"{self.model._meta.verbose_name} {value}: not found")
        return require(obj, self.request.user, action)


def referenced(model, user, pk: int, *, field: str, action: str = VIEW):
    """The ``model`` row an id in a request body names (``{"scenario": 7}``), ``require``-d for
    ``action`` (403 when the role does not allow it).

    Raises ValidationError ``{field: "<field>: ... not found"}`` when the user may not see it:
    another team's id reads exactly like one that does not exist.
    """
    obj = restrict(model.objects.all(), user, VIEW).filter(pk=pk).first()
    if obj is None:
        raise ValidationError({field: f"{field}: {model._meta.verbose_name} {pk} not found"})
    return require(obj, user, action)


def path_object(model, user, pk, action: str = VIEW):
    """The row a URL names, through the permission module (404 for another team's)."""
    obj = restrict(model.objects.all(), user, VIEW).filter(pk=int(pk)).first()
    if obj is None:
        raise NotFound(f"{model._meta.verbose_name} {pk}: not found")
    return require(obj, user, action)
