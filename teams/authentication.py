"""The API's token authentication: knox's (hashed tokens, expiry), judging only the token the
request presents. Knox also loads every other token of the user on each request to delete the
expired ones: a query per request that grows with the user's tokens; the account page and
``/api/account/tokens/`` delete expired tokens when they list them instead."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from knox.auth import TokenAuthentication
from knox.signals import token_expired


class ApiTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>`` against knox's digests; an expired token is deleted."""

    def _cleanup_token(self, auth_token) -> bool:
        if auth_token.expiry is not None and auth_token.expiry < timezone.now():
            username = auth_token.user.get_username()
            auth_token.delete()
            token_expired.send(sender=self.__class__, username=username, source="auth_token")
            return True
        return False


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """The token in the OpenAPI schema, as DRF's own token scheme was described."""

    target_class = "teams.authentication.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": 'Token-based authentication with required prefix "Token"',
        }


def login_client_address(request) -> str | None:
    """The address the login throttle counts (``AXES_CLIENT_IP_CALLABLE``): the connection's,
    or behind ``TWIN_LOGIN_PROXY_COUNT`` proxies the one the outermost proxy saw (each proxy
    appends the address it saw to X-Forwarded-For; what the client wrote there itself comes
    before and is ignored)."""
    from django.conf import settings

    proxies = int(settings.TWIN_LOGIN_PROXY_COUNT)
    remote = request.META.get("REMOTE_ADDR")
    if proxies <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [part for part in forwarded if part]
    return forwarded[-proxies] if len(forwarded) >= proxies else remote
