"""The account page and the login lock in a real browser: a new API token's secret is shown
once and works, the list names it by its first characters, revoking it ends it; ten wrong
passwords lock the account with a message saying for how long. Photographed at 1440 px into
var/screenshots/."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest

from tests.e2e.conftest import E2E_PASSWORD, E2E_USER, SHOTS, embedded_site

pytestmark = pytest.mark.e2e


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.screenshot(path=str(SHOTS / f"account-{name}.png"), full_page=True)


def _status(url: str, key: str) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Token {key}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            json.load(response)
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _log_in(page, base: str, password: str) -> None:
    page.goto(f"{base}/login/")
    page.fill("#id_username", E2E_USER)
    page.fill("#id_password", password)
    page.click("form button[type=submit]")


def test_a_new_token_is_shown_once_listed_and_revoked(tmp_path, page):
    with embedded_site(tmp_path) as site:
        base = site.base_url
        _log_in(page, base, E2E_PASSWORD)
        page.wait_for_url(re.compile(r"/designs/$"))
        page.goto(f"{base}/account/")
        assert "You have no API token." in page.inner_text(".api-token")
        page.click("button[value=create]")
        key = page.inner_text("#api-token").strip()
        assert re.fullmatch(r"[0-9a-f]{64}", key)
        _shot(page, "new-token")
        assert _status(f"{base}/api/teams/", key) == 200
        page.goto(f"{base}/account/")
        listed = page.inner_text(".api-token")
        assert key not in listed and f"{key[:15]}…" in listed
        _shot(page, "tokens")
        page.click(f"tr[data-token='{key[:15]}'] button[value=revoke]")
        assert "The token was revoked" in page.inner_text("body")
        assert _status(f"{base}/api/teams/", key) == 401


def test_ten_wrong_passwords_lock_the_account_with_the_reason(tmp_path, page):
    with embedded_site(tmp_path) as site:
        for _ in range(10):
            _log_in(page, site.base_url, "not-the-password")
        _log_in(page, site.base_url, E2E_PASSWORD)
        message = page.inner_text(".login")
        assert "too many failed logins for this account; try again in 15 minutes" in message
        assert "/login/" in page.url
        _shot(page, "locked")
