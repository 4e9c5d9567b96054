"""Failures and goodput: a Monte Carlo of the job's interruptions, checkpoints, restarts and spares
on the scenario's fabric (``scenarios.sim.failures``), split into blocks of trials that any
worker runs and merged exactly, with the representative trial replayed on the floor plan."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from django import forms

from scenarios.charts import failures as failure_charts
from scenarios.charts.base import chart
from scenarios.kinds.base import (
    Figure,
    RunKind,
    RunOutput,
    count,
    int_option,
    percent,
    reject_unknown_options,
    require_feasible,
)
from scenarios.metrics import Metric, rack_list
from scenarios.storage import run_array

DEFAULT_CHUNKS = 4
MAX_CHUNKS = 64

RACK_FAILURES = Metric(
    name="failures",
    label="Failures per rack (mean per run)",
    unit="failures",
    scale=(0.0, 3.0),
    array="rack_failures",
    description="Mean number of failures a run of the failure simulation puts on the rack.",
)


class FailureOptions(forms.Form):
    chunks = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_CHUNKS,
        label="Worker tasks",
        help_text=f"split the trials over this many tasks (default {DEFAULT_CHUNKS})",
    )


def _days(value: float) -> str:
    return f"{value:.1f} days" if value >= 1 else f"{value * 24:.1f} hours"


def _minutes(value: float) -> str:
    return f"{value:.0f} min" if value >= 10 else f"{value:.1f} min"


def _study_key(step_times) -> tuple:
    """Memo key of a failure study: the step times it was built from (None: predicted)."""
    return ("failure_study", None if step_times is None else json.dumps(step_times, sort_keys=True))


class FailuresKind(RunKind):
    name = "failures"
    label = "Failures and goodput"
    options_form = FailureOptions
    metrics = (RACK_FAILURES,)
    default_metric = RACK_FAILURES.name
    panel_template = "scenarios/kinds/failures_panel.html"
    script = "js/kinds/failures.js"
    figures = (
        Figure("etr", "Effective training time (ETTR)", percent, lower_is_better=False),
        Figure("goodput", "Goodput", percent, lower_is_better=False),
        Figure("wall_time_p50_days", "Wall time to finish (median)", _days, lower_is_better=True),
        Figure("wall_time_p95_days", "Wall time to finish (p95)", _days, lower_is_better=True),
        Figure("productive_p50_days", "Productive time in the window (median)", _days, lower_is_better=False),
        Figure(
            "interruptions_total", "Interruptions (mean per run)", lambda v: f"{v:,.1f}", lower_is_better=True
        ),
        Figure("mttf_hours", "Mean time to failure", lambda v: f"{v:.2f} h", lower_is_better=False),
        Figure("checkpoint_interval_min", "Checkpoint interval", _minutes),
        Figure("optimal_checkpoint_interval_min", "Optimal interval (Young/Daly)", _minutes),
        Figure("closed_form_etr", "ETTR, closed form (Daly)", percent),
        Figure("trials", "Trials", count, live=False),
    )
    state_keys = ("warnings",)

    # --- options ------------------------------------------------------------------------------

    def clean_options(self, scenario, options: dict[str, Any], *, design=None) -> dict[str, Any]:
        """``{"chunks": tasks the trials are split over (default 4)}``."""
        reject_unknown_options(options, {"chunks"})
        return {"chunks": int_option(options, "chunks", DEFAULT_CHUNKS, 1, MAX_CHUNKS)}

    # --- computing ------------------------------------------------------------------------------

    def _study(self, context, step_times=None):
        """The run's failure study, built once per context and step times (a context cached for
        a split run: once per worker process for all its chunks and the merge)."""
        from scenarios.sim.studies import failure_study

        def build():
            return failure_study(
                context.checked,
                catalog=context.catalog,
                plan=context.plan(),
                fabric=context.fabric(),
                step_times=step_times,
            )

        return context.memoized(_study_key(step_times), build)

    @staticmethod
    def _step_times(study) -> dict[str, Any]:
        kwargs = study.run_kwargs
        return {"step_time_s": kwargs["step_time_s"], "degraded_step_time_s": kwargs["degraded_step_time_s"]}

    def split(self, context) -> list[dict[str, Any]]:
        """Ranges of trial blocks; the step times (four predictions) are computed here once."""
        from scenarios.sim.failures import failure_blocks, split_blocks

        study = self._study(context)
        require_feasible(study.step)  # failures of a job that cannot run are no answer
        step_times = self._step_times(study)
        # The chunks (and the merge) rebuild the study from these step times: the same model,
        # spec and run arguments, so in this process they take this one.
        context.memo.setdefault(_study_key(step_times), study)
        ranges = split_blocks(failure_blocks(study.spec), context.options["chunks"])
        return [{"blocks": list(r), "step_times": step_times} for r in ranges if len(r)]

    def compute_chunk(self, context, chunk: dict[str, Any], progress) -> dict[str, Any]:
        from scenarios.sim.failures import run_failure_chunk

        progress.check_cancelled()
        study = self._study(context, step_times=chunk["step_times"])
        result = run_failure_chunk(
            study.model, study.spec, blocks=chunk["blocks"], on_progress=progress.poll, **study.run_kwargs
        )
        blocks = result["blocks"]
        partial = {
            "blocks": len(blocks),
            "trials": sum(b["trials"] for b in blocks),
            "etr_sum": sum(b["sums"]["etr"] for b in blocks),
            "wall_s_sum": sum(b["sums"]["wall_s"] for b in blocks),
        }
        progress.item_done(
            context.options["chunks"],
            f"trial blocks {chunk['blocks'][0]}–{chunk['blocks'][-1]} done",
            partial=partial,
        )
        return {**result, "step_times": chunk["step_times"]}

    def merge_partial(self, stored: dict[str, Any], partial: dict[str, Any]) -> dict[str, Any]:
        """The trials simulated so far and their mean ETTR and wall time (``{"blocks", "trials",
        "etr", "wall_time_days", ...sums}``): exact sums over the blocks done."""
        keys = ("blocks", "trials", "etr_sum", "wall_s_sum")
        out = {k: (stored.get(k) or 0) + (partial.get(k) or 0) for k in keys}
        trials = max(out["trials"], 1)
        return {
            **out,
            "etr": out["etr_sum"] / trials,
            "wall_time_days": out["wall_s_sum"] / trials / 86_400.0,
        }

    def partial_figures(self, partial: dict[str, Any]) -> list[dict[str, str]]:
        if not partial.get("trials"):
            return []
        return [
            {"key": "trials_so_far", "label": "Trials so far", "text": count(partial["trials"])},
            {"key": "etr_so_far", "label": "ETTR so far", "text": percent(partial["etr"])},
            {
                "key": "wall_so_far",
                "label": "Wall time so far (mean)",
                "text": _days(partial["wall_time_days"]),
            },
        ]

    def merge(self, context, results: list[dict[str, Any]]) -> RunOutput:
        """Merge the blocks exactly, then re-simulate the representative trial for its log."""
        from scenarios.sim.failures import attach_event_log, merge_failure_chunks

        study = self._study(context, step_times=results[0]["step_times"])
        merged = merge_failure_chunks([{k: v for k, v in r.items() if k != "step_times"} for r in results])
        return self._output(context, attach_event_log(merged, study.model, study.spec, **study.run_kwargs))

    def execute(self, context, progress) -> RunOutput:
        from scenarios.sim.studies import run_failure_study

        progress(0.0, "predicting the step time, healthy and degraded")
        study = self._study(context)
        require_feasible(study.step)
        progress(0.2, f"simulating {study.spec.trials:,} trials")
        simulated = run_failure_study(study, on_progress=lambda f, stage: progress(0.2 + 0.75 * f, stage))
        return self._output(context, simulated)

    def _output(self, context, result) -> RunOutput:
        summary = result.to_dict()
        dist = summary["wall_time_days"]
        summary.update(
            wall_time_p50_days=dist["p50"],
            wall_time_p95_days=dist["p95"],
            interruptions_total=summary["interruptions"]["total"],
        )
        if summary.get("productive_days"):
            summary["productive_p50_days"] = summary["productive_days"]["p50"]
            del summary["wall_time_p50_days"], summary["wall_time_p95_days"]
        summary["racks_aligned"] = not context.changes_cluster
        arrays = {k: np.asarray(v) for k, v in result.arrays().items()}
        rack_values = {}
        if summary["racks_aligned"] and arrays[RACK_FAILURES.array].size == context.n_racks:
            rack_values[RACK_FAILURES.name] = rack_list(arrays[RACK_FAILURES.array])
        else:
            arrays.pop(RACK_FAILURES.array)
        return RunOutput(summary=summary, arrays=arrays, rack_values=rack_values)

    # --- showing --------------------------------------------------------------------------------

    def charts(self, run) -> list[dict[str, Any]]:
        summary = run.summary or {}
        wall = run_array(run=run, name="wall_time_s")
        out = []
        if wall is not None and wall.size:
            out.append(
                chart("wall-time", "Wall time to finish", failure_charts.wall_time_figure(wall, summary))
            )
        out += [
            chart("badput", "Where the time goes", failure_charts.badput_figure(["this run"], [summary])),
            chart("interval", "ETTR against checkpoint interval", failure_charts.interval_figure(summary)),
            chart(
                "interruptions",
                "Interruptions by category",
                failure_charts.interruptions_figure(["this run"], [summary]),
            ),
        ]
        return out

    def compare_charts(self, runs: Sequence) -> list[dict[str, Any]]:
        labels = [f"#{r.pk} {r.scenario_name}" for r in runs]
        summaries = [r.summary or {} for r in runs]
        return [
            chart("compare-badput", "Where the time goes", failure_charts.badput_figure(labels, summaries)),
            chart(
                "compare-interruptions",
                "Interruptions by category",
                failure_charts.interruptions_figure(labels, summaries),
            ),
        ]

    def page_context(self, run) -> dict[str, Any]:
        """The representative trial's events for the replay (one trial: hundreds of rows)."""
        summary = run.summary or {}
        return {
            "event_log": summary.get("event_log") or [],
            "racks_aligned": summary.get("racks_aligned", False),
            "representative_trial": summary.get("representative_trial"),
            "horizon_s": (
                (summary.get("wall_time_days") or summary.get("productive_days") or {}).get("p50") or 0
            )
            * 86_400.0,
        }


KIND = FailuresKind()
