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
        imp = sub.add_parser("import", help="create or update catalog rows from a YAML file")
        imp.add_argument("file", nargs="?", default=str(DEFAULT_CATALOG_PATH))
        exp = sub.add_parser("export", help="write the catalog as YAML (stdout by default)")
        exp.add_argument("file", nargs="?", default="-")

    def handle(self, *args, action: str, file: str, **options):
        if action == "import":
            try:
                with open(file, encoding="utf-8") as handle:
                    data = yaml.safe_load(handle)
                report = catalog_import(data=data)
            except OSError as exc:
                raise CommandError(f"file: cannot read {file} ({exc.strerror})") from exc
            except yaml.YAMLError as exc:
                raise CommandError(f"file: {file} is not valid YAML ({exc})") from exc
            except ValidationError as exc:
                raise CommandError("; ".join(exc.messages)) from exc
            created = sum(len(v) for v in report.created.values())
            if options["verbosity"]:
                self.stdout.write(f"catalog: {created} created, {report.total - created} updated from {file}")
            return
        text = yaml.safe_dump(catalog_export(), sort_keys=False, allow_unicode=True)
        if file == "-":
            sys.stdout.write(text)
        else:
            with open(file, "w", encoding="utf-8") as handle:
                handle.write(text)
            self.stdout.write(f"catalog: written to {file}")
