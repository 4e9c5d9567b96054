"""`manage.py api_token USERNAME`: print the user's API token (created if missing)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from teams.tokens import api_token_get_or_create, api_token_regenerate


class Command(BaseCommand):
    help = "Print a user's API token for `Authorization: Token ...` (created if missing)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--regenerate", action="store_true", help="replace the existing token")

    def handle(self, *args, **options):
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"username: no user named {options['username']!r}")
        make = api_token_regenerate if options["regenerate"] else api_token_get_or_create
        self.stdout.write(make(user=user).key)
