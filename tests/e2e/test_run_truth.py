"""Run pages that tell the truth, in a real browser on an embedded site: a job that does not fit
reads "Infeasible" with its reasons and the layout that would fit, never an MFU or a time to
train; a sweep shows its points (and "So far") while it computes, and a cancel stops it.
Screenshots at 1440 px go to var/screenshots/."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import E2E_DESIGN, base_env, embedded_site, manage, shot
from tests.e2e.test_result_pages import log_in

pytestmark = pytest.mark.e2e

#: A 65B-class model on the seeded 16-node H100 design at tp 8 pp 1: far more than 80 GiB a GPU.
SCENARIOS = f"""
from scenarios.services import scenario_create
from topology.models import Design
from django.contrib.auth import get_user_model
design = Design.objects.get(name={E2E_DESIGN!r})
user = get_user_model().objects.get(username="e2e")
model = {{"layers": 80, "hidden": 8192, "heads": 64, "vocab": 51200, "seq_len": 2048}}
job = {{"model": model, "global_batch": 256, "micro_batch": 1, "parallel": {{"tp": 8, "pp": 1, "dp": 16}},
        "precision": "bf16", "tokens": 1e12}}
scenario_create(design=design, name="Too big for HBM", job=job, user=user)
small = {{"layers": 24, "hidden": 2048, "heads": 16, "vocab": 51200, "seq_len": 2048}}
job = {{"model": small, "global_batch": 16384, "micro_batch": 1, "parallel": {{"tp": 8, "pp": 1, "dp": 16}},
        "precision": "bf16"}}
scenario_create(design=design, name="Wide sweep", job=job, user=user)
"""
HEADLINES = ("Step time", "MFU", "Time to train", "Tokens/s", "Model TFLOP/s per GPU")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("run-truth")
    with embedded_site(root) as live:
        manage(base_env(TWIN_VAR_DIR=str(root / "var")), "shell", "-c", SCENARIOS)
        yield live


@pytest.fixture
def wide(wide, site):
    log_in(wide, site.base_url)
    return wide


def open_scenario(page, name: str) -> None:
    page.click(f"text={E2E_DESIGN}")
    page.click(f"text={name}")
    page.wait_for_selector("button[data-run-kind=step]")


def summary_labels(page) -> list[str]:
    return page.eval_on_selector_all("[data-summary] dt", "(els) => els.map((el) => el.textContent)")


def test_run_of_a_job_that_does_not_fit_reads_infeasible(wide):
    open_scenario(wide, "Too big for HBM")
    wide.click("button[data-run-kind=step]")
    wide.wait_for_url(re.compile(r"/runs/\d+/$"))
    wide.wait_for_selector("#run-page[data-status=infeasible]", timeout=120_000)
    for moment in ("live", "reloaded"):
        assert wide.inner_text("[data-status].status") == "Infeasible", moment
        labels = summary_labels(wide)
        assert labels[:2] == ["Infeasible", "Would fit"], (moment, labels)
        assert not set(HEADLINES) & set(labels), (moment, labels)
        reason = wide.inner_text("[data-summary] dd[data-key=infeasible]")
        assert re.fullmatch(r"memory: [\d,]+ GiB per GPU needed, 80 GiB on h100-sxm\S*", reason), reason
        assert wide.inner_text("[data-summary] dd[data-key=would_fit]").startswith("tp")
        wide.wait_for_selector("#charts .chart[data-chart=memory] .main-svg", timeout=60_000)
        assert wide.locator("#charts .chart").count() == 1  # the memory, no step breakdown
        assert wide.get_attribute("#floor-plan", "data-metric") in (None, "rack_power")
        assert wide.input_value("[data-metric-select]") == "rack_power"  # not an empty run metric
        wide.reload()
        wide.wait_for_selector("#run-page[data-status=infeasible]")
    notice = wide.inner_text("[data-infeasible]")  # the page opened on a finished run
    assert "This job cannot run as asked" in notice and reason in notice
    assert wide.inner_text("[data-would-fit]").startswith("tp")
    shot(wide, "run-infeasible")
    wide.click("[data-apply-layout='0']")  # the layout that fits becomes a scenario, ready to run
    wide.wait_for_selector("button[data-run-kind=step]")
    assert "Saved the layout" in wide.inner_text("body")
    assert not wide.js_errors, wide.js_errors


def test_sweep_shows_its_points_while_it_computes_and_cancel_stops_it(wide):
    open_scenario(wide, "Wide sweep")
    form = wide.locator("form.run-form[data-kind=sweep]")
    # Clusters of 4,096 to 16,384 servers take seconds a point to generate and predict.
    form.locator("[name=sweep-nodes]").fill("2, 16, 4096, 8192, 16384")
    form.locator("button[type=submit]").click()
    wide.wait_for_url(re.compile(r"/runs/\d+/$"))
    wide.wait_for_selector("[data-points] tr[data-index='1']", timeout=120_000)
    assert wide.get_attribute("#run-page", "data-status") == "running"
    assert wide.is_visible("[data-partial-panel]")
    assert wide.inner_text("[data-partial] dd[data-key=points_done]") in ("2", "3")
    rows = wide.eval_on_selector_all("[data-points] tr", "(rows) => rows.map((r) => r.dataset.index)")
    assert rows[:2] == ["0", "1"], rows
    wide.reload()  # a page opened mid-run shows the points done so far, from the stored state
    wide.wait_for_selector("[data-points] tr[data-index='1']", timeout=10_000)
    shot(wide, "run-sweep-partial")
    wide.eval_on_selector("[data-cancel-form] button", "(button) => button.click()")
    wide.wait_for_selector("#run-page[data-status=cancelled]", timeout=30_000)
    assert wide.locator("[data-partial-panel]").is_hidden()
    assert not wide.js_errors, wide.js_errors
