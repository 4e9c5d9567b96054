"""Cancel stops the computation: every kind hands its core a callback the core calls in its hot
loop (per costed batch of layouts, per batch of failure events, per power variant, per sweep
point's stage), and the core lets the callback's ``Cancelled`` through."""

from __future__ import annotations

import re

import pytest

from scenarios import services
from scenarios.sim.format.errors import Cancelled
from tests.scenarios.test_kinds import running_context

FAILURES = {"trials": 600, "window_days": 20, "spare_servers": 2, "seed": 3}


@pytest.fixture
def studied(scenario, user):
    services.scenario_update(scenario=scenario, user=user, failures=FAILURES)
    return scenario


class StopAfter:
    """A run's progress whose core callbacks (the call and ``poll``) raise ``Cancelled`` at the
    ``n``-th; it records the stages it saw."""

    def __init__(self, n: int):
        self.n = n
        self.stages: list[str] = []

    def __call__(self, fraction, stage=""):
        self.stages.append(stage)
        if len(self.stages) >= self.n:
            raise Cancelled("cancelled")

    poll = __call__

    def check_cancelled(self):
        pass

    def item_done(self, items_total, stage, partial=None):
        pass


def test_failures_chunk_stops_inside_the_monte_carlo(studied):
    spec, context = running_context(studied, "failures", {"chunks": 2})
    chunk = spec.split(context)[0]
    progress = StopAfter(1)
    with pytest.raises(Cancelled):
        spec.compute_chunk(context, chunk, progress)
    assert re.fullmatch(r"\d+ events per trial|drawing events after \d+", progress.stages[-1])


def test_power_stops_inside_the_power_core(scenario):
    spec, context = running_context(scenario, "power", {"events": "none"})
    progress = StopAfter(3)  # predicting, simulating, then the core's first variant
    with pytest.raises(Cancelled):
        spec.execute(context, progress)
    assert progress.stages[-1].startswith("simulated ")


def test_search_chunk_stops_while_costing_layouts(scenario):
    spec, context = running_context(scenario, "search", {"chunks": 1})
    chunk = spec.split(context)[0]
    progress = StopAfter(2)  # the rules' pass, then the first costed batch of shapes
    with pytest.raises(Cancelled):
        spec.compute_chunk(context, chunk, progress)
    assert "layout shapes costed" in progress.stages[-1]


def test_sweep_point_stops_inside_its_prediction(scenario):
    spec, context = running_context(scenario, "sweep", {"nodes": [1, 2]})
    progress = StopAfter(2)
    with pytest.raises(Cancelled):
        spec.execute(context, progress)
    assert progress.stages[-1] == "routing collectives"


def test_step_stops_inside_its_prediction(scenario):
    spec, context = running_context(scenario, "step", {})
    progress = StopAfter(3)
    with pytest.raises(Cancelled):
        spec.execute(context, progress)


def test_run_cancelled_is_the_cores_cancelled():
    from scenarios.services import RunCancelled

    assert issubclass(RunCancelled, Cancelled) and not issubclass(Cancelled, ValueError)
