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


@register()
def check_secret_key_when_not_debug(app_configs, **kwargs):
    """Refuse the embedded secret key when DEBUG is off, for every command (also ``check
    --deploy``), so `daphne` with DEBUG=0 refuses to start insecurely."""
    if not settings.DEBUG and settings.SECRET_KEY == settings.INSECURE_DEFAULT_SECRET_KEY:
        return [Error("SECRET_KEY: set a secret value when DEBUG is off.", id="twin.E002")]
    return []
