"""`manage.py catalog import [FILE]` / `manage.py catalog export [FILE]`: the catalog as YAML."""

from __future__ import annotations

import sys

import yaml
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from topology.fabric.specs import DEFAULT_CATALOG_PATH
from topology.services import catalog_export, catalog_import


class Command(BaseCommand):
    help = "Import or export the hardware catalog as YAML (the seed catalog by default)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        imp = sub.add_parser("import", help="create the catalog rows of a YAML file that are missing")
        imp.add_argument("file", nargs="?", default=str(DEFAULT_CATALOG_PATH))
        imp.add_argument(
            "--update", action="store_true", help="also overwrite existing rows (edits made in the admin)"
        )
        exp = sub.add_parser("export", help="write the catalog as YAML (stdout by default)")
        exp.add_argument("file", nargs="?", default="-")

    def handle(self, *args, action: str, file: str, update: bool = False, **options):
        if action == "import":
            try:
                with open(file, encoding="utf-8") as handle:
                    data = yaml.safe_load(handle)
                report = catalog_import(data=data, update=update)
            except OSError as exc:
                raise CommandError(f"file: cannot read {file} ({exc.strerror})") from exc
            except yaml.YAMLError as exc:
                raise CommandError(f"file: {file} is not valid YAML ({exc})") from exc
            except ValidationError as exc:
                raise CommandError("; ".join(exc.messages)) from exc
            created = sum(len(v) for v in report.created.values())
            if options["verbosity"]:
                kept = "" if update else " (existing rows kept; --update overwrites them)"
                self.stdout.write(
                    f"catalog: {created} created, {report.total - created} updated from {file}{kept}"
                )
            return
        text = yaml.safe_dump(catalog_export(), sort_keys=False, allow_unicode=True)
        if file == "-":
            sys.stdout.write(text)
        else:
            with open(file, "w", encoding="utf-8") as handle:
                handle.write(text)
            self.stdout.write(f"catalog: written to {file}")
