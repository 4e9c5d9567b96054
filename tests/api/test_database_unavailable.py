"""When the database cannot be reached (down, or every pooled connection busy past the pool's
timeout), the API answers 503 in its error shape with Retry-After, never an HTML 500."""

from __future__ import annotations

from django.db import OperationalError, connection

from tests.api.conftest import errors_of, token_client


def _refuse(*args, **kwargs):
    """What every new cursor raises while the server refuses connections (psycopg's message)."""
    raise OperationalError('connection to server at "127.0.0.1", port 5432 failed: Connection refused')


def test_a_token_request_gets_503_json_while_the_database_is_down(user, team, monkeypatch):
    api = token_client(user)  # the token exists; the request itself cannot reach the database
    with monkeypatch.context() as down:
        down.setattr(connection, "ensure_connection", _refuse)
        response = api.get("/api/designs/")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response["Retry-After"] == "5"
    assert errors_of(response) == {
        "__all__": ["the database is unavailable or busy; try again in a few seconds"]
    }


def test_a_pool_timeout_in_a_view_is_503_too(user, team, monkeypatch):
    """psycopg_pool's PoolTimeout is an OperationalError, which Django re-raises as its own."""
    from teams.api import views

    def busy(self):
        raise OperationalError("couldn't get a connection after 10.00 sec")

    monkeypatch.setattr(views.TeamViewSet, "get_queryset", busy)
    response = token_client(user).get("/api/teams/")
    assert response.status_code == 503 and "__all__" in errors_of(response)


def test_a_browser_session_request_gets_503_json_too(client, user, team, monkeypatch):
    client.force_login(user)
    with monkeypatch.context() as down:
        down.setattr(connection, "ensure_connection", _refuse)
        response = client.get("/api/designs/")
    assert response.status_code == 503 and "__all__" in errors_of(response)


def test_a_page_gets_a_short_503_page_while_the_database_is_down(client, user, monkeypatch):
    client.force_login(user)
    with monkeypatch.context() as down:
        down.setattr(connection, "ensure_connection", _refuse)
        page = client.get("/designs/")
    assert page.status_code == 503 and page["Retry-After"] == "5"
    assert "The database cannot be reached right now" in page.content.decode()
