"""Login throttling (django-axes): failed logins lock the account, and as many from one address
lock the address for every account, with a message saying why and for how long."""

from __future__ import annotations

import pytest
from django.conf import settings

LIMIT_MESSAGE = "too many failed logins for this account; try again in {} minutes"


def _login(client, username: str, password: str, address: str = "10.0.0.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


@pytest.mark.slow
def test_thirty_wrong_passwords_then_the_right_one_is_refused_with_the_reason(client, user):
    for _ in range(30):
        assert _login(client, "alice", "wrong-guess").status_code in (200, 429)
    refused = _login(client, "alice", "pw-alice-123")
    assert refused.status_code == 429
    html = refused.content.decode()
    assert LIMIT_MESSAGE.format(settings.TWIN_LOGIN_COOLOFF_MINUTES) in html
    assert "_auth_user_id" not in client.session
    # the account is locked from another address too
    assert _login(client, "alice", "pw-alice-123", address="10.9.9.9").status_code == 429


def test_one_address_guessing_many_accounts_is_limited_for_every_account(client, user, outsider):
    for number in range(settings.TWIN_LOGIN_FAILURE_LIMIT):  # one guess per account: none is locked
        _login(client, f"someone-{number}", "guess")
    refused = _login(client, "bob", "pw-bob-123")
    assert refused.status_code == 429
    assert "too many failed logins from this address" in refused.content.decode()
    # bob himself from his own address is fine
    assert _login(client, "bob", "pw-bob-123", address="10.1.1.1").status_code == 302


def test_a_right_password_under_the_limit_logs_in_and_resets_the_count(client, user):
    for _ in range(settings.TWIN_LOGIN_FAILURE_LIMIT - 1):
        assert _login(client, "alice", "wrong-guess").status_code == 200
    assert _login(client, "alice", "pw-alice-123").status_code == 302


@pytest.mark.parametrize("limit", [3])
def test_the_limit_is_a_setting(client, user, settings, limit):
    settings.AXES_FAILURE_LIMIT = limit
    settings.TWIN_LOGIN_FAILURE_LIMIT = limit
    for _ in range(limit):
        _login(client, "alice", "wrong-guess")
    assert _login(client, "alice", "pw-alice-123").status_code == 429


def test_a_forwarded_for_header_does_not_change_the_address_without_a_proxy(client, user, outsider):
    """Without TWIN_LOGIN_PROXY_COUNT a client cannot dodge the per-address limit with a header."""
    for number in range(settings.TWIN_LOGIN_FAILURE_LIMIT):
        client.post(
            "/login/",
            {"username": f"someone-{number}", "password": "guess"},
            REMOTE_ADDR="10.0.0.8",
            HTTP_X_FORWARDED_FOR=f"192.0.2.{number}",
        )
    assert _login(client, "bob", "pw-bob-123", address="10.0.0.8").status_code == 429


@pytest.mark.parametrize(
    ("proxies", "forwarded", "address"),
    [
        (0, "198.51.100.7", "10.0.0.1"),  # no proxy: the header is the client's own words
        (1, "198.51.100.7", "198.51.100.7"),  # one proxy appended what it saw
        (1, "6.6.6.6, 198.51.100.7", "198.51.100.7"),  # the client's own entry comes first: ignored
        (2, "6.6.6.6, 198.51.100.7, 10.0.0.2", "198.51.100.7"),
        (2, "198.51.100.7", "10.0.0.1"),  # fewer entries than proxies: the connection's
    ],
)
def test_the_throttled_address_behind_proxies(rf, settings, proxies, forwarded, address):
    from teams.authentication import login_client_address

    settings.TWIN_LOGIN_PROXY_COUNT = proxies
    request = rf.post("/login/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded)
    assert login_client_address(request) == address


def test_behind_a_proxy_each_client_address_has_its_own_limit(client, user, outsider, settings):
    settings.TWIN_LOGIN_PROXY_COUNT = 1
    for number in range(settings.TWIN_LOGIN_FAILURE_LIMIT):
        client.post(
            "/login/",
            {"username": f"someone-{number}", "password": "guess"},
            REMOTE_ADDR="10.0.0.1",
            HTTP_X_FORWARDED_FOR="198.51.100.7",
        )
    via_proxy = {"REMOTE_ADDR": "10.0.0.1"}
    locked = client.post(
        "/login/",
        {"username": "bob", "password": "pw-bob-123"},
        HTTP_X_FORWARDED_FOR="198.51.100.7",
        **via_proxy,
    )
    assert locked.status_code == 429
    other = client.post(
        "/login/",
        {"username": "bob", "password": "pw-bob-123"},
        HTTP_X_FORWARDED_FOR="198.51.100.8",
        **via_proxy,
    )
    assert other.status_code == 302
