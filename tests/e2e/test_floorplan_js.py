"""The floor-plan renderer (static/js/floorplan.js) in Chromium, without a server: banded layout of
a long hall, hover hit-testing, color buckets, "no data", partial repaints, categorical legend."""

from __future__ import annotations

import functools
import http.server
import itertools
import threading

import pytest

from tests.e2e.conftest import ROOT

pytestmark = pytest.mark.e2e

HARNESS = b"""<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="/css/twin.css"><link rel="stylesheet" href="/css/live.css"></head>
<body style="width: 1000px"><div class="fp" id="fp"><div class="fp-legend"></div><canvas></canvas>
<div class="fp-card" hidden></div></div>
<script type="module">
import * as floorplan from "/js/floorplan.js";
window.floorplan = floorplan;
window.ready = true;
</script></body></html>"""


@pytest.fixture(scope="module")
def harness_url():
    static = ROOT / "static"

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/":
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(HARNESS)
                return
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(static))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture
def harness(page, harness_url):
    page.goto(harness_url)
    page.wait_for_function("window.ready === true")
    return page


MAKE_PLAN = """({rows, columns, every}) => {
  const racks = [];
  for (let row = 0; row < rows; row += 2)
    for (let col = 0; col < columns; col += every)
      racks.push({id: racks.length + 1, name: `R${row}-${col}`, row, col, kind: 0});
  const n = racks.length;
  const plan = {rows, columns, racks, metrics: {
    load: {label: "Load", unit: "fraction of budget", kind: "design", scale: [0, 1],
           values: racks.map((_, i) => (i % 11) / 10)},
    gpu: {label: "GPU type", unit: "", kind: "design", scale: "categorical", categories: ["h100-sxm", "b200"],
          values: racks.map((_, i) => (i % 3) - 1)},
  }};
  window.fp = new floorplan.FloorPlan(document.getElementById("fp"), plan, {metric: "load"});
  return n;
}"""


def test_floorplan_long_hall_is_banded_and_hover_finds_every_rack(harness):
    n = harness.evaluate(MAKE_PLAN, {"rows": 529, "columns": 17, "every": 1})
    layout = harness.evaluate("({bands: fp.bands, tile: fp.tile, width: fp.canvas.clientWidth})")
    assert layout["bands"] > 1 and layout["tile"] >= 5 and layout["width"] <= 1000
    # The hit test is the inverse of the placement for every rack (centre of its tile).
    misses = harness.evaluate(
        """() => {
          const rect = fp.canvas.getBoundingClientRect(), bad = [];
          for (let i = 0; i < fp.racks.length; i += 1) {
            const half = fp.tile / 2;
            const event = {clientX: rect.left + fp.rackX[i] + half, clientY: rect.top + fp.rackY[i] + half};
            if (fp.rackAt(event) !== i) bad.push(i);
          }
          const aisle = {clientX: rect.left + fp.rackX[0] + 1, clientY: rect.top + fp.rackY[0] + fp.tile + 1};
          return {bad: bad.length, aisle: fp.rackAt(aisle)};
        }"""
    )
    assert misses == {"bad": 0, "aisle": -1}
    assert n == 265 * 17


def test_floorplan_colors_by_value_and_marks_missing_values(harness):
    harness.evaluate(MAKE_PLAN, {"rows": 6, "columns": 8, "every": 1})
    colors = harness.evaluate("fp.racks.map((_, i) => fp.colorOf(i))")
    assert colors[0] == "rgb(44,123,182)" and colors[10] == "rgb(215,25,28)"  # ramp ends: 0 and 1
    harness.evaluate("fp.setValues('load', fp.racks.map((_, i) => (i === 3 ? null : 0.5)))")
    after = harness.evaluate("fp.racks.map((_, i) => fp.colorOf(i))")
    assert after[3] == "#c9ced8" and after[0] == after[5] != colors[0]
    legend = harness.inner_text(".fp-legend")
    assert "Load (% of budget)" in legend and "no data" in legend and "≥ 100 %" in legend


def test_floorplan_live_update_repaints_only_changed_racks(harness):
    harness.evaluate(MAKE_PLAN, {"rows": 40, "columns": 20, "every": 1})
    result = harness.evaluate(
        """() => {
          const ctx = fp.ctx, calls = {n: 0}, fill = ctx.fillRect.bind(ctx);
          ctx.fillRect = (...args) => { calls.n += 1; fill(...args); };
          const values = Array.from(fp.metrics.get("load").values);
          values[7] = 0.99; values[8] = 0.0;
          fp.setValues("load", values);
          const changed = calls.n;
          calls.n = 0;
          fp.setValues("load", values);
          return {changed, unchanged: calls.n, updates: fp.updates};
        }"""
    )
    assert result == {"changed": 2, "unchanged": 0, "updates": 2}


