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
