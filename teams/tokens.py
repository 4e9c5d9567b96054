"""API tokens of users (DRF authtoken): one per user, shown on the account page and printed by
``manage.py api_token USERNAME``; scripts send it as ``Authorization: Token <key>``."""

from __future__ import annotations

from django.db import transaction
from rest_framework.authtoken.models import Token


def api_token_get_or_create(*, user) -> Token:
    """The user's API token, created if they have none."""
    token, _ = Token.objects.get_or_create(user=user)
    return token


@transaction.atomic
def api_token_regenerate(*, user) -> Token:
    """Replace the user's API token (the old key stops working at once)."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)


def api_token_of(*, user) -> Token | None:
    """The user's API token, or None."""
    return Token.objects.filter(user=user).first()
