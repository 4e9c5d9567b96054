"""API tokens are stored hashed (knox), listed and revoked by their user (page and API), end
when the password changes or the user logs out everywhere, and the verbatim tokens of before
(DRF authtoken) become hashed tokens of the same secret."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from knox.models import AuthToken
from rest_framework.test import APIClient

from teams.tokens import api_token_create


def _answers(key: str, path: str = "/api/teams/") -> int:
    return APIClient().get(path, HTTP_AUTHORIZATION=f"Token {key}").status_code


def test_tokens_are_stored_as_digests_only(user):
    issued = api_token_create(user=user)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM knox_authtoken")
        stored = " ".join(str(value) for row in cursor.fetchall() for value in row)
    assert issued.key not in stored and issued.key[:15] in stored
    assert _answers(issued.key) == 200


def test_a_password_change_revokes_every_token(user):
    first, second = api_token_create(user=user), api_token_create(user=user)
    user.set_password("a-new-password-456")
    user.save()
    assert _answers(first.key) == 401 and _answers(second.key) == 401
    assert not AuthToken.objects.filter(user=user).exists()


def test_saving_the_user_without_a_new_password_keeps_the_tokens(user):
    issued = api_token_create(user=user)
    user.first_name = "Alice"
    user.save()
    assert _answers(issued.key) == 200


def test_log_out_everywhere_revokes_tokens_and_ends_the_session(client, user, outsider):
    mine, theirs = api_token_create(user=user), api_token_create(user=outsider)
    client.force_login(user)
    response = client.post("/account/logout-everywhere/")
    assert response.status_code == 302
    assert _answers(mine.key) == 401 and _answers(theirs.key) == 200
    assert client.get("/account/").status_code == 302  # to the login page


def test_the_api_lists_creates_and_revokes_a_users_own_tokens(user, outsider):
    mine = api_token_create(user=user)
    theirs = api_token_create(user=outsider)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {mine.key}")
    listed = api.get("/api/account/tokens/").json()
    assert [t["token_key"] for t in listed] == [mine.token.token_key]
    assert all("key" not in t and "digest" not in t for t in listed)
    created = api.post("/api/account/tokens/")
    assert created.status_code == 201 and _answers(created.json()["key"]) == 200
    # another user's token is not found, not revoked
    assert api.delete(f"/api/account/tokens/{theirs.token.token_key}/").status_code == 404
    assert _answers(theirs.key) == 200
    assert api.delete(f"/api/account/tokens/{created.json()['token_key']}/").status_code == 204
    assert _answers(created.json()["key"]) == 401
    assert api.post("/api/account/tokens/revoke-all/").status_code == 204
    assert _answers(mine.key) == 401


def test_the_account_page_is_never_cached(client, user):
    client.force_login(user)
    response = client.get("/account/")
    assert "no-store" in response["Cache-Control"]


def test_verbatim_tokens_of_before_are_hashed_and_keep_working(user):
    """The data migration: a DRF authtoken key keeps authenticating, stored only as a digest."""
    from rest_framework.authtoken.models import Token

    verbatim = Token.objects.create(user=user).key
    migration = import_module("teams.migrations.0002_hashed_tokens")
    historical = MigrationLoader(connection).project_state(("teams", "0002_hashed_tokens")).apps
    migration.hash_verbatim_tokens(historical, connection.schema_editor())
    assert not Token.objects.exists()
    token = AuthToken.objects.get(user=user)
    assert token.digest != verbatim and token.expiry is not None
    assert _answers(verbatim) == 200


@pytest.mark.parametrize("header", ["Token", "Token a b"])
def test_malformed_token_headers_are_401(db, header):
    assert APIClient().get("/api/teams/", HTTP_AUTHORIZATION=header).status_code == 401


def test_an_expired_token_is_refused_and_deleted(user):
    from datetime import timedelta

    from django.utils import timezone

    issued = api_token_create(user=user)
    AuthToken.objects.filter(pk=issued.token.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    assert _answers(issued.key) == 401
    assert not AuthToken.objects.filter(pk=issued.token.pk).exists()
