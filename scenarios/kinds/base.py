"""What a run kind is: the contract every module of ``scenarios/kinds/`` fulfils.

A kind declares everything about itself in one class: its label and options (a form, validated
when the run is started), how it computes (``execute``, or ``split`` -> ``compute_chunk`` ->
``merge`` for work any number of workers share), the figures its summary shows live and on the
compare page, its charts (built by its module of ``scenarios/charts/``), the floor-plan metrics its
runs store and the one its run page opens with. Services, tasks, the stream and the pages read the
registry (``scenarios.kinds``) and never name a kind.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from django import forms
from django.core.exceptions import ValidationError

from utilities.errors import preview

if TYPE_CHECKING:
    from scenarios.metrics import Metric


@dataclass(frozen=True)
class Figure:
    """One number of a run summary as people read it.

    ``format`` turns the summary value into text; ``lower_is_better`` gives the compare page its
    colours (None: a fact without a direction); ``live`` says whether status messages carry it;
    ``pick`` derives the value from the whole summary when it is not stored under ``key`` (a
    search's best step time is its best layout's), so kinds that share a key (``step_time_s``)
    line up on one compare row.
    """

    key: str
    label: str
    format: Callable[[Any], str] = str
    lower_is_better: bool | None = None
    live: bool = True
    pick: Callable[[dict[str, Any]], Any] | None = None

    def value(self, summary: dict[str, Any]) -> Any:
        """The figure's raw value in ``summary`` (None when absent)."""
        return self.pick(summary) if self.pick is not None else summary.get(self.key)

    def text(self, value: Any) -> str:
        return self.format(value)


@dataclass
class RunOutput:
    """What a finished run saves and streams.

    Attributes
    ----------
    summary : dict
        JSON summary (plain numbers, small lists).
    arrays : dict[str, ndarray]
        Large arrays stored as ``RunArray`` rows.
    rack_values : dict[str, list[float]]
        Floor-plan metric -> per-rack values (racks by pk) to stream as final partials.
    infeasible : list[str]
        Why the job cannot run as asked, one line each; non-empty makes the run ``infeasible``
        (not succeeded), its reasons saved as ``summary["infeasible"]``. Its summary must then
        hold no headline figure (step time, MFU, time to train) of the job that cannot run.
    """

    summary: dict[str, Any]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    rack_values: dict[str, list[float]] = field(default_factory=dict)
    infeasible: list[str] = field(default_factory=list)


def reasons_text(reasons: Any) -> str:
    return "; ".join(reasons) if isinstance(reasons, list | tuple) else str(reasons)


def would_fit_text(row: Any) -> str:
    """``tp8 pp16 dp1 · mb1 · full · ZeRO-1 (62.0 GiB per GPU)`` of the layout that fits."""
    from scenarios.charts.search import layout_label

    if not isinstance(row, dict):
        return "no layout fits"
    return f"{layout_label(row)} ({row.get('memory_gib_per_gpu', 0):.1f} GiB per GPU)"


def _would_fit(summary: dict[str, Any]) -> Any:
    """The layout that fits of an infeasible run that searched one ("none" when none fits)."""
    if not summary.get("infeasible") or "would_fit" not in summary:
        return None
    return summary["would_fit"] or "none"


#: The figures an infeasible run shows first (every kind's run list headline is its first).
INFEASIBLE_FIGURES = (
    Figure("infeasible", "Infeasible", reasons_text, pick=lambda s: s.get("infeasible") or None),
    Figure("would_fit", "Would fit", would_fit_text, pick=lambda s: _would_fit(s)),
)


class JobInfeasible(Exception):
    """Raised by a kind that finds, before computing, that the job cannot run (its step does not
    fit in HBM): the run ends ``infeasible`` with these reasons instead of figures of a job that
    cannot run."""

    def __init__(self, reasons):
        self.reasons = list(reasons)
        super().__init__("; ".join(self.reasons))


def require_feasible(step) -> None:
    """Raise :class:`JobInfeasible` when a core ``StepResult`` says the job cannot run."""
    if step is not None and not step.feasible:
        raise JobInfeasible(step.infeasible)


class NoOptions(forms.Form):
    """A kind without options."""


def options_error(key: str, message: str) -> ValidationError:
    """The error of one option, keyed and prefixed by its path (``options.nodes: ...``)."""
    return ValidationError({f"options.{key}": f"options.{key}: {message}"})


def reject_unknown_options(options: dict[str, Any], known: set[str]) -> None:
    unknown = sorted(set(options) - known)
    if unknown:
        raise options_error(unknown[0], f"unknown option (known: {', '.join(sorted(known)) or 'none'})")


