"""The daily flow in a real browser: log in, open a design (floor plan, hover, rack panel), create a
scenario, start a run, watch the progress bar move and racks change color from live WebSocket
messages, then see the result charts -- in embedded mode and in Redis mode."""

from __future__ import annotations

import os
import re

import pytest

from tests.e2e.conftest import (
    E2E_DESIGN,
    E2E_PASSWORD,
    E2E_USER,
    embedded_site,
    redis_site,
    skip_or_fail,
)

pytestmark = pytest.mark.e2e

NO_DATA = "#c9ced8"  # floorplan.js: racks without a value
# A what-if that keeps the worker busy for a few seconds (1e6 straggler steps), so the page is
# connected while the run is live on any machine.
SLOW_STEPS = "1000000"
RUN_TIMEOUT_MS = 120_000


def _rack_pixels(page) -> list[list[int]]:
    """RGB at the center of every rack on the canvas."""
    return page.evaluate(
        """() => {
          const fp = window.twinFloorPlan, ctx = fp.canvas.getContext("2d");
          const dpr = fp.canvas.width / fp.canvas.clientWidth;
          return Array.from(fp.rackX, (left, i) => {
            const x = Math.floor((left + fp.tile / 2) * dpr);
            const y = Math.floor((fp.rackY[i] + fp.tile / 2) * dpr);
            return Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3));
          });
        }"""
    )


def _open_design(page, base_url: str) -> None:
    page.goto(f"{base_url}/login/")
    page.fill("#id_username", E2E_USER)
    page.fill("#id_password", E2E_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/designs/$"))
    page.click(f"text={E2E_DESIGN}")
    page.wait_for_selector("#floor-plan[data-painted]")
    assert page.locator("[data-metric-select] option").count() >= 3
    legend = page.inner_text(".fp-legend")
    assert "Rack IT power" in legend and "no data" in legend
    # The design's live stream, on the socket path the page renders (data-live-url).
    page.wait_for_function("window.twinLive && window.twinLive.stats.opened >= 1", timeout=30_000)
    design = page.get_attribute("#floor-plan", "data-design")
    assert page.evaluate("window.twinLive.url").endswith(f"/ws/designs/{design}/")


def _hover_and_open_rack(page) -> None:
    box = page.locator("#floor-plan canvas").bounding_box()
    tile = page.evaluate("window.twinFloorPlan.tile")
    left, top = page.evaluate("[window.twinFloorPlan.rackX[0], window.twinFloorPlan.rackY[0]]")
    x, y = box["x"] + left + tile / 2, box["y"] + top + tile / 2
    page.mouse.move(x, y)
    page.wait_for_selector(".fp-card:not([hidden])")
    assert "%" in page.inner_text(".fp-card")
    page.mouse.click(x, y)
    page.wait_for_selector("#rack-panel:not([hidden]) .elevation .device")
    assert "Power feeds" in page.inner_text("#rack-panel")


def _create_scenario_and_run(page) -> None:
    page.click("[data-new-scenario]")
    page.wait_for_selector("form.scenario-form")
    page.fill("#id_name", "E2E what-if")
    page.click("details[data-group='Advanced step options'] > summary")  # folded by default
    page.fill("#id_straggler_spread", "0.05")
    page.fill("#id_what_if_steps", SLOW_STEPS)
    page.click("text=Save scenario")
    page.wait_for_selector("button[data-run-kind=step]")
    page.click("button[data-run-kind=step]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))


def _watch_run(page) -> None:
    """The progress bar moves and racks change color through live messages, then charts appear."""
    # The socket opens first; the consumer's stored-state message follows it over the wire.
    page.wait_for_function(
        "window.twinLive && window.twinLive.stats.opened >= 1 && window.twinLive.stats.last.state",
        timeout=30_000,
    )
    first_state = page.evaluate("window.twinLive.stats.last.state.run")
    assert first_state and first_state["status"] in ("queued", "running"), (
        f"the run finished before the page connected; the flow saw no live update: {first_state}"
    )
    progress_before = int(page.get_attribute(".progress", "aria-valuenow"))
    pixels_before = _rack_pixels(page)
    colors_before = page.evaluate(
        "Array.from(window.twinFloorPlan.racks, (_, i) => window.twinFloorPlan.colorOf(i))"
    )
    assert NO_DATA in colors_before  # link utilization not computed yet

    page.wait_for_selector("#run-page[data-status=succeeded]", timeout=RUN_TIMEOUT_MS)
    stats = page.evaluate("window.twinLive.stats")
    assert stats["byType"].get("partial", 0) >= 1, stats["byType"]
    assert stats["byType"].get("status", 0) + stats["byType"].get("progress", 0) >= 1, stats["byType"]
    assert int(page.get_attribute(".progress", "aria-valuenow")) == 100 > progress_before
    colors_after = page.evaluate(
        "Array.from(window.twinFloorPlan.racks, (_, i) => window.twinFloorPlan.colorOf(i))"
    )
    changed = [i for i, (a, b) in enumerate(zip(colors_before, colors_after, strict=True)) if a != b]
    assert changed, "no rack changed color"
    pixels_after = _rack_pixels(page)
    assert any(pixels_before[i] != pixels_after[i] for i in changed), "the canvas was not repainted"
    assert page.locator("[data-summary] [data-key=step_time_s]").count() == 1

    page.wait_for_selector("#charts[data-rendered]", timeout=60_000)
    assert page.locator("#charts .chart .main-svg").count() >= 2
    titles = page.inner_text("#charts")
    assert "Step-time breakdown" in titles and "Memory per GPU" in titles


def _flow(page, site) -> None:
    try:
        _open_design(page, site.base_url)
        _hover_and_open_rack(page)
        _create_scenario_and_run(page)
        _watch_run(page)
        assert not page.js_errors, page.js_errors
    except Exception as exc:
        raise AssertionError(
            f"{exc}\n\npage: {page.url}\njs errors: {page.js_errors}\n{site.logs()}"
        ) from exc


def test_live_flow_embedded_mode(page, tmp_path):
    with embedded_site(tmp_path) as site:
        _flow(page, site)


def test_live_flow_redis_mode(page, tmp_path):
    database_url, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not database_url.startswith("postgres") or not redis_url:
        skip_or_fail("the Redis-mode browser test needs DATABASE_URL (PostgreSQL) and REDIS_URL")
    with redis_site(tmp_path, database_url, redis_url) as site:
        _flow(page, site)
