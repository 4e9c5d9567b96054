"""``manage.py simulate job.yaml [--json] [--search [--top K]] [--failures [--trials N]] [--power]``:
run the step-time core, and the failure and power simulations of the scenario on its cluster.

Exit status: 0 when every scenario of the file can run, 3 when one cannot (infeasible: it does
not fit in HBM, or no layout of a search does; ``--json`` says ``"feasible": false`` with the
reasons under ``"infeasible"`` and the layout that would fit under ``"would_fit"``), 1 for a
file or catalog that is not valid."""

from __future__ import annotations

import json
from dataclasses import replace

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from scenarios.sim import (
    BREAKDOWN_KEYS,
    MEMORY_KEYS,
    OVERLAP_KEYS,
    ScenarioError,
    check_scenario,
    load_scenarios,
    predict,
    search_layouts,
)
from scenarios.sim.search import fitting_layout
from topology.fabric.specs import CatalogError
from topology.selectors import catalog_load
from utilities.errors import clip_message

#: Exit status of a scenario that cannot run as asked (``"feasible": false``).
EXIT_INFEASIBLE = 3


class Command(BaseCommand):
    help = (
        "Predict the step time of a scenario file (or search its best parallel layouts). Exits "
        f"with status {EXIT_INFEASIBLE} when a job is infeasible (does not fit in GPU memory, or "
        'no layout does): --json then says "feasible": false with the reasons under "infeasible".'
    )

    def add_arguments(self, parser):
        parser.add_argument("scenario", help="scenario YAML file (a `scenarios:` list runs all)")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        parser.add_argument("--search", action="store_true", help="search parallel layouts")
        parser.add_argument("--top", type=int, default=5, help="layouts to show with --search")
        parser.add_argument("--arrays", action="store_true", help="include per-link/per-GPU arrays in --json")
        parser.add_argument(
            "--failures", action="store_true", help="simulate failures and goodput (the file's failures:)"
        )
        parser.add_argument(
            "--trials", type=int, help="Monte Carlo trials of --failures (overrides the file)"
        )
        parser.add_argument(
            "--power",
            action="store_true",
            help="simulate the power draw (the file's power:); with "
            "--failures, over the job life of its representative trial",
        )

    def handle(self, *args, **options):
        scenarios = self._load(options["scenario"])
        try:
            catalog = self._catalog()
            outputs = [self._run(scenario, catalog, options) for scenario in scenarios]
        except (ScenarioError, CatalogError) as exc:
            raise CommandError(clip_message(str(exc))) from None
        except (RecursionError, MemoryError) as exc:
            raise CommandError(f"scenario: too large to simulate ({type(exc).__name__})") from None
        if options["json"]:
            payload = outputs[0] if len(outputs) == 1 else outputs
            self.stdout.write(json.dumps(payload, indent=2))
        infeasible = [f"{out.get('name', '?')}: {reason}" for out in outputs for reason in out["infeasible"]]
        if infeasible:
            raise CommandError("infeasible: " + "; ".join(infeasible)[:900], returncode=EXIT_INFEASIBLE)

    @staticmethod
    def _catalog():
        """The hardware catalog; a database without one is one CommandError line saying how to
        set it up, never a traceback."""
        try:
            return catalog_load()
        except DatabaseError as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise CommandError(
                f"database: cannot read the hardware catalog ({clip_message(reason)}); set it up "
                "once with `make run`, or `manage.py migrate` and `manage.py catalog import` "
                "on this DATABASE_URL"
            ) from None

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
            reasons = [] if result.best else [f"no layout fits: {result.candidates:,} tried, none valid"]
            return {"name": scenario.name, **result.to_dict(), "feasible": not reasons, "infeasible": reasons}
        if not (options["failures"] or options["power"]):
            result = predict(scenario, catalog=catalog)
            out = self._with_would_fit(result.to_dict(arrays=options["arrays"]), scenario, catalog)
            if not options["json"]:
                self._print_result(result, out.get("would_fit"))
            return out
        return self._studies(scenario, catalog, options)

    @staticmethod
    def _with_would_fit(out, scenario, catalog, fabric=None):
        """An infeasible prediction's output with the layout search's fastest fitting layout."""
        if out["feasible"]:
            return out
        return {**out, "would_fit": fitting_layout(scenario, catalog=catalog, fabric=fabric)}

    def _studies(self, scenario, catalog, options):
        """The step prediction, then the failure and/or power simulations on the same fabric."""
        from scenarios.sim.failures import parse_failures
        from scenarios.sim.format.failures import FAILURES
        from scenarios.sim.step.model import cluster_plan
        from scenarios.sim.studies import (
            failure_study,
            power_events_from_failures,
            power_study,
            run_failure_study,
        )
        from topology.fabric.compiled import compile_plan

        if options["trials"] is not None:  # the file's rule and limit, named as the file names them
            trials = FAILURES.field("trials").read({"trials": options["trials"]}, "failures")
            spec = scenario.failures or parse_failures(None)
            scenario = replace(scenario, failures=replace(spec, trials=trials))
        plan = cluster_plan(scenario.effective_cluster(), catalog)
        fabric = compile_plan(plan)
        checked = check_scenario(scenario, catalog)  # once for the step and both studies
        step = predict(checked, catalog=catalog, fabric=fabric)
        out = self._with_would_fit(step.to_dict(arrays=options["arrays"]), checked, catalog, fabric)
        events = None
        if options["failures"]:
            failures = run_failure_study(
                failure_study(checked, catalog=catalog, plan=plan, fabric=fabric, step=step)
            )
            out["failures"] = failures.to_dict()
            recovery = out["failures"]["recovery_s"]
            blocking = not (scenario.failures or parse_failures(None)).checkpoint.async_save
            events = power_events_from_failures(
                out["failures"]["event_log"],
                checkpoint_s=recovery["save"] if blocking else 0.0,
                interval_s=out["failures"]["checkpoint_interval_min"] * 60.0,
            )
        if options["power"]:
            power = power_study(checked, catalog=catalog, plan=plan, fabric=fabric, step=step, events=events)
            out["power"] = power.to_dict()
        if not options["json"]:
            self._print_result(step, out.get("would_fit"))
            self._print_studies(out)
        return out

    def _print_studies(self, out):
        w = self.stdout.write
        if "failures" in out:
            f = out["failures"]
            days = f.get("productive_days") or f["wall_time_days"]
            what = "productive time in the window" if f.get("productive_days") else "wall time to finish"
            w(f"  failures ({f['trials']:,} trials)")
            w(f"    ETTR                {f['etr']:9.1%}   (closed form {f['closed_form_etr']:.1%})")
            w(f"    {what:<31}p5 {days['p5']:.1f}  p50 {days['p50']:.1f}  p95 {days['p95']:.1f} days")
            w(f"    interruptions       {f['interruptions']['total']:9.1f} per run")
            w(
                f"    checkpoint interval {f['checkpoint_interval_min']:9.1f} min "
                f"(optimal {f['optimal_checkpoint_interval_min']:.1f} min)"
            )
            for warning in f.get("warnings") or ():
                w(f"    warning: {warning}")
        if "power" in out:
            p = out["power"]
            w(f"  power ({p['window_s']:g} s at {p['resolution_ms']:g} ms)")
            w(f"    facility peak / trough {p['facility_peak_mw']:9.2f} / {p['facility_trough_mw']:.2f} MW")
            w(f"    swing {p['swing_mw']:.2f} MW, fastest ramp {p['max_ramp_mw_per_s']:,.0f} MW/s")
            over = f"{len(p['feeds_over_limit'])} feeds over their limit, {len(p['racks_over_budget'])} racks"
            w(f"    {over} over budget")

    def _print_result(self, r, would_fit=None):
        from scenarios.charts.search import layout_label

        w = self.stdout.write
        w(
            f"{r.name}: {r.gpus:,} GPUs"
            + ("" if r.feasible else " -- INFEASIBLE, the figures below cannot be had")
        )
        for reason in r.infeasible:
            w(f"  infeasible: {reason}")
        if not r.feasible:
            w(f"  would fit: {layout_label(would_fit)}" if would_fit else "  would fit: no layout fits")
        w(f"  step time            {r.step_time_s:10.3f} s")
        w(f"  model TFLOP/s/GPU    {r.model_tflops_per_gpu:10.1f}   (MFU {r.mfu:.1%})")
        w(f"  hardware TFLOP/s/GPU {r.hardware_tflops_per_gpu:10.1f}")
        w(f"  tokens/s             {r.tokens_per_s:10,.0f}")
        if r.time_to_train_days is not None:
            w(f"  time to train        {r.time_to_train_days:10.1f} days")
        fits = "fits" if r.fits else "DOES NOT FIT"
        headroom = f"headroom {r.memory_headroom_gib:+.1f} GiB"
        w(f"  memory/GPU           {r.memory_gib_per_gpu:10.1f} GiB ({fits}, {headroom})")
        w(
            "  breakdown (s):  "
            + "  ".join(f"{k} {r.breakdown[k]:.3f}" for k in BREAKDOWN_KEYS if r.breakdown[k] > 0)
        )
        w(
            "  overlap (s):    "
            + "  ".join(
                f"{k} exposed {r.breakdown[k]:.3f} hidden {r.hidden.get(k, 0.0):.3f}"
                for k in OVERLAP_KEYS
                if r.breakdown[k] + r.hidden.get(k, 0.0) > 0
            )
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
