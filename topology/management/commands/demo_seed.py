"""`manage.py demo_seed`: the demo user, team and designs a newcomer sees (idempotent)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from teams.services import DEMO_PASSWORD, DEMO_USERNAME
from topology.selectors import catalog_load
from topology.services import demo_seed


class Command(BaseCommand):
    help = "Create the demo team, user and designs if they do not exist."

    def handle(self, *args, **options):
        team = demo_seed(catalog=catalog_load())
        self.stdout.write(
            f"demo: team {team.name!r} with {team.designs.count()} designs; "
            f"log in as {DEMO_USERNAME} / {DEMO_PASSWORD}"
        )
