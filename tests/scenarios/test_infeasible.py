"""A job that does not fit is not a success: its run ends ``infeasible`` with the reasons, no
headline figures anywhere, and the layout the search finds that would fit."""

from __future__ import annotations

import re

import pytest

from scenarios import services
from scenarios.choices import FINAL_STATUSES, RunStatus
from scenarios.models import Run
from scenarios.selectors import run_headline, run_state

#: A 65B-class model: tp 8 alone leaves ~8 B parameters and their optimizer state per GPU.
HUGE_MODEL = {"layers": 80, "hidden": 8192, "heads": 64, "vocab": 51200, "seq_len": 2048}
HEADLINE_KEYS = ("step_time_s", "mfu", "tokens_per_s", "time_to_train_days", "model_tflops_per_gpu")


@pytest.fixture
def huge(design, user, job):
    from scenarios.services import scenario_create

    job = {**job, "model": HUGE_MODEL, "tokens": 1e12}
    return scenario_create(design=design, name="too big", job=job, what_if={}, user=user)


def _infeasible_run(scenario, user) -> Run:
    run = Run.objects.create(scenario=scenario, kind="step", created_by=user)
    assert services.run_execute(run_id=run.pk) == "infeasible"
    run.refresh_from_db()
    return run


def test_step_run_of_a_job_that_does_not_fit_is_infeasible_with_reasons(huge, user):
    run = _infeasible_run(huge, user)
    assert run.status == RunStatus.INFEASIBLE and RunStatus.INFEASIBLE in FINAL_STATUSES
    assert not run.is_active and run.progress == 1.0
    (reason,) = run.summary["infeasible"]
    assert re.fullmatch(r"memory: [\d,]+ GiB per GPU needed, 80 GiB on h100-sxm\S*", reason), reason
    assert not any(key in run.summary for key in HEADLINE_KEYS)
    would = run.summary["would_fit"]
    assert would["memory_gib_per_gpu"] <= 80 and would["tp"] * would["pp"] * would["dp"] * would["cp"] == 32


def test_infeasible_run_shows_reasons_not_headline_figures(huge, user, client):
    run = _infeasible_run(huge, user)
    state = run_state(run=run)
    labels = [f["label"] for f in state["figures"]]
    assert labels[:2] == ["Infeasible", "Would fit"]
    assert not {"Step time", "MFU", "Time to train", "Tokens/s"} & set(labels)
    assert not any(key in state["summary"] for key in HEADLINE_KEYS)
    assert run_headline(run).startswith("memory: ")
    assert "would fit" not in run_headline(run).lower()
    client.force_login(user)
    api = client.get(f"/api/runs/{run.pk}/").json()
    assert api["status"] == "infeasible" and not any(key in api["summary"] for key in HEADLINE_KEYS)
    assert api["summary"]["infeasible"] == run.summary["infeasible"]
    page = client.get(run.get_absolute_url()).content.decode()
    assert "Infeasible" in page and "MFU" not in page


def test_feasible_step_run_still_succeeds(scenario, user):
    run = Run.objects.create(scenario=scenario, kind="step", created_by=user)
    assert services.run_execute(run_id=run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.summary["feasible"] is True and run.summary["infeasible"] == []
    assert next(f["label"] for f in run_state(run=run)["figures"]) == "Step time"


def test_sweep_point_that_does_not_fit_is_marked_and_never_counted(huge):
    from scenarios.models import Scenario
    from tests.scenarios.test_kinds import NullProgress, running_context

    # ZeRO-3 shards the model state over dp: one node (dp 1) does not fit, four (dp 4) do.
    Scenario.objects.filter(pk=huge.pk).update(job={**huge.job, "zero": 3})
    huge.refresh_from_db()
    spec, context = running_context(huge, "sweep", {"nodes": [1, 4]})
    output = spec.execute(context, NullProgress())
    one, four = output.summary["points"]
    assert one["infeasible"][0].startswith("memory: ") and "step_time_s" not in one
    assert "mfu" not in one and "tokens_per_s" not in one
    assert not four.get("infeasible") and four["step_time_s"] > 0
    assert output.summary["infeasible_points"] == 1 and output.summary["failed_points"] == 0
    assert output.summary["best_time_to_train_gpus"] == four["gpus"] and four["efficiency"] == 1.0
    assert not output.infeasible


def test_sweep_where_no_point_fits_is_infeasible(huge):
    from tests.scenarios.test_kinds import NullProgress, running_context

    spec, context = running_context(huge, "sweep", {"nodes": [1, 2]})
    output = spec.execute(context, NullProgress())
    assert [r.split(":")[0] for r in output.infeasible] == ["1 nodes", "2 nodes"]
    assert "memory: " in output.infeasible[0]


def test_search_where_no_layout_fits_is_infeasible(design, user):
    from scenarios.services import scenario_create
    from tests.scenarios.test_kinds import NullProgress, running_context

    model = {"layers": 128, "hidden": 20480, "heads": 160, "vocab": 51200, "seq_len": 4096}
    job = {"model": model, "global_batch": 64, "micro_batch": 1, "parallel": {"tp": 8, "pp": 1, "dp": 4}}
    scenario = scenario_create(design=design, name="far too big", job=job, what_if={}, user=user)
    spec, context = running_context(scenario, "search", {})
    output = spec.execute(context, NullProgress())
    (reason,) = output.infeasible
    assert reason.startswith("no layout fits: of ") and "does not fit in GPU memory" in reason
    assert output.summary["best"] == []


@pytest.mark.parametrize("kind", ["failures", "power"])
def test_failures_and_power_of_a_job_that_does_not_fit_are_infeasible(huge, user, kind):
    run = Run.objects.create(
        scenario=huge, kind=kind, created_by=user, options={"chunks": 2} if kind == "failures" else {}
    )
    assert services.run_execute(run_id=run.pk) == "infeasible"
    run.refresh_from_db()
    assert run.status == RunStatus.INFEASIBLE and run.summary["infeasible"][0].startswith("memory: ")
    assert not run.chunks.exists()  # nothing was split off to compute


def test_compare_shows_no_headline_figure_for_an_infeasible_run(huge, scenario, user):
    from scenarios.selectors import compare_rows

    ok = Run.objects.create(scenario=scenario, kind="step", created_by=user)
    services.run_execute(run_id=ok.pk)
    ok.refresh_from_db()
    bad = _infeasible_run(huge, user)
    rows = {row.label: [cell.text for cell in row.cells] for row in compare_rows([ok, bad]) if row.result}
    for label in ("Step time", "MFU", "Time to train", "Tokens/s"):
        if label in rows:
            assert rows[label][1] == "—", (label, rows[label])
    assert rows["MFU"][0] != "—"


def test_infeasible_run_page_offers_the_layout_that_fits_and_applies_it(huge, user, client):
    from scenarios.models import Scenario

    run = _infeasible_run(huge, user)
    client.force_login(user)
    page = client.get(run.get_absolute_url()).content.decode()
    assert "This job cannot run as asked" in page and run.summary["infeasible"][0] in page
    assert "data-apply-layout" in page
    response = client.post(f"/runs/{run.pk}/apply-layout/", {"layout": "0"})
    applied = Scenario.objects.exclude(pk=huge.pk).get()
    assert response.status_code == 302 and response.url == applied.get_absolute_url()
    would = run.summary["would_fit"]
    assert applied.job["parallel"]["tp"] == would["tp"] and applied.job["parallel"]["pp"] == would["pp"]
    again = Run.objects.create(scenario=applied, kind="step", created_by=user)
    assert services.run_execute(run_id=again.pk) == "succeeded"
