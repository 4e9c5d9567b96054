"""The result pages as a cluster architect reads them, in a real browser: the run, layout-search,
sweep and compare pages at 1024, 1440 and 1920 px. Every Plotly chart fills its grid cell on
first load (no window resize), the step-time breakdown shows every component, and the compare
page keeps its result rows under "only rows that differ". The pages are photographed at
1440 px into var/screenshots/ (git-ignored) for a person to look at.

One embedded site (``manage.py serve``: SQLite, in-process worker) serves the whole module; its
runs are started through the pages, as a user would.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import E2E_DESIGN, E2E_PASSWORD, E2E_USER, SHOTS, embedded_site, shot

pytestmark = pytest.mark.e2e

WIDTHS = (1024, 1440, 1920)
RUN_TIMEOUT_MS = 180_000
#: How far a chart's drawn width may be from its cell's (borders, rounding).
FILL_TOLERANCE_PX = 4
#: A what-if cluster twice the seeded design's 16 servers: another hall than the design's.
HALL_NODES = 32
NO_DATA = "#c9ced8"  # floorplan.js: racks without a value
MAX_TILE_PX = 64  # floorplan.js: the largest rack tile


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with embedded_site(tmp_path_factory.mktemp("result-pages")) as live:
        yield live


@pytest.fixture(scope="module")
def runs(browser, site):
    """Run URLs started through the pages: {"step", "what_if", "search", "sweep"}."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        log_in(page, site.base_url)
        page.click(f"text={E2E_DESIGN}")
        page.wait_for_selector("#floor-plan[data-painted]")
        page.click("[data-new-scenario]")
        page.wait_for_selector("form.scenario-form")
        page.fill("#id_name", "Architect baseline")
        page.click("text=Save scenario")
        page.wait_for_selector("button[data-run-kind=step]")
        scenario_url = page.url
        out = {"scenario": scenario_url, "step": start_run(page, scenario_url, "step")}
        out["search"] = start_run(page, scenario_url, "search")
        out["sweep"] = start_run(page, scenario_url, "sweep", nodes="4, 8, 16")
        page.goto(scenario_url)
        page.click("[data-duplicate]")
        page.wait_for_selector("button[data-run-kind=step]")
        page.click("details[data-group='Advanced step options'] > summary")  # folded by default
        page.fill("#id_straggler_spread", "0.05")
        page.click("text=Save changes")
        page.wait_for_selector("button[data-run-kind=step]")
        out["what_if"] = start_run(page, page.url, "step")
        page.goto(scenario_url)
        page.click("[data-duplicate]")
        page.wait_for_selector("button[data-run-kind=step]")
        page.fill("#id_what_if_nodes", str(HALL_NODES))
        page.fill("#id_dp", str(HALL_NODES))  # tp 8 × dp = every GPU of the bigger cluster
        page.click("text=Save changes")
        page.wait_for_selector("button[data-run-kind=step]")
        assert page.locator(".errorlist").count() == 0, page.inner_text("#edit")
        out["hall"] = start_run(page, page.url, "step")
        yield out
    except Exception as exc:
        raise AssertionError(f"{exc}\n\npage: {page.url}\n{site.logs()}") from exc
    finally:
        context.close()


def log_in(page, base: str) -> None:
    page.goto(f"{base}/login/")
    page.fill("#id_username", E2E_USER)
    page.fill("#id_password", E2E_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/designs/$"))


def start_run(page, scenario_url: str, kind: str, **options: str) -> str:
    """Start a run of ``kind`` from the scenario page and wait for it to succeed; its URL."""
    page.goto(scenario_url)
    form = page.locator(f"form.run-form[data-kind={kind}]")
    for name, value in options.items():
        form.locator(f"[name={kind}-{name}]").fill(value)
    form.locator("button[type=submit]").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.wait_for_selector("#run-page[data-status=succeeded]", timeout=RUN_TIMEOUT_MS)
    return page.url


@pytest.fixture(params=WIDTHS, ids=lambda w: f"{w}px")
def sized(request, browser, site):
    context = browser.new_context(viewport={"width": request.param, "height": 1000})
    page = context.new_page()
    page.js_errors = []
    page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))
    log_in(page, site.base_url)
    page.width, page.base = request.param, site.base_url
    yield page
    context.close()


