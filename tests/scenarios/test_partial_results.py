"""Partial results while a run computes: each finished sweep point, searched slice or block of
trials is folded into the run's stored partial result (what a page opened mid-run reads) and
published, worded, on the run's stream."""

from __future__ import annotations

import pytest

from scenarios import broadcast, services
from scenarios.models import Run
from scenarios.selectors import run_state
from tests.scenarios.test_kinds import running_context


@pytest.fixture
def published(monkeypatch):
    messages = []

    def capture(run, *, metric, values, summary=None, force=False, figures=None):
        stored = Run.objects.get(pk=run.pk).summary.get("partial")
        messages.append({"summary": summary, "figures": figures, "stored": stored})

    monkeypatch.setattr(broadcast, "publish_partial", capture)
    return messages


def test_sweep_points_are_stored_and_published_as_they_finish(scenario, published):
    spec, context = running_context(scenario, "sweep", {"nodes": [1, 2, 4], "chunk_size": 3})
    chunk = spec.split(context)[0]
    spec.compute_chunk(context, chunk, services.RunProgress(context.run))
    assert [m["summary"]["point"]["nodes"] for m in published] == [1, 2, 4]
    # Mid-run (after the first point) the stored partial held that point alone.
    assert [p["nodes"] for p in published[0]["stored"]["points"]] == [1]
    assert published[0]["figures"][0] == {"key": "points_done", "label": "Points done so far", "text": "1"}
    state = run_state(run=Run.objects.get(pk=context.run.pk))
    assert [p["nodes"] for p in state["partial"]["points"]] == [1, 2, 4]
    assert state["partial_figures"][0]["text"] == "3"


def test_search_publishes_its_best_layout_so_far(scenario, published):
    spec, context = running_context(scenario, "search", {"chunks": 3})
    chunks = spec.split(context)
    progress = services.RunProgress(context.run)
    results = [spec.compute_chunk(context, chunk, progress) for chunk in chunks[:2]]
    stored = Run.objects.get(pk=context.run.pk).summary["partial"]
    best_two = min((r["best"][0] for r in results if r["best"]), key=lambda row: row["step_time_s"])
    assert stored["best"] == [best_two]
    assert stored["searched"] == sum(r["candidates"] for r in results)
    labels = [f["label"] for f in published[-1]["figures"]]
    assert labels == ["Best layout so far", "Layouts searched so far"]


def test_failure_blocks_publish_trials_and_ettr_so_far(scenario, user, published):
    services.scenario_update(
        scenario=scenario, user=user, failures={"trials": 600, "window_days": 20, "seed": 3}
    )
    spec, context = running_context(scenario, "failures", {"chunks": 3})
    chunks = spec.split(context)
    spec.compute_chunk(context, chunks[0], services.RunProgress(context.run))
    stored = Run.objects.get(pk=context.run.pk).summary["partial"]
    assert 0 < stored["trials"] < 600 and 0 < stored["etr"] <= 1
    assert [f["label"] for f in published[-1]["figures"]][:2] == ["Trials so far", "ETTR so far"]


def test_the_finished_summary_replaces_the_partial_result(scenario, user):
    options = {"nodes": [1, 2], "batch": "fixed", "tokens": 1e12, "chunk_size": 2}
    run = Run.objects.create(scenario=scenario, kind="sweep", options=options, created_by=user)
    assert services.run_execute(run_id=run.pk) == "succeeded"
    run.refresh_from_db()
    assert "partial" not in run.summary and run_state(run=run)["partial"] == {}


def test_a_cancelled_run_keeps_no_partial_result(scenario, user, published):
    spec, context = running_context(scenario, "sweep", {"nodes": [1, 2], "chunk_size": 2})
    progress = services.RunProgress(context.run)
    spec.compute_chunk(context, {"points": [[0, 1]]}, progress)
    assert Run.objects.get(pk=context.run.pk).summary["partial"]["points"]
    run = services.run_cancel(run=Run.objects.get(pk=context.run.pk), user=user)
    assert run.summary == {} and run_state(run=run)["partial"] == {}
