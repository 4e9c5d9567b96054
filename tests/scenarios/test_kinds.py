"""Run kinds: chunked sweeps and searches merge exactly to the unsplit computation."""

from __future__ import annotations

import json

import pytest

from scenarios import services
from scenarios.choices import RunStatus
from scenarios.kinds import RunContext, run_kind
from scenarios.models import Run


class NullProgress:
    def __call__(self, fraction, stage=""):
        pass

    def check_cancelled(self):
        pass

    def poll(self, fraction=0.0, stage=""):
        pass

    def item_done(self, items_total, stage, partial=None):
        pass


def running_context(scenario, kind, options):
    from scenarios.services import scenario_check

    core = scenario_check(
        design=scenario.design, name=scenario.name, job=scenario.job, what_if=scenario.what_if
    )
    spec = run_kind(kind)
    run = Run.objects.create(
        scenario=scenario, kind=kind, options=spec.clean_options(core, options), status=RunStatus.RUNNING
    )
    return spec, RunContext.load(run)


def through_json(value):
    """What a chunk result looks like after Celery's JSON serializer."""
    return json.loads(json.dumps(value))


def test_sweep_split_in_chunks_equals_the_unsplit_sweep(scenario):
    spec, context = running_context(scenario, "sweep", {"nodes": [1, 2, 3, 4], "chunk_size": 1})
    chunks = spec.split(context)
    assert len(chunks) == 4
    results = [through_json(spec.compute_chunk(context, chunk, NullProgress())) for chunk in reversed(chunks)]
    chunked = spec.merge(context, results).summary
    unsplit = spec.execute(context, NullProgress()).summary
    assert chunked == unsplit
    points = unsplit["points"]
    assert [p["nodes"] for p in points] == [1, 2, 3, 4]
    assert "job.global_batch: must be a multiple" in points[2]["error"]  # dp 3 misses the batch rule
    assert unsplit["failed_points"] == 1 and points[0]["efficiency"] == 1.0


def test_sweep_points_larger_than_the_design_get_their_own_fabric(scenario):
    spec, context = running_context(scenario, "sweep", {"nodes": [4, 512], "batch": "scaled"})
    points = spec.execute(context, NullProgress()).summary["points"]
    assert [p["error"] for p in points] == ["", ""]
    assert points[1]["gpus"] == 4096


def test_sweep_whose_points_all_failed_fails_with_their_errors(scenario):
    from scenarios.sim.format.errors import ScenarioError

    spec, context = running_context(scenario, "sweep", {"nodes": [3, 5]})  # dp 3 and 5 miss the batch
    with pytest.raises(
        ScenarioError, match=r"every sweep point failed: 3 nodes: job.global_batch.*; 5 nodes"
    ):
        spec.execute(context, NullProgress())


def test_sweep_says_still_scaling_unless_the_knee_is_inside_the_range(scenario):
    from scenarios.kinds.sweep import knee_inside, still_scaling

    spec, context = running_context(scenario, "sweep", {"nodes": [1, 2, 4], "chunk_size": 3})
    summary = spec.execute(context, NullProgress()).summary
    assert (knee_inside(summary), still_scaling(summary)) in ((None, 32), (8, None), (16, None))
    texts = {f["label"]: f["text"] for f in spec.summary_figures(summary)}
    assert ("Adding GPUs stops paying at" in texts) != ("Still scaling at the largest size tried" in texts)
    stopped = {**summary, "knee_gpus": 8}
    assert knee_inside(stopped) == 8 and still_scaling(stopped) is None
    layout = spec.charts(Run(kind="sweep", summary=stopped))[0]["figure"]["layout"]
    assert layout["title"]["text"] == "Scaling: adding GPUs stops paying at 8"
    assert layout["xaxis"]["tickvals"] == [8, 16, 32] and layout["xaxis"]["ticktext"] == ["8", "16", "32"]
    assert (
        spec.charts(Run(kind="sweep", summary={**summary, "knee_gpus": 32}))[0]["figure"]["layout"]["title"][
            "text"
        ]
        == "Scaling: still scaling at the largest size tried"
    )


def test_sweep_default_nodes_double_up_to_the_design(scenario):
    _spec, context = running_context(scenario, "sweep", {})
    assert context.options["nodes"] == [1, 2, 4]
    assert context.options["batch"] == "fixed"


def test_sweep_scaled_batch_keeps_microbatches(scenario):
    spec, context = running_context(scenario, "sweep", {"nodes": [1, 4], "batch": "scaled"})
    points = spec.execute(context, NullProgress()).summary["points"]
    assert [p["global_batch"] for p in points] == [16, 64]


def test_search_split_in_chunks_equals_the_core_search(scenario):
    from scenarios.sim.search import search_layouts

    spec, context = running_context(scenario, "search", {"top": 8, "chunks": 5})
    chunks = spec.split(context)
    assert len(chunks) == 5 and chunks[0]["start"] == 0
    results = [through_json(spec.compute_chunk(context, chunk, NullProgress())) for chunk in chunks]
    merged = spec.merge(context, results).summary
    core = search_layouts(
        context.scenario, catalog=context.catalog, fabric=context.fabric(), top_k=8
    ).to_dict()
    assert merged["candidates"] == core["candidates"] and merged["valid"] == core["valid"]
    assert merged["rejected"] == core["rejected"]

    assert merged["best"] == core["best"]  # same rows, same order, ties included
    assert merged == spec.execute(context, NullProgress()).summary