def chart_fill(page) -> list[dict]:
    """Per chart: its id, the cell's inner width and the width Plotly drew."""
    return page.evaluate(
        """() => Array.from(document.querySelectorAll('#charts .chart'), (el) => {
          const svg = el.querySelector('.main-svg');
          return {id: el.dataset.chart, cell: el.clientWidth,
                  drawn: svg ? svg.getBoundingClientRect().width : 0};
        })"""
    )


def chart_overlaps(page) -> list[dict]:
    """Per chart, the pairs of its legend, title and axis titles whose boxes overlap, a title or
    tick labels that run outside the chart's box on any side, and x tick labels that collide."""
    return page.evaluate(
        """() => {
          const box = (el) => el && el.getBoundingClientRect();
          const hit = (a, b) => a && b && a.width && b.width && a.left < b.right && b.left < a.right
            && a.top < b.bottom && b.top < a.bottom;
          return Array.from(document.querySelectorAll('#charts .chart'), (el) => {
            const parts = {legend: box(el.querySelector('.legend .bg')),
                           title: box(el.querySelector('.gtitle')),
                           xtitle: box(el.querySelector('.g-xtitle text')),
                           ytitle: box(el.querySelector('.g-ytitle text'))};
            const pairs = [['legend', 'xtitle'], ['legend', 'ytitle'], ['legend', 'title']];
            const cell = box(el);
            // a title or a tick label running past the chart's own box is clipped by the page
            const outside = (b) => b && b.width && (b.right > cell.right + 1 || b.bottom > cell.bottom + 1
              || b.left < cell.left - 1 || b.top < cell.top - 1);
            const ticks = Array.from(el.querySelectorAll('.xtick text, .ytick text'));
            const stray = ticks.find((t) => outside(box(t)));
            // neighbouring x tick labels that run into one another are unreadable
            const xticks = Array.from(el.querySelectorAll('.xtick text'), box)
              .filter((b) => b.width).sort((a, b) => a.left - b.left);
            const crowded = xticks.some((b, i) => i && hit(xticks[i - 1], b));
            return {id: el.dataset.chart,
                    overlaps: [...pairs.filter(([a, b]) => hit(parts[a], parts[b])).map((p) => p.join('/')),
                               ...(outside(parts.title) ? ['title/outside'] : []),
                               ...(stray ? [`ticks/outside: ${stray.textContent}`] : []),
                               ...(crowded ? ['xticks/crowded'] : [])]};
          }).filter((c) => c.overlaps.length);
        }"""
    )


def assert_charts_fill(page, expected: int) -> None:
    page.wait_for_selector("#charts[data-rendered]", timeout=60_000)
    page.wait_for_timeout(300)  # any resize the observer triggers is drawn by now
    charts = chart_fill(page)
    assert len(charts) >= expected, charts
    for chart in charts:
        assert chart["cell"] > 300, chart
        assert abs(chart["drawn"] - chart["cell"]) <= FILL_TOLERANCE_PX, f"{page.width} px: {chart}"
    # Axis titles and the chart title clear the legend on every chart (it sat on the x title).
    assert chart_overlaps(page) == [], f"{page.width} px: {chart_overlaps(page)}"


def test_run_page_charts_fill_their_cells(sized, runs):
    sized.goto(runs["step"])
    assert_charts_fill(sized, 3)
    # Every component of the step-time breakdown is drawn as a visible bar segment.
    segments = sized.evaluate(
        """() => Array.from(document.querySelectorAll('[data-chart=breakdown] .trace.bars'), (trace) => {
          const path = trace.querySelector('.point path');
          return path ? path.getBoundingClientRect().width : 0;
        })"""
    )
    legend = sized.locator("[data-chart=breakdown] .legend .traces").count()
    assert segments and len(segments) == legend, (segments, legend)
    assert all(width > 0 for width in segments), segments
    assert not sized.js_errors, sized.js_errors
    if sized.width == 1440:
        shot(sized, "run-step")


def test_search_and_sweep_charts_fill_their_cells(sized, runs):
    for kind in ("search", "sweep"):
        sized.goto(runs[kind])
        assert_charts_fill(sized, 1)
        if sized.width == 1440:
            shot(sized, f"run-{kind}")
    assert not sized.js_errors, sized.js_errors


