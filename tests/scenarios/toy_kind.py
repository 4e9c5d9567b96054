"""A toy run kind that lives outside the project, added through the registry alone (the
TWIN_EXTRA_RUN_KINDS setting): it proves a kind needs one module and one registration line.

It sums the squares 1..count in chunks of three numbers, publishes each chunk as it finishes and
draws one chart."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from django import forms

from scenarios.charts.base import chart
from scenarios.kinds.base import Figure, RunKind, RunOutput, int_option, reject_unknown_options

CHUNK = 3


class ToyOptions(forms.Form):
    count = forms.IntegerField(required=False, min_value=1, label="Numbers")


class ToyKind(RunKind):
    name = "toy"
    label = "Toy sum of squares"
    options_form = ToyOptions
    figures = (Figure("total", "Sum of squares", lambda v: f"{v:,}"), Figure("count", "Numbers", str))

    def clean_options(self, scenario, options: dict[str, Any], *, design=None) -> dict[str, Any]:
        reject_unknown_options(options, {"count"})
        return {"count": int_option(options, "count", 7, 1, 100)}

    def split(self, context) -> list[dict[str, Any]]:
        numbers = list(range(1, context.options["count"] + 1))
        return [{"numbers": numbers[i : i + CHUNK]} for i in range(0, len(numbers), CHUNK)]

    def compute_chunk(self, context, chunk: dict[str, Any], progress) -> dict[str, Any]:
        squares = [n * n for n in chunk["numbers"]]
        progress.item_done(
            len(self.split(context)), f"{chunk['numbers'][-1]} done", partial={"squares": squares}
        )
        return {"squares": squares}

    def merge(self, context, results: list[dict[str, Any]]) -> RunOutput:
        squares = sorted(s for r in results for s in r["squares"])
        return RunOutput(summary={"total": sum(squares), "count": len(squares), "squares": squares})

    def execute(self, context, progress) -> RunOutput:
        return self.merge(context, [self.compute_chunk(context, c, progress) for c in self.split(context)])

    def charts(self, run) -> list[dict[str, Any]]:
        squares = (run.summary or {}).get("squares") or []
        figure = go.Figure(go.Bar(x=list(range(1, len(squares) + 1)), y=squares))
        return [chart("toy-squares", "Squares", figure)]


KIND = ToyKind()