def test_step_run_with_a_cluster_changing_what_if_builds_that_cluster(scenario, user):
    services.scenario_update(scenario=scenario, user=user, what_if={"nic_gbps": 200.0})
    run = Run.objects.create(scenario=scenario, kind="step")
    assert services.run_execute(run_id=run.pk) == "succeeded"
    run.refresh_from_db()
    base = Run.objects.create(scenario=scenario, kind="step")
    services.scenario_update(scenario=scenario, user=user, what_if={})
    services.run_execute(run_id=base.pk)
    base.refresh_from_db()
    assert run.summary["racks_aligned"] is True
    assert run.summary["step_time_s"] >= base.summary["step_time_s"]


def test_unknown_kind_is_a_validation_error():
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="must be one of step, sweep, search, failures, power"):
        run_kind("thermal")


def test_search_of_a_job_on_part_of_the_cluster_splits_over_the_jobs_gpus(scenario, user):
    """A 2-node job on the 4-node design: every candidate uses 16 GPUs, chunked = unsplit."""
    job = {**scenario.job, "nodes": 2, "parallel": {"tp": 8, "pp": 1, "dp": 2}, "global_batch": 32}
    services.scenario_update(scenario=scenario, user=user, job=job)
    spec, context = running_context(scenario, "search", {"chunks": 3, "top": 5})
    results = [through_json(spec.compute_chunk(context, c, NullProgress())) for c in spec.split(context)]
    chunked = spec.merge(context, results).summary
    assert chunked == spec.execute(context, NullProgress()).summary
    assert chunked["best"] and all(r["tp"] * r["pp"] * r["dp"] * r["cp"] == 16 for r in chunked["best"])


def test_search_table_folds_identical_predictions_and_explains_the_winner(scenario):
    from scenarios.kinds.search import distinct_layouts

    spec, context = running_context(scenario, "search", {"top": 30})
    summary = spec.execute(context, NullProgress()).summary
    own = summary["own"]
    assert own["tp"] == scenario.job["parallel"]["tp"] and own["step_time_s"] > 0
    best = summary["best"]
    rows = distinct_layouts(best, own)
    times = [r["step_time_s"] for r in rows]
    assert times == sorted(times) and len(set(times)) == len(times)  # one row per prediction
    folded = sum(1 + len(r["variants"]) for r in rows)
    assert folded == len(best) or len(rows) == 10
    assert any(r["variants"] for r in rows) or len({b["step_time_s"] for b in best}) == len(best)
    top = rows[0]
    assert top["step_time_s"] <= own["step_time_s"] and top["vs_own"] <= 0
    assert top["why"] == "" or " s " in top["why"]
    page = spec.results_context(Run(kind="search", summary=summary))
    assert page["layouts"][0]["texts"]["step_time"].endswith(" s") and page["own_label"].startswith("tp")


def test_power_summary_says_whether_the_ramp_limit_was_met():
    """A storage too small for the grid's ramp limit is said on the run page, with what it needs."""
    from scenarios.kinds import run_kind

    spec = run_kind("power")
    short = {
        "storage": {
            "used_j_per_gpu": 65.0,
            "configured_j_per_gpu": 65.0,
            "needed_j_per_gpu": 2067.4,
            "short_racks": 12,
            "ramp_limit_met": False,
        }
    }
    texts = {f["label"]: f["text"] for f in spec.summary_figures(short)}
    assert texts["Grid ramp limit"] == "not met: 65 J per GPU, 2,067 J needed (12 racks short)"
    assert texts["Rack storage used per GPU"] == "65 J"
    met = {"storage": {**short["storage"], "ramp_limit_met": True}}
    assert {f["label"]: f["text"] for f in spec.summary_figures(met)}["Grid ramp limit"] == "met"
    no_limit = {"storage": {**short["storage"], "ramp_limit_met": None}}
    assert "Grid ramp limit" not in {f["label"] for f in spec.summary_figures(no_limit)}
    assert "Grid ramp limit" not in {f["label"] for f in spec.summary_figures({"storage": None})}


def test_power_summary_says_whether_the_utility_requirement_is_met():
    from scenarios.kinds import run_kind

    grid = {
        "ramp_limit_mw_per_min": 5.0,
        "minute_swing_mw": 12.0,
        "minute_swing_over": "job's life",
        "ramp_ok": False,
        "band_share_max": 0.2,
        "band_share": 0.04,
        "band_ok": True,
    }
    texts = {f["label"]: f["text"] for f in run_kind("power").summary_figures({"grid": grid})}
    assert texts["Utility ramp limit"] == "not met: 12.00 MW within a minute (job's life), limit 5.00 MW/min"
    assert texts["Utility band cap"] == "met: 4 % of the variance in the band, cap 20 %"
    no_limit = {"grid": {**grid, "ramp_ok": None}}
    assert "Utility ramp limit" not in {f["label"] for f in run_kind("power").summary_figures(no_limit)}
