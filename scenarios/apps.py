"""App config for scenarios and runs."""

from __future__ import annotations

from django.apps import AppConfig


class ScenariosConfig(AppConfig):
    name = "scenarios"
    verbose_name = "Scenarios and runs"

    def ready(self) -> None:
        from scenarios import receivers  # noqa: F401  (connects to topology's design signals)
