"""`manage.py demo_seed`: the demo user, team and designs a newcomer sees, and scenarios on them
with a finished run of every kind (idempotent; `make seed` and `make run` call it)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from teams.services import DEMO_PASSWORD, DEMO_USERNAME
from topology.selectors import catalog_load
from topology.services import demo_seed


class Command(BaseCommand):
    help = "Create the demo team, user, designs and scenarios with finished runs if they do not exist."

    def handle(self, *args, **options):
        from django.contrib.auth import get_user_model

        from scenarios.services.demo import demo_runs_seed

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