def test_search_recommends_a_layout_to_apply(wide, runs):
    """The search's table lists distinct layouts (variants folded) with why each wins, and
    "Apply this layout" saves it as a what-if scenario ready to run."""
    wide.goto(runs["search"])
    table = wide.locator("[data-search-results]")
    rows = table.locator("tbody tr")
    assert rows.count() >= 2
    times = [rows.nth(i).get_attribute("data-step-time") for i in range(rows.count())]
    assert len(set(times)) == len(times), times  # one row per distinct prediction
    assert " s " in rows.first.locator("td").nth(6).inner_text()  # why it wins: seconds saved
    label = rows.first.locator("td").nth(1).locator("b").inner_text()
    rows.first.locator("[data-apply-layout]").click()
    wide.wait_for_selector("button[data-run-kind=step]")
    assert label in wide.inner_text("h1") and "Saved the layout" in wide.inner_text(".messages")
    shot(wide, "search-applied")
    assert not wide.js_errors, wide.js_errors


def test_compare_page_charts_fill_their_cells(sized, runs):
    ids = [re.search(r"/runs/(\d+)/", runs[k]).group(1) for k in ("step", "what_if")]
    sized.goto(f"{sized.base}/compare/?runs={','.join(ids)}")
    assert_charts_fill(sized, 2)
    assert not sized.js_errors, sized.js_errors
    if sized.width == 1440:
        shot(sized, "compare")


@pytest.fixture
def wide(wide, site):
    log_in(wide, site.base_url)
    return wide


def visible_rows(page) -> list[str]:
    return page.evaluate(
        """() => Array.from(document.querySelectorAll('[data-compare] tbody tr'))
          .filter((tr) => tr.offsetParent !== null).map((tr) => tr.querySelector('th').textContent)"""
    )


def test_compare_page_compares(wide, runs):
    """From the run page's "compare…" link (its run ticked) to a table that shows only the rows
    that differ until asked for all (results always stay), in words, against a baseline the
    user picks."""
    step_id, what_if_id = (re.search(r"/runs/(\d+)/", runs[k]).group(1) for k in ("step", "what_if"))
    wide.goto(runs["what_if"])
    wide.click("text=compare…")
    wide.wait_for_selector("[data-pick-runs]")
    assert wide.is_checked(f"#pick-{what_if_id}") and not wide.is_checked(f"#pick-{step_id}")
    shot(wide, "compare-pick")
    wide.check(f"#pick-{step_id}")
    wide.click("[data-pick-runs] button[type=submit]")
    wide.wait_for_selector("[data-compare]")
    header = wide.inner_text("[data-compare] thead")
    assert f"#{what_if_id}" in header and "baseline" in header
    # Only the rows that differ by default (the settings of two runs are some hundred rows).
    assert wide.is_checked("[data-only-diff]")
    kept = visible_rows(wide)
    wide.uncheck("[data-only-diff]")
    everything = visible_rows(wide)
    table = wide.inner_text("[data-compare]")
    assert "Straggler spread" in table and "FFN hidden size" in table and "1.0 T" in table
    assert "job." not in table and "what_if." not in table
    wide.check("[data-only-diff]")
    assert {"Step time", "MFU", "Tokens/s", "Memory per GPU", "Straggler spread"} <= set(kept), kept
    assert "FFN hidden size" not in kept and len(kept) < len(everything)
    # Columns: the what-if (ticked first), then the plain run. The straggler what-if is slower.
    step_row = wide.locator("[data-compare] tr.result", has_text="Step time").first
    plain = step_row.locator("td").nth(1)
    assert plain.get_attribute("data-verdict") == "better"
    assert re.fullmatch(r"-\d+(\.\d+)? %", plain.locator(".delta").inner_text()), plain.inner_text()
    wide.click(f"[data-make-baseline='{step_id}']")
    wide.wait_for_selector(f"th.baseline[data-run='{step_id}']")
    what_if = step_row.locator("td").nth(0)
    assert what_if.get_attribute("data-verdict") == "worse"
    assert re.fullmatch(r"\+\d+(\.\d+)? %", what_if.locator(".delta").inner_text()), what_if.inner_text()
    assert not step_row.locator("td").nth(1).get_attribute("data-verdict")
    assert not wide.js_errors, wide.js_errors
    shot(wide, "compare-baseline")


