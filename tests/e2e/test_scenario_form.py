"""The scenario form in a real browser, as a newcomer meets it: the basics first and the rest
folded; choosing Llama 3 405B proposes a layout that fits the design's H100s (instead of tp 8
pp 1 at 922 GiB per GPU); an unsaved edit turns the run buttons into "Save and run", and the
run that starts is of the edited scenario; a viewer sees the settings read-only, with no run,
save or duplicate, and why. The new, edit, dirty and viewer forms are photographed at 1440 px
into var/screenshots/ (git-ignored) for a person to look at.

The site runs embedded (``manage.py serve``: SQLite, in-process worker).
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import (
    E2E_DESIGN,
    E2E_PASSWORD,
    E2E_USER,
    embedded_site,
    shot,
)

pytestmark = pytest.mark.e2e

VIEWER_PASSWORD = "pw-viewer-flow-1"
RUN_TIMEOUT_MS = 180_000

VIEWER = f"""
from django.contrib.auth import get_user_model
from teams.models import Team, TeamMembership
vera = get_user_model().objects.create_user("vera", password={VIEWER_PASSWORD!r})
TeamMembership.objects.create(team=Team.objects.get(name="E2E team"), user=vera, role="viewer")
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with embedded_site(tmp_path_factory.mktemp("scenario-form"), setup=VIEWER) as live:
        yield live


def log_in(page, base: str, username: str, password: str) -> None:
    page.context.clear_cookies()
    page.goto(f"{base}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/designs/$"))


def layout(page) -> dict[str, str]:
    return {name: page.input_value(f"#id_{name}") for name in ("tp", "pp", "dp", "cp", "micro_batch", "zero")}


def test_scenario_form_preset_layout_save_and_run_and_viewer(wide, site):
    try:
        _flow(wide, site.base_url)
    except Exception as exc:
        raise AssertionError(f"{exc}\n\npage: {wide.url}\n{site.logs()}") from exc


def _flow(page, base: str) -> None:
    log_in(page, base, E2E_USER, E2E_PASSWORD)
    proposed = new_form_proposes_a_layout(page)
    scenario_url = save_and_run_runs_the_edit(page, base, proposed)
    stale_page_is_refused(page, scenario_url)
    viewer_sees_why(page, base, scenario_url, proposed)


def new_form_proposes_a_layout(page) -> dict[str, str]:
    """The basics first, the rest folded; Llama 3 405B proposes a layout that fits; saved."""
    page.click(f"text={E2E_DESIGN}")
    page.click("[data-new-scenario]")
    page.wait_for_selector("form.scenario-form")
    folded = page.eval_on_selector_all(
        "details.form-group", "(all) => all.map((d) => [d.dataset.group, d.open])"
    )
    assert folded == [
        ["Mixture of experts", False],
        ["Advanced step options", False],
        ["Failures", False],
        ["Power", False],
    ], folded
    assert page.is_visible("#id_tp") and page.is_visible("#id_what_if_nodes")
    assert not page.is_visible("#id_trials") and not page.is_visible("#id_window_s")
    assert page.locator("[data-field=tp] .help").inner_text().strip()
    shot(page, "scenario-form-new")

    before = layout(page)
    assert (before["tp"], before["pp"]) == ("8", "1")
    # The DeepSeek-style MoE preset fills the folded MoE part (it opens) and gets a fitting layout.
    page.select_option("#id_preset", "deepseek-v3-style")
    page.wait_for_selector("[data-layout-proposal].ok", timeout=30_000)
    assert page.eval_on_selector("details[data-group='Mixture of experts']", "(d) => d.open")
    assert page.input_value("#id_experts") == "256" and int(page.input_value("#id_ep")) > 1
    page.select_option("#id_preset", "llama3-405b")
    page.wait_for_selector("[data-layout-proposal].ok", timeout=30_000)
    note = page.inner_text("[data-layout-proposal]")
    found = re.search(r"Layout proposed to fit: ([\d.]+) GiB per GPU of 80 \(h100-sxm, 128 GPUs", note)
    assert found and float(found.group(1)) <= 80, note
    proposed = layout(page)
    assert proposed != before and (proposed["tp"], proposed["pp"]) != ("8", "1"), proposed
    degrees = [int(proposed[k]) for k in ("tp", "pp", "dp", "cp")]
    assert degrees[0] * degrees[1] * degrees[2] * degrees[3] == 128  # the design's 16 × 8 GPUs
    shot(page, "scenario-form-proposed")
    return proposed


