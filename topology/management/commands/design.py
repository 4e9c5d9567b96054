"""`manage.py design generate GENERATOR --server SLUG --nodes N ...`: build (and save) a design."""

from __future__ import annotations

import json
import time

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from teams.models import Team
from topology.fabric.generators import GENERATORS
from topology.services import DEMO_TEAM, design_create_from_plan, generator_plan


class Command(BaseCommand):
    help = "Generate a cluster design from a fabric generator; report it, or save it with --save."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        gen = sub.add_parser("generate", help="build a design from a generator")
        gen.add_argument("generator", choices=sorted(GENERATORS))
        gen.add_argument("--server", required=True, help="server type slug, e.g. dgx-h100")
        gen.add_argument("--nodes", required=True, type=int, help="number of servers (trays for nvl72)")
        gen.add_argument("--oversubscription", type=float, default=1.0, help="leaf down:up ratio (≥ 1)")
        gen.add_argument("--nic-gbps", type=float, default=None, help="override the server's NIC speed")
        gen.add_argument("--su-nodes", type=int, default=None, help="nodes per scalable unit")
        gen.add_argument("--switch", default=None, help="scale-out switch slug")
        gen.add_argument("--tiers", type=int, default=None, help="fat-tree tiers (2 or 3)")
        gen.add_argument("--save", metavar="NAME", default=None, help="save the design under this name")
        gen.add_argument("--team", default=DEMO_TEAM, help=f"team to save into (default: {DEMO_TEAM})")
        gen.add_argument("--json", action="store_true", help="print the summary as JSON")

    def handle(self, *args, **options):
        params = {
            "server": options["server"],
            "nodes": options["nodes"],
            "oversubscription": options["oversubscription"],
            "nic_gbps": options["nic_gbps"],
            "su_nodes": options["su_nodes"],
            "switch": options["switch"],
            "tiers": options["tiers"],
        }
        started = time.perf_counter()
        try:  # the same validation as the design form and the API
            plan = generator_plan(generator=options["generator"], params=params)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        summary = plan.summary()
        if options["save"]:
            team = Team.objects.filter(name=options["team"]).first()
            if team is None:
                raise CommandError(f"team: no team named {options['team']!r}")
            try:
                design = design_create_from_plan(plan=plan, name=options["save"], team=team)
            except ValidationError as exc:
                raise CommandError("; ".join(exc.messages)) from exc
            summary = {**summary, "design_id": design.pk, "saved_as": design.name}
        summary["elapsed_s"] = round(time.perf_counter() - started, 3)
        if options["json"]:
            self.stdout.write(json.dumps(summary, default=float))
            return
        self.stdout.write(format_summary(options["generator"], summary))


def format_summary(generator: str, s: dict) -> str:
    """A short human-readable report of a generated design."""
    lines = [
        f"{generator}: {s['gpus']:,} GPUs on {s['servers']:,} servers in {s['racks']:,} racks",
        "switches: " + ", ".join(f"{k} {v:,}" for k, v in s["switches"].items()),
        "links:    " + ", ".join(f"{k} {v:,}" for k, v in s["links"].items()),
        f"feeds:    {s['feeds']:,}    IT power: {s['it_power_kw']:,.0f} kW",
        f"bisection: {s['bisection_gbps']:,.0f} Gb/s ({s['per_gpu_bisection_gbps']:,.0f} Gb/s per GPU)",
    ]
    if "saved_as" in s:
        lines.append(f"saved as design #{s['design_id']} {s['saved_as']!r}")
    return "\n".join(lines)
