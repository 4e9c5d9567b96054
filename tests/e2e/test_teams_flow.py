"""Teams and shared designs in a real browser, as a new team would use them: a team admin
invites a member; the member creates a design from a generator (watching the preview, then the
progress bar), edits a rack budget and sees the change in the history; a viewer cannot edit;
a user of another team gets 404. Every page this feature adds or changes is photographed at
1440 px into var/screenshots/ (git-ignored) for a person to look at.

The site runs embedded (``manage.py serve``: SQLite, in-process worker) with production
settings (DEBUG=0), so the 403/404 pages are the ones users see.
"""

from __future__ import annotations

import re
import secrets
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    E2E_DESIGN,
    E2E_PASSWORD,
    E2E_USER,
    PYTHON,
    LiveSite,
    Server,
    base_env,
    free_port,
    manage,
    seed,
    shot,
    wait_for_http,
)

pytestmark = pytest.mark.e2e

PASSWORD = "pw-team-flow-1"
NEW_DESIGN = "Maria 8k"
NEW_NODES = "1024"  # 8,192 GPUs: a save of a few seconds, so the progress bar is seen moving

PEOPLE = f"""
from django.contrib.auth import get_user_model
from teams.services import team_create
User = get_user_model()
for name in ("maria", "victor", "stranger"):
    User.objects.create_user(name, password={PASSWORD!r})
User.objects.create_user("demo", password="demo-twin-2026")
team_create(name="Other team", users=[User.objects.get(username="stranger")])
"""


@contextmanager
def team_site(tmp_path: Path):
    env = base_env(
        TWIN_VAR_DIR=str(tmp_path / "var"),
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        SECURE_SSL_REDIRECT="0",
        SECURE_HSTS_SECONDS="0",
        SECURE_COOKIES="0",
    )
    seed(env)
    manage(env, "shell", "-c", PEOPLE)
    port = free_port()
    server = Server("serve", [PYTHON, "manage.py", "serve", "--port", str(port)], env, tmp_path)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/login/", server)
        yield LiveSite(f"http://127.0.0.1:{port}", [server])
    finally:
        server.stop()


def log_in(page, base: str, username: str, password: str = PASSWORD) -> None:
    page.context.clear_cookies()
    page.goto(f"{base}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/designs/$"))


def invite(page, username: str, role: str) -> None:
    page.fill("#id_username", username)
    page.select_option("#id_role", role)
    page.click("[data-invite] button[type=submit]")
    page.wait_for_selector(f"[data-member={username}]")


def admin_invites(page, base: str) -> None:
    page.goto(f"{base}/login/")
    assert "How do I get an account?" in page.inner_text(".login")
    assert "demo-twin-2026" in page.inner_text("[data-demo-login]")  # embedded demo mode
    shot(page, "login")
    log_in(page, base, E2E_USER, E2E_PASSWORD)
    page.click("nav >> text=Teams")
    shot(page, "teams")
    page.click("[data-teams] a:text('E2E team')")
    invite(page, "maria", "editor")
    invite(page, "victor", "viewer")
    page.fill("#id_username", "nobody")
    page.click("[data-invite] button[type=submit]")
    assert "no account is called 'nobody'" in page.inner_text("[data-invite]")
    shot(page, "team-detail")


