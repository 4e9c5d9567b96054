"""`manage.py demo_seed`: the demo user, team and designs a newcomer sees, and scenarios on them
with a finished run of every kind (idempotent; `make seed` and `make run` call it).

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
    help = "Create the demo team, user, designs and scenarios with finished runs if they do not exist."

    def add_arguments(self, parser):
        parser.add_argument(
            "--with-demo-user",
            action="store_true",
            help="create the demo account (published password) outside embedded mode too",
        )

    def handle(self, *args, **options):
        from scenarios.services.demo import demo_runs_seed

        embedded = settings.EMBEDDED_MODE and settings.DEBUG
        exists = get_user_model().objects.filter(username=DEMO_USERNAME).exists()
        if not embedded and not exists and not options["with_demo_user"]:
            raise CommandError(
                f"demo_seed: not creating the demo account {DEMO_USERNAME!r} (its password is "
                "published) outside embedded mode (REDIS_URL set or DEBUG=0); pass "
                "--with-demo-user to create it anyway, for a trial installation only"
            )
        team = demo_seed(catalog=catalog_load())
        user = get_user_model().objects.get(username=DEMO_USERNAME)
        runs = demo_runs_seed(team=team, user=user)
        failed = [f"{run.kind} #{run.pk}: {run.error[:200]}" for run in runs if run.status != "succeeded"]
        self.stdout.write(
            f"demo: team {team.name!r} with {team.designs.count()} designs, {len(runs)} runs computed now; "
            f"log in as {DEMO_USERNAME} / {DEMO_PASSWORD}"
        )
        for line in failed:
            self.stderr.write(f"demo run did not succeed: {line}")