def test_floorplan_run_metric_appears_and_categorical_legend(harness):
    harness.evaluate(MAKE_PLAN, {"rows": 4, "columns": 6, "every": 2})
    harness.evaluate("fp.setMetric('gpu')")
    legend = harness.inner_text(".fp-legend")
    assert "h100-sxm" in legend and "b200" in legend
    assert harness.evaluate("fp.colorOf(0)") == "#c9ced8"  # category -1: a rack without GPUs
    harness.evaluate("fp.setValues('link_util', fp.racks.map(() => 0.25))")
    assert harness.evaluate("fp.metrics.get('link_util').kind") == "run"
    harness.evaluate("fp.setMetric('link_util')")
    assert harness.evaluate("fp.colorOf(0)") != "#c9ced8"


def test_floorplan_register_announces_the_metric_and_the_select_lists_it(harness):
    """``register`` dispatches "fp:registry" itself: the bound select lists a metric registered
    with values at once, without its caller poking the select."""
    harness.evaluate(MAKE_PLAN, {"rows": 4, "columns": 6, "every": 1})
    result = harness.evaluate(
        """() => {
          const select = document.createElement("select");
          document.body.append(select);
          floorplan.bindMetricSelect(fp, select);
          const heard = [];
          fp.root.addEventListener("fp:registry", (event) => heard.push(event.detail.name));
          fp.register("heat", {label: "Heat", unit: "", kind: "run", scale: [0, 1],
                               values: fp.racks.map(() => 0.5)});
          const onRegister = [...heard];
          fp.register("later", {label: "Later", kind: "run", scale: [0, 1]});
          return {onRegister, heard, listed: [...select.options].map((o) => o.value)};
        }"""
    )
    assert result["onRegister"] == ["heat"] and result["heard"] == ["heat", "later"]
    assert "heat" in result["listed"] and "later" not in result["listed"]  # no values yet


REPLAY_PANEL = """async ({frames, step}) => {
  const {bindReplay} = await import("/js/replay.js");
  const panel = document.createElement("section");
  panel.innerHTML = '<button type="button" data-play>Play</button>' +
    '<input type="range" min="0" max="0" value="0" data-replay><span data-replay-time></span>';
  document.body.append(panel);
  const seen = [];
  const player = bindReplay(panel, fp, {
    metric: "replay", spec: {label: "Replay", unit: "", kind: "run", scale: [0, 1]},
    frames, step, intervalMs: 15,
    valuesAt: (frame) => { seen.push(frame); return fp.racks.map(() => frame / (frames - 1)); },
    timeText: (frame) => `frame ${frame}`,
  });
  window.replay = {panel, seen, player};
  return {seen: [...seen], max: panel.querySelector("[data-replay]").max,
          time: panel.querySelector("[data-replay-time]").textContent,
          registered: fp.metrics.has("replay"), value: fp.metrics.get("replay").values[0]};
}"""


def test_replay_slider_draws_frames_on_the_floor_plan_and_plays_round(harness):
    """The one replay module both kinds use: frame 0 drawn on a registered metric, the slider
    draws the frame it is moved to, Play steps round (wrapping at the end) until Pause."""
    harness.evaluate(MAKE_PLAN, {"rows": 4, "columns": 6, "every": 1})
    first = harness.evaluate(REPLAY_PANEL, {"frames": 5, "step": 2})
    assert first == {"seen": [0], "max": "4", "time": "frame 0", "registered": True, "value": 0}
    moved = harness.evaluate(
        """() => {
          const slider = replay.panel.querySelector("[data-replay]");
          slider.value = "3";
          slider.dispatchEvent(new Event("input"));
          return {seen: [...replay.seen], time: replay.panel.querySelector("[data-replay-time]").textContent,
                  value: fp.metrics.get("replay").values[0]};
        }"""
    )
    assert moved == {"seen": [0, 3], "time": "frame 3", "value": 0.75}
    harness.click("[data-play]")
    assert harness.inner_text("[data-play]") == "Pause"
    harness.wait_for_function("window.replay.seen.length >= 5")
    harness.click("[data-play]")
    assert harness.inner_text("[data-play]") == "Play"
    seen = harness.evaluate("replay.seen")
    stopped = len(seen)
    assert seen[:5] == [0, 3, 0, 2, 4]  # 3 + 2 wraps to 0 on 5 frames
    assert all(b == (a + 2) % 5 for a, b in itertools.pairwise(seen[2:]))
    harness.wait_for_timeout(100)
    assert len(harness.evaluate("replay.seen")) == stopped  # paused: no more frames