def save_and_run_runs_the_edit(page, base: str, proposed: dict[str, str]) -> str:
    """Saved with the proposal; an unsaved edit turns the run buttons into "Save and run", and
    the run is of the edited scenario. The scenario page's URL."""
    page.fill("#id_name", "Llama 3 405B fits")
    page.click("text=Save scenario")
    page.wait_for_selector("button[data-run-kind=step]")
    assert page.locator(".errorlist").count() == 0, page.inner_text("#edit")
    scenario_url = page.url
    assert layout(page) == proposed
    assert page.inner_text("button[data-run-kind=step]") == "Step time"
    assert page.is_hidden("[data-dirty-note]") and page.is_visible("[data-propose-layout]")
    shot(page, "scenario-form-edit")

    page.fill("#id_micro_batch", "0")  # refused: nothing saved, nothing run, the edit kept
    page.click("button[data-run-kind=step]")
    page.wait_for_selector("[data-field=micro_batch].has-error")
    assert page.input_value("#id_micro_batch") == "0"
    assert page.inner_text("button[data-run-kind=step]").startswith("Save and run")
    page.fill("#id_micro_batch", proposed["micro_batch"])
    page.fill("#id_tokens", "2e12")
    assert page.inner_text("button[data-run-kind=step]").startswith("Save and run")
    assert page.is_visible("[data-dirty-note]")
    shot(page, "scenario-form-dirty")
    page.click("button[data-run-kind=step]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run_url = page.url
    page.wait_for_selector("#run-page[data-status=succeeded]", timeout=RUN_TIMEOUT_MS)
    page.goto(scenario_url)
    assert float(page.input_value("#id_tokens")) == 2e12  # saved, then run
    assert page.locator(f"a[href='{run_url.removeprefix(base)}']").count() == 1
    tokens = page.evaluate(
        """async (id) => (await (await fetch(`/api/scenarios/${id}/`)).json()).job.tokens""",
        scenario_url.rstrip("/").rsplit("/", 1)[1],
    )
    assert tokens == 2e12
    assert not page.js_errors, page.js_errors
    return scenario_url


def stale_page_is_refused(page, scenario_url: str) -> None:
    """Two tabs on one scenario: after a save in one, the other's run is refused, nothing runs."""
    other = page.context.new_page()
    other.goto(scenario_url)
    page.goto(scenario_url)
    page.fill("#id_name", "Llama 3 405B, renamed")
    page.click("text=Save changes")
    page.wait_for_selector(".messages")
    runs = page.locator("aside table.list tbody tr").count()
    other.click("button[data-run-kind=step]")
    other.wait_for_selector("[data-run-errors]")
    assert "the scenario changed since this page loaded; reload" in other.inner_text("[data-run-errors]")
    assert other.locator("aside table.list tbody tr").count() == runs
    shot(other, "scenario-stale-refused")
    other.close()


def viewer_sees_why(page, base: str, scenario_url: str, proposed: dict[str, str]) -> None:
    """A viewer sees the settings, read-only, and why nothing is offered."""
    log_in(page, base, "vera", VIEWER_PASSWORD)
    page.goto(scenario_url)
    note = page.inner_text("[data-role-note]")
    assert "You are a viewer in team E2E team; an editor can run this" in note
    assert page.locator("button[data-run-kind]").count() == 0
    assert page.locator("[data-save], [data-duplicate], [data-delete-scenario]").count() == 0
    assert page.is_disabled("#id_tp") and page.input_value("#id_tp") == proposed["tp"]
    assert page.is_hidden("[data-propose-layout]")
    shot(page, "scenario-form-viewer")
    assert not page.js_errors, page.js_errors
