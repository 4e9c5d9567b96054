"""A run keeps its inputs, in a real browser at 1440 px: the run page's "ran with" panel (scenario
as it ran, design version, catalog digest, the scenario file as run), its "Re-run as it ran"
button giving the identical step time, and the compare page, opened from a failures run's
"compare…" link, showing the spare-servers difference of two failures runs with the run it came
from as baseline. Screenshots go to var/screenshots/ (git-ignored) for a person to look at.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import E2E_DESIGN, embedded_site, shot
from tests.e2e.test_result_pages import RUN_TIMEOUT_MS, log_in, start_run

pytestmark = pytest.mark.e2e

#: A quick failure study: few trials (the default 1,000 is for real answers).
TRIALS = "40"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with embedded_site(tmp_path_factory.mktemp("provenance-pages")) as live:
        yield live


@pytest.fixture
def wide(wide, site):
    log_in(wide, site.base_url)
    wide.base = site.base_url
    return wide


def fill(page, selector: str, value: str) -> None:
    """Fill an input of the scenario form, unfolding the section it sits in if it is folded."""
    page.evaluate(
        """(sel) => { let el = document.querySelector(sel);
          for (; el; el = el.parentElement) if (el.tagName === "DETAILS") el.open = true; }""",
        selector,
    )
    page.fill(selector, value)


def new_scenario(page, name: str) -> str:
    """Save a scenario on the seeded design through the pages; its URL."""
    page.goto(f"{page.base}/designs/")
    page.click(f"text={E2E_DESIGN}")
    page.wait_for_selector("#floor-plan[data-painted]")
    page.click("[data-new-scenario]")
    page.wait_for_selector("form.scenario-form")
    page.fill("#id_name", name)
    fill(page, "#id_trials", TRIALS)
    page.click("text=Save scenario")
    page.wait_for_selector("button[data-run-kind=step]")
    return page.url


def figure(page, label: str) -> str:
    return (
        page.locator("[data-summary] dt", has_text=label)
        .first.locator("xpath=following-sibling::dd[1]")
        .inner_text()
    )


def test_run_page_says_what_it_ran_with_and_reruns_it_as_it_ran(wide):
    scenario_url = new_scenario(wide, "Provenance baseline")
    run_url = start_run(wide, scenario_url, "step")
    panel = wide.locator("[data-provenance]")
    text = panel.inner_text()
    assert "Ran with" in text and "Provenance baseline" in text, text
    assert re.search(r"design v\d+", text) and re.search(r"catalog [0-9a-f]{12}…", text), text
    assert wide.locator("[data-unchanged]").is_visible()
    href = wide.get_attribute("[data-ran-yaml]", "href")
    yaml_text = wide.evaluate("(url) => fetch(url).then((r) => r.text())", href)
    assert "name: Provenance baseline" in yaml_text and "cluster:" in yaml_text, yaml_text
    step_time = figure(wide, "Step time")
    wide.wait_for_selector("#charts[data-rendered]", timeout=60_000)
    shot(wide, "provenance-run-page")
    wide.click("[data-rerun]")
    wide.wait_for_url(lambda url: url != run_url and re.search(r"/runs/\d+/$", url) is not None)
    wide.wait_for_selector("#run-page[data-status=succeeded]", timeout=RUN_TIMEOUT_MS)
    first_id = re.search(r"/runs/(\d+)/", run_url).group(1)
    again = wide.inner_text("[data-provenance]")
    assert f"re-run as it ran of #{first_id}" in again, again
    assert figure(wide, "Step time") == step_time
    shot(wide, "provenance-rerun-page")
    # Renaming the scenario and changing its batch afterwards: the first run's page is unchanged
    # but says what changed since, setting by setting.
    wide.goto(scenario_url)
    fill(wide, "#edit #id_name", "Provenance renamed")
    fill(wide, "#edit #id_global_batch", "128")
    wide.click("text=Save changes")
    wide.wait_for_selector("button[data-run-kind=step]")
    assert wide.locator(".errorlist").count() == 0, wide.inner_text("#edit")
    wide.goto(run_url)
    assert wide.inner_text("h1").startswith("Provenance baseline · Step time")
    assert figure(wide, "Step time") == step_time
    changed = wide.locator("[data-changed=scenario]")
    changed.locator("summary").click()
    diff = wide.inner_text("[data-scenario-diff]")
    assert "Global batch" in diff and "128" in diff and "Provenance renamed" in diff, diff
    assert wide.locator("[data-changed=design]").count() == 0
    assert not wide.js_errors, wide.js_errors
    shot(wide, "provenance-changed-since")


def test_compare_shows_a_failures_difference_against_the_run_it_came_from(wide):
    plain_url = new_scenario(wide, "Failures default spares")
    plain = start_run(wide, plain_url, "failures")
    wide.goto(plain_url)
    wide.click("[data-duplicate]")
    wide.wait_for_selector("button[data-run-kind=step]")
    fill(wide, "#id_spare_servers", "1")
    wide.click("text=Save changes")
    wide.wait_for_selector("button[data-run-kind=step]")
    assert wide.locator(".errorlist").count() == 0, wide.inner_text("#edit")
    spares = start_run(wide, wide.url, "failures")
    plain_id, spares_id = (re.search(r"/runs/(\d+)/", u).group(1) for u in (plain, spares))
    wide.click("text=compare…")
    wide.wait_for_selector("[data-pick-runs]")
    wide.check(f"#pick-{plain_id}")
    wide.click("[data-pick-runs] button[type=submit]")
    wide.wait_for_selector("[data-compare]")
    assert wide.get_attribute("th.baseline", "data-run") == spares_id  # the run it came from
    wide.check("[data-only-diff]")
    row = wide.locator("[data-compare] tr.setting.differs", has_text="Spare servers")
    assert row.count() == 1, wide.inner_text("[data-compare]")
    cells = [row.locator("td").nth(i).inner_text() for i in range(2)]
    assert cells[0] == "1" and cells[1] not in ("1", "—"), cells
    assert not wide.js_errors, wide.js_errors
    shot(wide, "provenance-compare-failures")
