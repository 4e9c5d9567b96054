"""System checks for values that production must set."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Warning, register


@register(deploy=True)
def check_production_settings(app_configs, **kwargs):
    """Warn about an open host list when DEBUG is off (the secret key has its own check below,
    which also runs under --deploy: one rule, one message)."""
    if not settings.DEBUG and "*" in settings.ALLOWED_HOSTS:
        return [Warning("ALLOWED_HOSTS: '*' accepts any Host header.", id="twin.W001")]
    return []


#: Secret keys published in this repository (docker-compose.yml's default): a deployment that
#: kept one signs sessions and password-reset links with a key anyone can read.
PLACEHOLDER_SECRET_KEYS = frozenset({"change-me-in-production"})


@register(deploy=True)
def check_secret_key_is_not_a_placeholder(app_configs, **kwargs):
    """``check --deploy`` fails on the compose file's placeholder key (Django's own check only
    warns about it as a weak key)."""
    if settings.SECRET_KEY in PLACEHOLDER_SECRET_KEYS:
        return [
            Error(
                "SECRET_KEY: the placeholder of docker-compose.yml is published; set a random "
                "secret (e.g. openssl rand -hex 32).",
                id="twin.E003",
            )
        ]
    return []


@register()
def check_secret_key_when_not_debug(app_configs, **kwargs):
    """Refuse the embedded secret key when DEBUG is off, for every command (also ``check
    --deploy``), so `daphne` with DEBUG=0 refuses to start insecurely."""
    if not settings.DEBUG and settings.SECRET_KEY == settings.INSECURE_DEFAULT_SECRET_KEY:
        return [Error("SECRET_KEY: set a secret value when DEBUG is off.", id="twin.E002")]
    return []
