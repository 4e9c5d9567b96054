"""App config for the project glue (system checks, the primary-key URL converter)."""

from __future__ import annotations

from django.apps import AppConfig


class TwinConfig(AppConfig):
    name = "twin"
    verbose_name = "Cluster Twin"

    def ready(self) -> None:
        from django.urls import register_converter

        from twin import checks  # noqa: F401  (registers the system checks)
        from twin.converters import PrimaryKeyConverter

        # Before any URL module is imported (HTTP and WebSocket routes use <pk:...>).
        register_converter(PrimaryKeyConverter, "pk")