def member_creates_a_design(page, base: str) -> str:
    log_in(page, base, "maria")
    assert E2E_DESIGN in page.inner_text(".cards")  # the team's design
    shot(page, "design-list")
    page.click("[data-new-design]")
    page.wait_for_function("window.twinPreview && window.twinPreview.count >= 1")
    page.fill("#id_nodes", "0")
    page.wait_for_selector(".field[data-field=nodes] [data-preview-error]")
    assert "must be ≥ 1 (got 0)" in page.inner_text(".field[data-field=nodes]")
    page.fill("#id_nodes", NEW_NODES)
    page.wait_for_function("window.twinPreview && window.twinPreview.summary.gpus === 8192")
    preview = page.inner_text("#preview")
    assert "8,192" in preview and "bisection" in preview.lower() and "kW" in preview
    assert page.locator("#preview svg.floor-plan rect.rack").count() > 10
    page.fill("#id_name", NEW_DESIGN)
    shot(page, "design-new")
    page.click("[data-save-design]")
    page.wait_for_url(re.compile(r"/designs/builds/\d+/$"))
    page.wait_for_function("window.twinBuild.seen.some((p) => p > 0 && p < 100)", timeout=60_000)
    shot(page, "design-build")
    page.wait_for_url(re.compile(r"/designs/\d+/$"), timeout=120_000)
    page.wait_for_selector("#floor-plan[data-painted]")
    seen = page.evaluate("performance.getEntriesByType('navigation').length")  # the page loaded
    assert seen and NEW_DESIGN in page.inner_text("h1")
    shot(page, "design-detail")
    return page.url


def member_edits_a_rack_budget(page, design_url: str) -> None:
    page.goto(design_url + "racks/")
    shot(page, "design-racks")
    first = page.locator("table.racks tbody tr").first
    rack = first.get_attribute("data-rack")
    first.locator(f"a:text('{rack}')").click()
    page.wait_for_selector("[data-rack-edit]")
    shot(page, "rack-edit")
    budget = float(page.input_value("#id_power_budget_kw"))
    lowered = round(budget - 1, 1)
    page.fill("#id_power_budget_kw", str(lowered))
    page.click("[data-rack-edit] button[type=submit]")
    page.wait_for_url(re.compile(r"/racks/$"))
    assert f"Rack {rack} saved." in page.inner_text(".messages")
    page.click(".design-nav >> text=History")
    entry = page.locator(".change").first
    text = entry.inner_text()
    assert "maria" in text and f"rack {rack}" in text and "Power budget" in text
    assert entry.locator("del").inner_text() == f"{budget:g}"
    assert entry.locator("ins").inner_text() == f"{lowered:g}"
    assert "created from generator rail-optimized" in page.inner_text(".changes")
    shot(page, "design-history")
    for tab, name in (
        ("Power feeds", "design-feeds"),
        ("Rename / describe", "design-edit"),
        ("Fork", "design-fork"),
    ):
        page.click(f".design-nav >> text={tab}")
        shot(page, name)
    page.goto(design_url + "feeds/")
    page.locator("table.feeds tbody a:text('Edit')").first.click()
    page.wait_for_selector("[data-feed-edit]")
    shot(page, "feed-edit")


def concurrent_edit_is_refused(page, design_url: str) -> None:
    """Two tabs opened at one version: the second save is refused with who and when."""
    page.goto(design_url + "edit/")
    other = page.context.new_page()
    other.goto(design_url + "edit/")
    page.fill("#id_description", "first tab")
    page.click("[data-design-edit] button[type=submit]")
    page.wait_for_url(design_url)
    other.fill("#id_description", "second tab")
    other.click("[data-design-edit] button[type=submit]")
    other.wait_for_selector("[data-conflict]")
    message = other.inner_text("[data-conflict]")
    assert "was changed by maria at" in message and "nothing was saved" in message
    shot(other, "design-edit-conflict")
    other.close()


def viewer_cannot_edit(page, base: str, design_url: str) -> None:
    log_in(page, base, "victor")
    page.goto(design_url)
    page.wait_for_selector("#floor-plan[data-painted]")
    assert page.locator("[data-edit-design]").count() == 0 and page.locator("[data-read-only]").count() == 1
    page.goto(design_url + "racks/")
    assert page.locator("[data-add-like]").count() == 0
    response = page.goto(design_url + "edit/")
    assert response.status == 403 and "Your role does not allow this" in page.inner_text("main")
    shot(page, "forbidden")
    page.goto(f"{base}/designs/new/")  # a viewer in every team is told why, not shown a form
    text = page.inner_text("main")
    assert "You cannot create a design yet" in text and "E2E team: Viewer" in text
    assert page.locator("[data-save-design]").count() == 0
    shot(page, "design-new-viewer")


