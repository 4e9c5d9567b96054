"""App config for teams, memberships, roles, accounts and the permission module."""

from __future__ import annotations

from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "teams"
    verbose_name = "Teams and accounts"

    def ready(self) -> None:
        from teams import checks, signals  # noqa: F401  (registers the system checks and receivers)
