"""`manage.py demo_seed`: the demo user, team and designs a newcomer sees (idempotent).

The demo account's password is published (the login page, README), so outside embedded mode
(``REDIS_URL`` set or ``DEBUG=0``: a shared installation) the command refuses to create it
unless asked with ``--with-demo-user``; ``check --deploy`` fails while it can log in."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from teams.services import DEMO_PASSWORD, DEMO_USERNAME
from topology.selectors import catalog_load
from topology.services import demo_seed


class Command(BaseCommand):
    help = "Create the demo team, user and designs if they do not exist."

    def add_arguments(self, parser):
        parser.add_argument(
            "--with-demo-user",
            action="store_true",
            help="create the demo account (published password) outside embedded mode too",
        )

    def handle(self, *args, **options):
        embedded = settings.EMBEDDED_MODE and settings.DEBUG
        exists = get_user_model().objects.filter(username=DEMO_USERNAME).exists()
        if not embedded and not exists and not options["with_demo_user"]:
            raise CommandError(
                f"demo_seed: not creating the demo account {DEMO_USERNAME!r} (its password is "
                "published) outside embedded mode (REDIS_URL set or DEBUG=0); pass "
                "--with-demo-user to create it anyway, for a trial installation only"
            )
        team = demo_seed(catalog=catalog_load())
        self.stdout.write(
            f"demo: team {team.name!r} with {team.designs.count()} designs; "
            f"log in as {DEMO_USERNAME} / {DEMO_PASSWORD}"
        )