FLOOR_STATE = r"""() => {
  const fp = window.twinFloorPlan, ctx = fp.canvas.getContext("2d");
  const dpr = fp.canvas.width / fp.canvas.clientWidth;
  const at = (x, y) =>
    Array.from(ctx.getImageData(Math.floor(x * dpr), Math.floor(y * dpr), 1, 1).data.slice(0, 3));
  const rgb = (css) => css.startsWith("#")
    ? [1, 3, 5].map((k) => parseInt(css.slice(k, k + 2), 16))
    : css.match(/\d+/g).slice(0, 3).map(Number);
  const racks = Array.from(fp.racks, (r, i) => {
    const border = at(fp.rackX[i] + 1, fp.rackY[i] + fp.tile / 2);
    const fill = rgb(fp.colorOf(i));
    return {kind: fp.rackKind[i], color: fp.colorOf(i), border,
            inked: border.reduce((s, v, k) => s + Math.abs(v - fill[k]), 0) > 40};
  });
  return {racks, canvas: fp.canvas.clientWidth, canvasHeight: fp.canvas.clientHeight,
          panel: fp.root.clientWidth, tile: fp.tile};
}"""


def test_floor_plan_draws_the_what_if_hall_with_rack_kinds(wide, runs):
    """A what-if with twice the servers draws the hall it builds, coloured by the run; the plan
    fills its panel; network racks are hatched under every metric and never say "GPU type -1";
    a network rack's links are grouped, not a panel thousands of pixels tall."""
    wide.goto(runs["step"])
    wide.wait_for_selector("#floor-plan[data-painted]")
    design = wide.evaluate(FLOOR_STATE)
    wide.goto(runs["hall"])
    wide.wait_for_selector("#floor-plan[data-painted][data-what-if]")
    hall = wide.evaluate(FLOOR_STATE)
    assert len(hall["racks"]) > len(design["racks"]), (len(hall["racks"]), len(design["racks"]))
    assert not wide.locator("[data-not-aligned]").is_hidden()
    compute = [r for r in hall["racks"] if r["kind"] == 0]
    assert any(r["color"] != NO_DATA for r in compute), "the what-if hall is grey"
    shot(wide, "run-what-if-hall")
    for plan in (design, hall):
        # Bounded by the panel's width, the screen's height or the largest tile (a tiny hall),
        # not a third of the panel.
        filled = plan["canvas"] >= 0.8 * plan["panel"] or plan["canvasHeight"] >= 0.8 * (900 - 160)
        assert filled or plan["tile"] == MAX_TILE_PX, plan
    for metric in ("rack_power", "gpu_type", "link_util"):
        wide.goto(runs["step"] + f"?metric={metric}")
        wide.wait_for_selector("#floor-plan[data-painted]")
        racks = wide.evaluate(FLOOR_STATE)["racks"]
        network = [r for r in racks if r["kind"] == 1]
        # Network racks carry a dark border over their colour; compute racks are plain fills.
        assert network and all(r["inked"] for r in network), (metric, network)
        assert not any(r["inked"] for r in racks if r["kind"] == 0), (metric, racks)
        assert "network rack" in wide.inner_text(".fp-legend")
    index = next(i for i, r in enumerate(racks) if r["kind"] == 1)
    box = wide.locator("#floor-plan canvas").bounding_box()
    tile = wide.evaluate("window.twinFloorPlan.tile")
    x0, y0 = wide.evaluate(f"[window.twinFloorPlan.rackX[{index}], window.twinFloorPlan.rackY[{index}]]")
    wide.goto(runs["step"] + "?metric=gpu_type")
    wide.wait_for_selector("#floor-plan[data-painted]")
    wide.mouse.move(box["x"] + x0 + tile / 2, box["y"] + y0 + tile / 2)
    wide.wait_for_selector(".fp-card:not([hidden])")
    card = wide.inner_text(".fp-card")
    assert "network rack" in card and "-1" not in card, card
    wide.mouse.click(box["x"] + x0 + tile / 2, box["y"] + y0 + tile / 2)
    wide.wait_for_selector("#rack-panel:not([hidden]) [data-link-tiers]")
    height = wide.evaluate("document.getElementById('rack-panel').getBoundingClientRect().height")
    assert height < 2000, height
    shot(wide, "rack-panel-network")
    assert not wide.js_errors, wide.js_errors


