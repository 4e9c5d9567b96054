"""Project glue: settings, URLs, ASGI routing and the Celery app."""

from __future__ import annotations

from twin.celery import app as celery_app

__all__ = ("celery_app",)