def int_option(options: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise options_error(key, f"must be an integer from {lo} to {hi:,} (got {preview(value)})")
    return value


class RunKind:
    """Base class of a run kind (see the module docstring).

    Class attributes
    ----------------
    name, label : str
        Registry key (``Run.kind``) and what pages call it.
    options_form : type[forms.Form]
        The options a user may set when starting it; its ``cleaned_data`` is passed to
        :meth:`clean_options`.
    figures : tuple[Figure, ...]
        Summary figures, in display order.
    metrics : tuple[Metric, ...]
        The floor-plan metrics its runs store (``scenarios.metrics.Metric`` with the ``array`` it
        reads; ``RunOutput.rack_values`` streams them by name). A metric two kinds share is one
        object both reference. ``scenarios.kinds.floor_metrics()`` adds them to the design's.
    default_metric : str
        Floor-plan metric of its run page: one of its ``metrics`` or of the design's
        (``scenarios.metrics.DESIGN_METRICS``); the registry refuses any other.
    state_keys : tuple[str, ...]
        Summary keys that live messages carry besides the figures (flags the page reads).
    panel_template, script : str or None
        A template drawn on the run page's side and a JS module (static path) handling its live
        messages, for kinds that draw something new.
    results_template : str or None
        A template drawn above the result charts of a finished run, given ``results_context``.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    options_form: ClassVar[type[forms.Form]] = NoOptions
    figures: ClassVar[tuple[Figure, ...]] = ()
    metrics: ClassVar[tuple[Metric, ...]] = ()
    default_metric: ClassVar[str] = "rack_power"
    state_keys: ClassVar[tuple[str, ...]] = ()
    panel_template: ClassVar[str | None] = None
    results_template: ClassVar[str | None] = None
    script: ClassVar[str | None] = None

    # --- options ------------------------------------------------------------------------------

    def clean_options(self, context_scenario, options: dict[str, Any], *, design=None) -> dict[str, Any]:
        """Normalize and validate the options of a run of the core ``Scenario``.

        Raises ValidationError keyed ``options.<key>`` whose message names the option and the
        limit. The default accepts none.
        """
        reject_unknown_options(options, set())
        return {}

    def form_options(self, cleaned_data: dict[str, Any]) -> dict[str, Any]:
        """The options of ``run_start`` from the options form's cleaned data (blanks omitted)."""
        return {k: v for k, v in cleaned_data.items() if v not in (None, "", [])}

    # --- computing ------------------------------------------------------------------------------

    def execute(self, context, progress) -> RunOutput:
        """Compute the whole run in this process."""
        raise NotImplementedError

    def split(self, context) -> list[dict[str, Any]] | None:
        """JSON chunks for other workers, or None to compute the run in one piece."""
        return None

    def compute_chunk(self, context, chunk: dict[str, Any], progress) -> dict[str, Any]:
        """One chunk (JSON in, JSON out, any worker)."""
        raise NotImplementedError

    def merge(self, context, results: list[dict[str, Any]]) -> RunOutput:
        """The exact merge of every chunk's result (equal to ``execute``)."""
        raise NotImplementedError

    def merge_partial(self, stored: dict[str, Any], partial: dict[str, Any]) -> dict[str, Any]:
        """The run's partial result so far (``summary["partial"]`` while it runs) with one more
        ``partial`` of ``progress.item_done`` folded in. The default keeps the newest values."""
        return {**stored, **partial}

    def partial_figures(self, partial: dict[str, Any]) -> list[dict[str, str]]:
        """``[{"key", "label", "text"}]`` of the partial result so far, as the run page shows it
        while the run computes ("Best layout so far", "Trials so far"). None by default."""
        return []

    # --- showing --------------------------------------------------------------------------------

    def summary_figures(self, summary: dict[str, Any], *, live_only: bool = False) -> list[dict[str, str]]:
        """``[{"key", "label", "text"}]`` of the figures present in a summary."""
        out = []
        for figure in (*INFEASIBLE_FIGURES, *self.figures):
            if live_only and not figure.live:
                continue
            value = figure.value(summary)
            if value is None:
                continue
            out.append({"key": figure.key, "label": figure.label, "text": figure.text(value)})
        return out

    def brief(self, summary: dict[str, Any]) -> dict[str, Any]:
        """The raw values of the live figures and state keys (what state/status messages carry)."""
        out = {k: summary[k] for k in self.state_keys if k in summary}
        for figure in (*INFEASIBLE_FIGURES, *self.figures):
            value = figure.value(summary) if figure.live else None
            if value is not None:
                out[figure.key] = value
        return out

    def headline(self, summary: dict[str, Any]) -> str:
        """The one figure a list of runs shows (the first figure present)."""
        figures = self.summary_figures(summary)
        return figures[0]["text"] if figures else "—"

    def charts(self, run) -> list[dict[str, Any]]:
        """Plotly charts of a finished run (``scenarios.charts`` shape)."""
        return []

    def compare_charts(self, runs: Sequence) -> list[dict[str, Any]]:
        """Charts comparing several finished runs of this kind."""
        return []

    def floor_metric(self, run) -> str:
        """The floor-plan metric the run page opens with."""
        return self.default_metric

    def results_context(self, run) -> dict[str, Any]:
        """Template context of ``results_template`` (a finished run's summary, shaped)."""
        return {}

    def page_context(self, run) -> dict[str, Any]:
        """Extra template context of ``panel_template``."""
        return {}


# --- formats shared by kinds -------------------------------------------------------------------


def seconds(value: float) -> str:
    return f"{value:.3f} s"


def percent(value: float, digits: int = 1) -> str:
    return f"{value * 100:.{digits}f} %"


def count(value: Any) -> str:
    if isinstance(value, list | tuple):
        value = len(value)
    return f"{value:,}"


def gpus(value: int) -> str:
    return f"{value:,} GPUs"


def duration_days(value: float) -> str:
    return f"{value:.1f} days" if value >= 1 else f"{value * 24:.1f} hours"


def change_text(change: float) -> str:
    """A relative change as people read it: whole percent from 10 %, one decimal from 1 %, one
    significant digit below (+0.5 %, -0.04 %), never a rounded-away "±0 %"."""
    pct = change * 100
    size = abs(pct)
    if size < 0.001:
        return f"{'+' if pct > 0 else '-'}<0.001 %"
    digits = 0 if size >= 10 else 1 if size >= 1 else -math.floor(math.log10(size))
    return f"{pct:+.{digits}f} %"