def test_cancel_reads_cancelled_live_and_after_a_reload(wide, runs):
    """The badge and the stage say "Cancelled"/"cancelled" once the cancel lands, stay so when
    the worker's last progress arrives late, and read the same after a reload."""
    wide.goto(runs["scenario"])
    wide.click("[data-duplicate]")
    wide.wait_for_selector("button[data-run-kind=step]")
    # 1e6 straggler steps: a run of several seconds, time to cancel it (as test_live_flow).
    wide.click("details[data-group='Advanced step options'] > summary")  # folded by default
    wide.fill("#id_straggler_spread", "0.05")
    wide.fill("#id_what_if_steps", "1000000")
    wide.click("text=Save changes")
    wide.wait_for_selector("button[data-run-kind=step]")
    wide.click("button[data-run-kind=step]")
    wide.wait_for_url(re.compile(r"/runs/\d+/$"))
    wide.wait_for_function("window.twinLive && window.twinLive.stats.opened >= 1", timeout=30_000)
    assert wide.get_attribute("#run-page", "data-status") in ("queued", "running")
    # A script click: the live progress text must not make the pointer miss a moving button.
    wide.eval_on_selector("[data-cancel-form] button", "(button) => button.click()")
    wide.wait_for_selector("#run-page[data-status=cancelled]", timeout=30_000)
    wide.wait_for_timeout(1500)  # any progress the worker sent before it noticed
    live = (wide.inner_text("[data-status].status"), wide.inner_text("[data-stage]"))
    assert live == ("Cancelled", "cancelled"), live
    assert wide.locator("[data-cancel-form]").is_hidden()
    wide.reload()
    wide.wait_for_selector("#run-page[data-status=cancelled]")
    assert (wide.inner_text("[data-status].status"), wide.inner_text("[data-stage]")) == live
    shot(wide, "run-cancelled")
    assert not wide.js_errors, wide.js_errors


def test_new_scenario_starts_from_a_model_preset(wide, site):
    """Picking "Llama 3 70B" fills the model inputs (they stay editable) and names the source;
    large numbers read with their prefix; the saved scenario keeps the preset and the override."""
    wide.click(f"text={E2E_DESIGN}")
    wide.click("[data-new-scenario]")
    wide.wait_for_selector("form.scenario-form")
    assert "≈ 1.0 T" in wide.inner_text("[data-number-hint=tokens]")
    wide.select_option("#id_preset", "llama3-70b")
    model = ("layers", "hidden", "kv_heads", "ffn_hidden")
    filled = {name: wide.input_value(f"#id_{name}") for name in model}
    assert filled == {"layers": "80", "hidden": "8192", "kv_heads": "8", "ffn_hidden": "28672"}
    assert "Llama 3 Herd of Models" in wide.inner_text("[data-preset-source]")
    wide.fill("#id_seq_len", "4096")
    wide.fill("#id_name", "Llama 3 70B on the slice")
    shot(wide, "scenario-new")
    wide.click("text=Save scenario")
    wide.wait_for_selector("button[data-run-kind=step]")
    saved = {name: wide.input_value(f"#id_{name}") for name in ("preset", "layers", "seq_len")}
    assert saved == {"preset": "llama3-70b", "layers": "80", "seq_len": "4096"}
    assert not wide.js_errors, wide.js_errors


#: The replay panel the page shows (the failures or the power kind's).
REPLAY = "section.replay:not([hidden])"


def _replay_state(page) -> dict:
    return page.evaluate(
        """(panel) => {
          const slider = document.querySelector(`${panel} [data-replay]`);
          const select = document.querySelector("[data-metric-select]");
          return {metric: window.twinFloorPlan.current.name, max: Number(slider.max),
                  value: Number(slider.value),
                  time: document.querySelector(`${panel} [data-replay-time]`).textContent,
                  options: Array.from(select.options, (o) => o.value)};
        }""",
        REPLAY,
    )


