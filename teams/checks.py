"""System checks of accounts: ``check --deploy`` fails while the public demo account (its
password is published on the login page and in README) can log in."""

from __future__ import annotations

from django.core.checks import Error, register
from django.db import DatabaseError


@register(deploy=True)
def check_no_demo_account_with_its_published_password(app_configs, **kwargs):
    """An active ``demo`` user whose password is still the published one lets anyone in."""
    from django.contrib.auth import get_user_model

    from teams.services import DEMO_PASSWORD, DEMO_USERNAME

    try:
        demo = get_user_model().objects.filter(username=DEMO_USERNAME, is_active=True).first()
    except DatabaseError:  # no database yet (an image build), or not migrated: nothing to judge
        return []
    if demo is not None and demo.check_password(DEMO_PASSWORD):
        return [
            Error(
                f"user {DEMO_USERNAME!r}: the public demo account is active with its published "
                "password; deactivate it, delete it or give it another password.",
                id="teams.E001",
            )
        ]
    return []
