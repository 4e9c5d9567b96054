"""`manage.py api_token USERNAME`: create an API token of the user and print its secret (tokens
are stored hashed: the secret is printed this once)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from teams.tokens import api_token_create, api_token_regenerate


class Command(BaseCommand):
    help = "Create an API token for `Authorization: Token ...` and print it (shown only this once)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--regenerate", action="store_true", help="revoke the user's other tokens first")

    def handle(self, *args, **options):
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"username: no user named {options['username']!r}")
        make = api_token_regenerate if options["regenerate"] else api_token_create
        self.stdout.write(make(user=user).key)
