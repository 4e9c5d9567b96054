"""`manage.py serve`: HTTP + WebSocket on daphne, with the embedded worker when REDIS_URL is unset;
DEBUG is off unless DEBUG=1 (``twin/settings.py``: ``SERVING``)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from scenarios.embedded import start_embedded_worker


class Command(BaseCommand):
    help = "Serve Cluster Twin (daphne); in embedded mode also run the Celery worker in-process."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args, host: str, port: int, **options):
        from daphne.cli import CommandLineInterface

        if settings.EMBEDDED_MODE:
            start_embedded_worker()
            mode = "embedded mode: in-process worker, in-memory channel layer"
        else:
            mode = "Redis mode: start workers with `celery -A twin worker`"
        debug = "DEBUG on" if settings.DEBUG else "DEBUG off: the site's 404/403 pages (DEBUG=1 for Django's)"
        self.stdout.write(f"Cluster Twin on http://{host}:{port}/  ({mode}; {debug})", ending="\n")
        self.stdout.flush()
        CommandLineInterface().run(["-b", host, "-p", str(port), "twin.asgi:application"])
