"""``manage.py simulate job.yaml [--json] [--search [--top K]]``: run the step-time core."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from scenarios.sim import BREAKDOWN_KEYS, MEMORY_KEYS, ScenarioError, load_scenarios, predict, search_layouts
from scenarios.sim.errors import clip_message
from topology.fabric.specs import CatalogError
from topology.selectors import catalog_load


class Command(BaseCommand):
    help = "Predict the step time of a scenario file (or search its best parallel layouts)."

    def add_arguments(self, parser):
        parser.add_argument("scenario", help="scenario YAML file (a `scenarios:` list runs all)")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        parser.add_argument("--search", action="store_true", help="search parallel layouts")
        parser.add_argument("--top", type=int, default=5, help="layouts to show with --search")
        parser.add_argument("--arrays", action="store_true", help="include per-link/per-GPU arrays in --json")

    def handle(self, *args, **options):
        scenarios = self._load(options["scenario"])
        try:
            catalog = catalog_load()
            outputs = [self._run(scenario, catalog, options) for scenario in scenarios]
        except (ScenarioError, CatalogError) as exc:
            raise CommandError(clip_message(str(exc))) from None
        except (RecursionError, MemoryError) as exc:
            raise CommandError(f"scenario: too large to simulate ({type(exc).__name__})") from None
        if options["json"]:
            payload = outputs[0] if len(outputs) == 1 else outputs
            self.stdout.write(json.dumps(payload, indent=2))

    @staticmethod
    def _load(path):
        """The file's scenarios; any bad file is one CommandError line, never a traceback."""
        try:
            return load_scenarios(path)
        except ScenarioError as exc:
            raise CommandError(clip_message(str(exc))) from None
        except (RecursionError, MemoryError) as exc:
            # Last resort: the bounded loader's limits should make these unreachable.
            raise CommandError(
                f"file: too deeply nested or too large to read ({type(exc).__name__})"
            ) from None

    def _run(self, scenario, catalog, options):
        if options["search"]:
            result = search_layouts(scenario, catalog=catalog, top_k=options["top"])
            if not options["json"]:
                self._print_search(scenario.name, result)
            return {"name": scenario.name, **result.to_dict()}
        result = predict(scenario, catalog=catalog)
        if not options["json"]:
            self._print_result(result)
        return result.to_dict(arrays=options["arrays"])

    def _print_result(self, r):
        w = self.stdout.write
        w(f"{r.name}: {r.gpus:,} GPUs")
        w(f"  step time            {r.step_time_s:10.3f} s")
        w(f"  model TFLOP/s/GPU    {r.model_tflops_per_gpu:10.1f}   (MFU {r.mfu:.1%})")
        w(f"  hardware TFLOP/s/GPU {r.hardware_tflops_per_gpu:10.1f}")
        w(f"  tokens/s             {r.tokens_per_s:10,.0f}")
        if r.time_to_train_days is not None:
            w(f"  time to train        {r.time_to_train_days:10.1f} days")
        fits = "fits" if r.fits else "DOES NOT FIT"
        w(f"  memory/GPU           {r.memory_gib_per_gpu:10.1f} GiB ({fits})")
        w(
            "  breakdown (s):  "
            + "  ".join(f"{k} {r.breakdown[k]:.3f}" for k in BREAKDOWN_KEYS if r.breakdown[k] > 0)
        )
        w("  memory (GiB):   " + "  ".join(f"{k} {r.memory[k]:.1f}" for k in MEMORY_KEYS))
        w(f"  hottest link     {r.link_utilization.max(initial=0.0):.1%} utilized")

    def _print_search(self, name, result):
        w = self.stdout.write
        w(f"{name}: {result.candidates:,} layouts, {result.valid:,} valid")
        w(
            f"  {'tp':>3} {'pp':>3} {'dp':>5} {'cp':>3} {'ep':>3} {'vpp':>3} {'mb':>3} "
            f"{'recompute':>9} {'zero':>4} {'step s':>9} {'MFU':>6} {'GiB':>6}"
        )
        for row in result.best:
            w(
                f"  {row['tp']:>3} {row['pp']:>3} {row['dp']:>5} {row['cp']:>3} {row['ep']:>3} "
                f"{row['vpp']:>3} {row['micro_batch']:>3} {row['recompute']:>9} {row['zero']:>4} "
                f"{row['step_time_s']:9.3f} {row['mfu']:6.1%} {row['memory_gib_per_gpu']:6.1f}"
            )
        rejected = ", ".join(f"{k}: {v:,}" for k, v in result.rejected.items() if v)
        w(f"  rejected: {rejected or 'none'}")