def _move_replay(page, fraction: float) -> None:
    page.evaluate(
        """([panel, fraction]) => {
          const slider = document.querySelector(`${panel} [data-replay]`);
          slider.value = String(Math.round(Number(slider.max) * fraction));
          slider.dispatchEvent(new Event("input"));
        }""",
        [REPLAY, fraction],
    )


def _play_and_pause(page) -> None:
    play = page.locator(f"{REPLAY} [data-play]")
    start = _replay_state(page)["value"]
    play.click()
    assert play.inner_text() == "Pause"
    page.wait_for_function(
        """([panel, start]) => Number(document.querySelector(`${panel} [data-replay]`).value) !== start""",
        arg=[REPLAY, start],
    )
    play.click()
    assert play.inner_text() == "Play"


def test_failures_and_power_runs_replay_on_the_floor_plan(wide, runs):
    """The failures run replays its representative trial and the power run the racks' draw over the
    job's life (from that failures run), both on the one replay slider: frame 0 drawn as a metric
    of the select, the slider redraws the frame it is moved to, Play runs until Pause; their
    charts fill their cells."""
    wide.width = 1440
    start_run(wide, runs["scenario"], "failures")
    wide.wait_for_selector("[data-failures-panel]:not([hidden]) [data-events] tr", timeout=60_000)
    state = _replay_state(wide)
    assert state["metric"] == "failure_replay" and "failure_replay" in state["options"], state
    assert state["max"] == 1000 and state["time"] == "day 0.00", state
    _move_replay(wide, 0.5)
    assert _replay_state(wide)["time"] != "day 0.00"
    assert "spares" in wide.inner_text("[data-replay-spares]")
    _play_and_pause(wide)
    assert_charts_fill(wide, 4)
    # The event table fits its panel at 1440 px: nothing clipped, no sideways scrolling.
    fit = wide.evaluate(
        """() => { const box = document.querySelector('[data-failures-panel] .scroll-list');
                   const table = box.querySelector('table');
                   return {box: box.clientWidth, scroll: box.scrollWidth,
                           table: table.getBoundingClientRect().width,
                           panel: document.querySelector('[data-failures-panel]').clientWidth}; }"""
    )
    assert fit["scroll"] <= fit["box"] and fit["table"] <= fit["panel"], fit
    shot(wide, "run-failures")
    start_run(wide, runs["scenario"], "power")
    # Watched live to the end, the stage says so (not the last step it reported).
    assert wide.inner_text("[data-stage]") == "done"
    wide.wait_for_selector("[data-power-panel]:not([hidden])", timeout=60_000)
    assert "failures run #" in wide.inner_text("[data-power-about]")
    state = _replay_state(wide)
    assert state["metric"] == "power_rack" and "power_replay" in state["options"], state
    assert state["max"] > 0 and state["time"] == "hour 0.0", state
    # Play replays the racks' power on the floor plan without picking a metric first.
    _play_and_pause(wide)
    assert wide.evaluate("window.twinFloorPlan.current.name") == "power_replay"
    assert "Replay: rack power" in wide.inner_text("#floor-plan .fp-legend")
    wide.select_option("[data-metric-select]", "power_rack")
    _move_replay(wide, 1.0)  # and so does the slider
    assert _replay_state(wide)["metric"] == "power_replay"
    assert _replay_state(wide)["time"] != "hour 0.0"
    assert not wide.locator("[data-feeds-panel]").is_hidden()
    assert_charts_fill(wide, 3)
    # The job-life chart is an envelope: a band (min to max per bin) and a mean line, a few
    # hundred points each, not a block of every sample.
    traces = wide.evaluate(
        """() => document.querySelector('[data-chart="job-timeline"]')._fullData.map(
             (t) => ({name: t.name, fill: t.fill === 'none' ? '' : t.fill, points: t._length}))"""
    )
    assert [t["fill"] for t in traces] == ["", "tonexty", ""], traces
    assert traces[2]["name"] == "mean" and all(0 < t["points"] <= 400 for t in traces), traces
    wide.locator('[data-chart="job-timeline"]').scroll_into_view_if_needed()
    wide.locator('[data-chart="job-timeline"]').screenshot(path=str(SHOTS / "run-power-job-life.png"))
    shot(wide, "run-power")
    assert not wide.js_errors, wide.js_errors
