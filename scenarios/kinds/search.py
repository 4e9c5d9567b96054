"""Layout search: every parallel layout of the job on the scenario's fabric, ranked by step
time with the core's rules, memory and step model. Candidate slices are searched by any worker
(branch and bound per slice) and merged exactly."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from django import forms

from scenarios import charts
from scenarios.kinds.base import (
    Figure,
    RunKind,
    RunOutput,
    count,
    int_option,
    percent,
    reject_unknown_options,
    seconds,
)

MAX_SEARCH_TOP = 100
DEFAULT_SEARCH_CHUNKS = 4
MAX_SEARCH_CHUNKS = 64


class SearchOptions(forms.Form):
    top = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_SEARCH_TOP, label="Layouts kept", help_text="default 10"
    )


def _best_label(value: Any) -> str:
    row = value[0] if isinstance(value, list | tuple) and value else value
    return charts.layout_label(row) if isinstance(row, dict) else "—"


def _best(key: str):
    """The ``key`` of the best layout in a search summary (None when no layout was valid)."""

    def pick(summary: dict[str, Any]) -> Any:
        best = summary.get("best") or []
        return best[0].get(key) if best and isinstance(best[0], dict) else None

    return pick


class SearchKind(RunKind):
    name = "search"
    label = "Layout search"
    options_form = SearchOptions
    default_metric = "link_util"
    figures = (
        Figure("best", "Best layout", _best_label),
        # Keyed like the step kind's figures so a search and a step run share the compare rows.
        Figure("step_time_s", "Best step time", seconds, lower_is_better=True, pick=_best("step_time_s")),
        Figure("mfu", "Best MFU", percent, lower_is_better=False, pick=_best("mfu")),
        Figure("candidates", "Layouts tried", count),
        Figure("valid", "Valid layouts", count),
    )

    def clean_options(self, scenario, options: dict[str, Any], *, design=None) -> dict[str, Any]:
        """``{"top": best layouts to keep (default 10), "chunks": candidate slices (default 4)}``."""
        reject_unknown_options(options, {"top", "chunks"})
        return {
            "top": int_option(options, "top", 10, 1, MAX_SEARCH_TOP),
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
            context.scenario,
            catalog=context.catalog,
            fabric=context.fabric(),
            top_k=context.options["top"],
            candidates=slice(chunk["start"], chunk["stop"]),
        )
        progress.item_done(
            context.options["chunks"], f"candidates {chunk['start']:,}–{chunk['stop']:,} searched"
        )
        return result.to_dict()

    def merge(self, context, results: list[dict[str, Any]]) -> RunOutput:
        """The best ``top`` of all slices and the summed counts (``merge_search_results``)."""
        from scenarios.sim.search import SearchResult, merge_search_results

        merged = merge_search_results([SearchResult(**r) for r in results], top_k=context.options["top"])
        return RunOutput(summary=merged.to_dict())

    def execute(self, context, progress) -> RunOutput:
        """The whole search as one slice (what the chunked run must equal)."""
        one = context.with_options(chunks=1)
        return self.merge(
            one, [self.compute_chunk(one, {"start": 0, "stop": self._candidate_count(one)}, progress)]
        )

    def charts(self, run) -> list[dict[str, Any]]:
        summary = run.summary or {}
        best = summary.get("best") or summary.get("top") or []
        out = [charts.chart("search", "Layout ranking", charts.search_figure(best))]
        if best:
            out.append(
                charts.chart(
                    "breakdown",
                    "Step-time breakdown",
                    charts.breakdown_figure([charts.layout_label(r) for r in best[:8]], best[:8]),
                )
            )
        return out


KIND = SearchKind()
