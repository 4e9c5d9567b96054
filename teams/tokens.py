"""API tokens of users (django-rest-knox): stored as digests, so the secret is shown once, when
the token is created (the account page, ``POST /api/account/tokens/``, ``manage.py api_token
USERNAME``); scripts send it as ``Authorization: Token <secret>``. A user lists and revokes
their tokens (by the first characters knox keeps in clear, ``token_key``); a password change
and "log out everywhere" revoke them all; each expires after ``TWIN_API_TOKEN_TTL_DAYS``."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from knox.models import AuthToken


@dataclass(frozen=True)
class IssuedToken:
    """A token just created: its row and the secret, which exists nowhere else afterwards."""

    token: AuthToken
    key: str


def api_tokens_of(*, user):
    """The user's live tokens, newest first (expired ones are deleted as knox would)."""
    from django.utils import timezone

    AuthToken.objects.filter(user=user, expiry__lt=timezone.now()).delete()
    return AuthToken.objects.filter(user=user).order_by("-created")


def api_token_create(*, user) -> IssuedToken:
    """A new API token of the user (their other tokens keep working)."""
    token, key = AuthToken.objects.create(user=user)
    return IssuedToken(token=token, key=key)


@transaction.atomic
def api_token_regenerate(*, user) -> IssuedToken:
    """Revoke every token of the user and create one new token."""
    api_tokens_revoke_all(user=user)
    return api_token_create(user=user)


def api_token_revoke(*, user, token_key: str) -> bool:
    """Revoke the user's token whose clear prefix is ``token_key``; False if they have none."""
    deleted, _ = AuthToken.objects.filter(user=user, token_key=token_key).delete()
    return deleted > 0


def api_tokens_revoke_all(*, user) -> int:
    """Revoke every token of the user (log out everywhere, password changed); how many."""
    deleted, _ = AuthToken.objects.filter(user=user).delete()
    return deleted
