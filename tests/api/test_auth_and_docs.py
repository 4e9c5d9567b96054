"""Authentication (token for scripts, session with CSRF for the browser), the account page and
`manage.py api_token`, and the schema and docs page served from the project (no CDN)."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.test import Client
from knox.models import AuthToken

from tests.api.conftest import errors_of


@pytest.mark.slow
def test_anonymous_and_bad_tokens_get_401_in_the_error_shape(client, db):
    response = client.get("/api/designs/")
    assert response.status_code == 401 and "__all__" in errors_of(response)
    response = client.get("/api/designs/", HTTP_AUTHORIZATION="Token not-a-real-token")
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Token")


def test_session_auth_needs_csrf_for_writes(user, team, design, job):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    assert browser.get("/api/designs/").status_code == 200
    body = {"design": design.pk, "name": "From the browser", "job": job}
    refused = browser.post("/api/scenarios/", body, content_type="application/json")
    assert refused.status_code == 403 and "CSRF" in errors_of(refused)["__all__"][0]
    page = browser.get("/account/")
    token = page.cookies["csrftoken"].value
    accepted = browser.post("/api/scenarios/", body, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 201, accepted.content


def test_account_page_shows_a_new_token_once_lists_and_revokes_it(client, user):
    client.force_login(user)
    page = client.get("/account/")
    assert page.status_code == 200 and b"API tokens" in page.content and b"/api/docs/" in page.content
    created = client.post("/account/", {"action": "create"})
    key = re.search(r'<code id="api-token">([0-9a-f]{64})</code>', created.content.decode()).group(1)
    token = AuthToken.objects.get(user=user)
    assert token.digest != key and key not in token.digest  # stored hashed
    listed = client.get("/account/").content.decode()
    assert key not in listed and f"{token.token_key}…" in listed  # the secret was shown once
    assert client.get("/api/teams/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    client.post("/account/", {"action": "revoke", "token": token.token_key})
    assert not AuthToken.objects.filter(user=user).exists()
    assert client.get("/api/teams/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401


def test_api_token_command_prints_a_new_token_that_authenticates(client, user, capsys):
    call_command("api_token", "alice")
    key = capsys.readouterr().out.strip()
    assert client.get("/api/teams/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    call_command("api_token", "alice", "--regenerate")
    assert capsys.readouterr().out.strip() != key
    assert client.get("/api/teams/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401


def test_schema_and_docs_are_served_from_the_project(client, user):
    schema = client.get("/api/schema/?format=json")
    assert schema.status_code == 200 and "/api/runs/{id}/results/" in schema.json()["paths"]
    client.force_login(user)
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(not s.startswith(("http:", "https:", "//")) for s in sources), sources
    assert any("swagger-ui" in s for s in sources)
    for source in (s for s in sources if s.startswith("/static/")):
        assert client.get(source).status_code == 200, source
    assert b'href="/api/docs/"' in client.get("/designs/").content  # linked from the navigation
