"""`make run` (``manage.py serve``) serves the site as its users see it: DEBUG off unless asked,
the site's own 404 and 403 pages, static files still served by WhiteNoise, and a refused
request is one line in the server log (not a traceback)."""

from __future__ import annotations

import io
import logging
import os
import stat
import urllib.error
import urllib.request

import pytest
from django.urls import reverse

from teams.choices import TeamRole
from teams.services import team_create
from twin.log_filters import ClientErrorsOneLine


def _console_handler() -> logging.Handler:
    for handler in logging.getLogger().handlers:
        if any(isinstance(f, ClientErrorsOneLine) for f in handler.filters):
            return handler
    raise AssertionError("LOGGING's console handler has no ClientErrorsOneLine filter")


def test_a_403_is_one_line_in_the_server_log(client, django_user_model, design):
    viewer = django_user_model.objects.create_user("vic", password="pw-vic-12345")
    team_create(name=design.team.name, users=[viewer], role=TeamRole.VIEWER)
    client.force_login(viewer)
    handler = _console_handler()
    stream = io.StringIO()
    previous = handler.setStream(stream)
    try:
        response = client.get(reverse("topology:design-edit", args=[design.pk]))
    finally:
        handler.setStream(previous)
    assert response.status_code == 403
    lines = [line for line in stream.getvalue().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Forbidden"), lines
    assert "Traceback" not in stream.getvalue()


def test_a_server_error_keeps_its_traceback():
    record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "boom", None, None)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    record.status_code = 500
    assert ClientErrorsOneLine().filter(record) and record.exc_info is not None
    record.status_code = 404
    assert ClientErrorsOneLine().filter(record) and record.exc_info is None


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")


@pytest.mark.slow
def test_serve_runs_with_debug_off_and_serves_the_site_pages(tmp_path):
    from tests.e2e.conftest import PYTHON, Server, base_env, free_port, manage, wait_for_http

    env = base_env(TWIN_VAR_DIR=str(tmp_path / "var"))
    for name in ("DEBUG", "SECRET_KEY", "SECURE_SSL_REDIRECT", "SECURE_COOKIES", "SECURE_HSTS_SECONDS"):
        env.pop(name, None)
    manage(env, "migrate", "--noinput")
    port = free_port()
    server = Server("serve", [PYTHON, "manage.py", "serve", "--port", str(port)], env, tmp_path)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{base}/login/", server)
        status, body = _get(f"{base}/no-such-page/")
        assert status == 404
        assert "There is nothing here, or it belongs to a team you are not in." in body
        assert "Using the URLconf" not in body and "DEBUG = True" not in body  # not Django's page
        status, body = _get(f"{base}/static/js/run.js")
        assert status == 200 and "setProgress" in body  # WhiteNoise serves static with DEBUG off
        status, _ = _get(f"{base}/login/")
        assert status == 200  # plain HTTP on this machine: no redirect to HTTPS
        key = tmp_path / "var" / "secret_key"
        assert key.exists() and stat.S_IMODE(os.stat(key).st_mode) == 0o600
        assert "Traceback" not in server.log()
    finally:
        server.stop()
