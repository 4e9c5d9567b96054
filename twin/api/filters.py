"""Filters shared by the API's lists (django-filter)."""

from __future__ import annotations

import django_filters
from django import forms

#: Largest primary key (a bigger number is a 400 in a filter, never a database overflow).
MAX_PK = 2**63 - 1


class IdFilter(django_filters.Filter):
    """An object id, 1 .. 2**63 - 1."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_PK)
        super().__init__(*args, **kwargs)
