"""Layout search: every parallel layout of the job on the scenario's fabric, ranked by step
time with the core's rules, memory and step model. Candidate slices are searched by any worker
(branch and bound per slice) and merged exactly."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from django import forms

from scenarios.charts import search as search_charts
from scenarios.charts.base import chart
from scenarios.charts.step import BREAKDOWN_LABELS
from scenarios.kinds.base import (
    Figure,
    RunKind,
    RunOutput,
    change_text,
    count,
    int_option,
    percent,
    reject_unknown_options,
    seconds,
)

MAX_SEARCH_TOP = 100
#: Layouts a search keeps by default: enough that, with ZeRO and recompute variants of one
#: prediction folded, the results table still lists about ten distinct layouts.
DEFAULT_SEARCH_TOP = 40
DEFAULT_SEARCH_CHUNKS = 4
MAX_SEARCH_CHUNKS = 64


class SearchOptions(forms.Form):
    top = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_SEARCH_TOP,
        label="Layouts kept",
        help_text=f"default {DEFAULT_SEARCH_TOP}",
    )


def _best_label(value: Any) -> str:
    row = value[0] if isinstance(value, list | tuple) and value else value
    return search_charts.layout_label(row) if isinstance(row, dict) else "—"


def _best(key: str):
    """The ``key`` of the best layout in a search summary (None when no layout was valid)."""

    def pick(summary: dict[str, Any]) -> Any:
        best = summary.get("best") or []
        return best[0].get(key) if best and isinstance(best[0], dict) else None

    return pick


#: Layouts the results table shows (after folding identical predictions).
TABLE_ROWS = 10
#: Relative step-time difference under which two layouts predict the same: one table row.
SAME_PREDICTION = 1e-6
#: Job keys a layout sets (``apply this layout`` copies them into a what-if's job).
LAYOUT_DEGREES = ("tp", "pp", "dp", "cp", "ep", "vpp")
LAYOUT_JOB_KEYS = ("micro_batch", "recompute", "zero")


def own_layout(job) -> dict[str, Any]:
    """The layout of a core ``Job`` in the shape of a search row (for labels and comparison)."""
    p = job.parallel
    degrees = {k: int(getattr(p, k, 1) or 1) for k in LAYOUT_DEGREES}
    return {**degrees, "micro_batch": job.micro_batch, "recompute": job.recompute, "zero": job.zero}


def layout_job(job: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """The scenario ``job`` mapping with the layout of search ``row`` (degrees of 1 omitted)."""
    parallel = {k: int(row[k]) for k in LAYOUT_DEGREES if row.get(k, 1) != 1 or k in ("tp", "pp", "dp")}
    return {**job, "parallel": parallel, **{k: row[k] for k in LAYOUT_JOB_KEYS if k in row}}


def why_it_wins(row: dict[str, Any], own: dict[str, Any] | None) -> str:
    """The two components of the step-time breakdown that change most against the scenario's own
    layout ("-0.12 s Tensor-parallel comm., +0.02 s Pipeline bubble"), "" without one."""
    if not own or not own.get("breakdown"):
        return ""
    mine, theirs = row.get("breakdown") or {}, own["breakdown"]
    change = {k: mine.get(k, 0.0) - theirs.get(k, 0.0) for k in set(mine) | set(theirs)}
    largest = sorted((k for k in change if abs(change[k]) > 5e-4), key=lambda k: -abs(change[k]))[:2]
    return ", ".join(f"{change[k]:+.3f} s {BREAKDOWN_LABELS.get(k, k)}" for k in largest)


def distinct_layouts(best: list[dict[str, Any]], own: dict[str, Any] | None, limit: int = TABLE_ROWS):
    """Rows of the results table: the fastest layouts, those with the same predicted step time
    and MFU folded into one row that lists the variants (ZeRO stages that change only memory...).

    Returns ``[{"index" (of the row in ``best``), "label", "variants" [labels], "step_time_s",
    "mfu", "memory_gib" (min, max), "why", "vs_own" (relative step-time change or None)}]``.
    """
    rows: list[dict[str, Any]] = []
    for index, row in enumerate(best):
        last = rows[-1] if rows else None
        same = last is not None and abs(row["step_time_s"] - last["step_time_s"]) <= SAME_PREDICTION * max(
            row["step_time_s"], 1e-12
        )
        if same and abs(row.get("mfu", 0.0) - last["mfu"]) <= 1e-9:
            last["variants"].append(search_charts.layout_label(row))
            lo, hi = last["memory_gib"]
            last["memory_gib"] = (min(lo, row["memory_gib_per_gpu"]), max(hi, row["memory_gib_per_gpu"]))
            continue
        if len(rows) == limit:
            break
        own_time = (own or {}).get("step_time_s")
        rows.append(
            {
                "index": index,
                "label": search_charts.layout_label(row),
                "variants": [],
                "step_time_s": row["step_time_s"],
                "mfu": row.get("mfu", 0.0),
                "memory_gib": (row["memory_gib_per_gpu"], row["memory_gib_per_gpu"]),
                "why": why_it_wins(row, own),
                "vs_own": row["step_time_s"] / own_time - 1 if own_time else None,
            }
        )
    return rows


class SearchKind(RunKind):
    name = "search"
    label = "Layout search"
    options_form = SearchOptions
    # A search stores no per-rack arrays: its page opens on the design's rack power, not on an
    # empty (grey) run metric.
    default_metric = "rack_power"
    results_template = "scenarios/kinds/search_results.html"
    figures = (
        Figure("best", "Best layout", _best_label),
        # Keyed like the step kind's figures so a search and a step run share the compare rows.
        Figure("step_time_s", "Best step time", seconds, lower_is_better=True, pick=_best("step_time_s")),
        Figure("mfu", "Best MFU", percent, lower_is_better=False, pick=_best("mfu")),
        Figure("candidates", "Layouts tried", count),
        Figure("valid", "Valid layouts", count),
    )

    def clean_options(self, scenario, options: dict[str, Any], *, design=None) -> dict[str, Any]:
        """``{"top": best layouts to keep (default 40), "chunks": candidate slices (default 4)}``."""
        reject_unknown_options(options, {"top", "chunks"})
        return {
            "top": int_option(options, "top", DEFAULT_SEARCH_TOP, 1, MAX_SEARCH_TOP),
            "chunks": int_option(options, "chunks", DEFAULT_SEARCH_CHUNKS, 1, MAX_SEARCH_CHUNKS),
        }

    def _candidate_count(self, context) -> int:
        from scenarios.sim.placement import scenario_job_gpus
        from scenarios.sim.search import enumerate_candidates

        job = context.scenario.job
        gpus = scenario_job_gpus(context.scenario, context.catalog)
        found = enumerate_candidates(gpus, moe=job.model.moe is not None, global_batch=job.global_batch)
        return int(found["tp"].size)

    def split(self, context) -> list[dict[str, Any]]:
        """Contiguous candidate slices ``{"start", "stop"}`` in enumeration order."""
        total = self._candidate_count(context)
        chunks = max(1, min(context.options["chunks"], total))
        edges = np.linspace(0, total, chunks + 1).round().astype(int)
        return [{"start": int(a), "stop": int(b)} for a, b in itertools.pairwise(edges)]

    def compute_chunk(self, context, chunk: dict[str, Any], progress) -> dict[str, Any]:
        """Search candidates ``start:stop`` with the core; exact for the slice, so the merge of all
        slices equals the unsplit search."""
        from scenarios.sim.search import search_layouts

        progress.check_cancelled()
        result = search_layouts(
            context.checked,
            catalog=context.catalog,
            fabric=context.fabric(),
            top_k=context.options["top"],
            candidates=slice(chunk["start"], chunk["stop"]),
            on_progress=progress.poll,
        )
        partial = {"best": result.best[:1], "searched": result.candidates, "valid": result.valid}
        progress.item_done(
            context.options["chunks"],
            f"candidates {chunk['start']:,}–{chunk['stop']:,} searched",
            partial=partial,
        )
        return result.to_dict()

    def merge_partial(self, stored: dict[str, Any], partial: dict[str, Any]) -> dict[str, Any]:
        """The best layout so far of the slices searched (``{"best": [row], "searched",
        "valid"}``): the merge rule of the slices, applied to the ones done."""
        rows = sorted(
            [*(stored.get("best") or []), *(partial.get("best") or [])],
            key=lambda row: (row["step_time_s"], row["memory_gib_per_gpu"], row["candidate"]),
        )
        return {
            "best": rows[:1],
            "searched": int(stored.get("searched") or 0) + int(partial.get("searched") or 0),
            "valid": int(stored.get("valid") or 0) + int(partial.get("valid") or 0),
        }

    def partial_figures(self, partial: dict[str, Any]) -> list[dict[str, str]]:
        if not partial.get("searched"):
            return []
        out = [{"key": "searched", "label": "Layouts searched so far", "text": count(partial["searched"])}]
        best = partial.get("best") or []
        if best:
            row = best[0]
            label = search_charts.layout_label(row)
            text = f"{label} · {seconds(row['step_time_s'])} · MFU {percent(row['mfu'])}"
            out.insert(0, {"key": "best_so_far", "label": "Best layout so far", "text": text})
        return out

    def merge(self, context, results: list[dict[str, Any]]) -> RunOutput:
        """The best ``top`` of all slices and the summed counts (``merge_search_results``)."""
        from scenarios.sim.search import SearchResult, merge_search_results

        merged = merge_search_results([SearchResult(**r) for r in results], top_k=context.options["top"])
        if not merged.best:  # no layout passes the rules and fits: nothing to choose
            rejected = ", ".join(f"{n:,} {why}" for why, n in merged.rejected.items() if n)
            reason = f"no layout fits: of {merged.candidates:,} layouts, {rejected or 'none valid'}"
            return RunOutput(summary={**merged.to_dict(), "own": None}, infeasible=[reason])
        return RunOutput(summary={**merged.to_dict(), "own": self._own_prediction(context)})

    def _own_prediction(self, context) -> dict[str, Any] | None:
        """The scenario's own layout predicted like the candidates, what the table explains the
        winners against (None when that layout breaks a rule the search enforces)."""
        from scenarios.sim.step.model import predict

        try:
            result = predict(context.checked, catalog=context.catalog, fabric=context.fabric())
        except ValueError:
            return None
        return {
            **own_layout(context.scenario.job),
            "step_time_s": float(result.step_time_s),
            "mfu": float(result.mfu),
            "memory_gib_per_gpu": float(result.memory_gib_per_gpu),
            "breakdown": {k: float(v) for k, v in dict(result.breakdown).items()},
        }

    def execute(self, context, progress) -> RunOutput:
        """The whole search as one slice (what the chunked run must equal)."""
        one = context.with_options(chunks=1)
        return self.merge(
            one, [self.compute_chunk(one, {"start": 0, "stop": self._candidate_count(one)}, progress)]
        )

    def results_context(self, run) -> dict[str, Any]:
        summary = run.summary or {}
        own = summary.get("own")
        layouts = distinct_layouts(summary.get("best") or [], own)
        for row in layouts:
            lo, hi = row["memory_gib"]
            row["texts"] = {
                "step_time": seconds(row["step_time_s"]),
                "mfu": percent(row["mfu"]),
                "memory": f"{lo:.1f} GiB" if hi - lo < 0.05 else f"{lo:.1f}–{hi:.1f} GiB",
                "vs_own": "—" if row["vs_own"] is None else change_text(row["vs_own"]),
            }
        return {
            "layouts": layouts,
            "own_text": f"{seconds(own['step_time_s'])} per step, MFU {percent(own['mfu'])}" if own else "",
            "own": own,
            "own_label": search_charts.layout_label(own) if own else "",
        }

    def charts(self, run) -> list[dict[str, Any]]:
        summary = run.summary or {}
        best = summary.get("best") or summary.get("top") or []
        out = [chart("search", "Layout ranking", search_charts.search_figure(best))]
        if best:
            shown = [best[row["index"]] for row in distinct_layouts(best, None, limit=8)]
            out.append(
                chart("breakdown", "Step-time breakdown", search_charts.layouts_breakdown_figure(shown))
            )
        return out


KIND = SearchKind()