def stranger_gets_404(page, base: str, design_url: str) -> None:
    log_in(page, base, "stranger")
    assert NEW_DESIGN not in page.inner_text("main")
    for suffix in ("", "racks/", "history/", "edit/"):
        response = page.goto(design_url + suffix)
        assert response.status == 404, suffix
    assert "belongs to a team you are not in" in page.inner_text("main")
    shot(page, "not-found")


def admin_pages(page, base: str, design_url: str) -> None:
    """The remaining pages this feature adds or changes, photographed for review: a scenario and
    its run on the seeded design, the run's link from the history, the delete confirmations."""
    log_in(page, base, E2E_USER, E2E_PASSWORD)
    page.goto(f"{base}/teams/")
    page.fill("#id_name", "Second team")
    page.click("text=Start team")
    page.wait_for_selector("[data-invite]")  # the new team's page; the current team is unchanged
    assert "your current team is still “E2E team”" in page.inner_text("main")
    shot(page, "team-started-not-switched")
    page.click("[data-switch-team] button")
    page.wait_for_url(f"{base}/designs/")
    assert E2E_DESIGN not in page.inner_text("main")  # lists show the current team's objects
    shot(page, "design-list-second-team")
    page.select_option("#team-switch", label="E2E team")
    page.wait_for_selector(f"text={E2E_DESIGN}")
    page.click(f"text={E2E_DESIGN}")
    page.wait_for_selector("#floor-plan[data-painted]")
    seeded = page.url
    page.click("[data-new-scenario]")
    page.wait_for_selector("form.scenario-form")
    page.fill("#id_name", "Team baseline")
    page.click("text=Save scenario")
    page.wait_for_selector("button[data-run-kind=step]")
    page.click("button[data-run-kind=step]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run_url = page.url
    page.wait_for_selector("#run-page[data-status=succeeded]", timeout=120_000)
    page.goto(seeded)
    page.wait_for_selector("[data-design-runs] a:text('design v1')")
    shot(page, "design-detail-runs")
    page.click("[data-design-runs] a:text('design v1')")
    page.wait_for_selector("#history[data-runs-loaded]")
    runs = page.inner_text("#v1 [data-runs-of]")
    assert "Runs on this version" in runs and "Team baseline" in runs
    shot(page, "design-history-runs")
    page.click("#v1 [data-runs-of] a")
    assert page.url == run_url
    page.goto(f"{base}/compare/")
    assert "Team baseline" in page.inner_text("#compare-page")
    shot(page, "compare")
    page.goto(f"{base}/scenarios/")
    shot(page, "scenario-list")
    page.click("text=Team baseline")
    page.wait_for_selector("[data-delete-scenario]")
    shot(page, "scenario-detail")
    page.click("a[aria-label^='delete run']")
    shot(page, "run-delete")
    page.click("[data-confirm-delete]")
    page.wait_for_selector("[data-delete-scenario]")
    assert "was deleted" in page.inner_text(".messages")
    page.click("[data-delete-scenario]")
    shot(page, "scenario-delete")
    page.goto(design_url + "delete/")
    shot(page, "design-delete")
    page.goto(design_url + "racks/")
    page.locator("table.racks a.danger-link").first.click()
    shot(page, "rack-remove")
    page.goto(f"{base}/scenarios/designs/import/")
    shot(page, "design-import")


def test_team_flow(wide, tmp_path):
    with team_site(tmp_path) as site:
        try:
            admin_invites(wide, site.base_url)
            design_url = member_creates_a_design(wide, site.base_url)
            member_edits_a_rack_budget(wide, design_url)
            concurrent_edit_is_refused(wide, design_url)
            viewer_cannot_edit(wide, site.base_url, design_url)
            stranger_gets_404(wide, site.base_url, design_url)
            admin_pages(wide, site.base_url, design_url)
            assert not wide.js_errors, wide.js_errors
        except Exception as exc:
            raise AssertionError(
                f"{exc}\n\npage: {wide.url}\njs errors: {wide.js_errors}\n{site.logs()}"
            ) from exc
