"""Benchmark: the live floor plan in Chromium with a 131,072-GPU design (16,384 DGX H100 nodes).

Renders the real run page (``templates/scenarios/run_detail.html`` with unsaved model instances)
with its real scripts, and an embedded floor-plan JSON of the shape ``design_floor_plan_json``
returns, built from the pure generator's hall (no database needed), then measures in the system
Chromium:

- first paint: navigation start -> the floor plan's first full paint (``floorplan:first-paint``
  mark) and -> the next animation frame (pixels on screen); median over page loads;
- live update: script time of one ``partial`` message with a value per rack, as the WebSocket
  handler receives it (JSON text -> parse -> recolor -> repaint changed racks); p50/p95/max over
  ``--updates`` messages, and the time to the next animation frame (recolored pixels shown).

Targets (issue 4): first paint < 1 s, each live update < 50 ms of script time.

    .venv/bin/python bench/floor_plan.py [--nodes 16384] [--updates 200] [--loads 5]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import statistics
import sys
import threading
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.e2e.browser import CHROMIUM_ARGS, chromium_path  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")


def floor_plan_json(nodes: int) -> dict:
    """The design page's floor-plan JSON for a generated rail-optimized DGX H100 hall."""
    import django

    django.setup()
    from scenarios.kinds import floor_metrics
    from scenarios.metrics import DESIGN_METRICS
    from topology.fabric.generators import generate
    from topology.fabric.specs import load_catalog

    catalog = load_catalog()
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=nodes)
    n = len(plan.rack_name)
    rng = np.random.default_rng(0)
    budget = np.asarray(plan.rack_budget_kw, dtype=float)
    nameplate = budget / 1.1  # layout.py: budget = nameplate x 1.10
    values = {
        "rack_power": np.round(nameplate / budget, 3).tolist(),
        "feed_load": np.round(rng.uniform(0.3, 0.6, n), 3).tolist(),
        "feed_load_n1": np.round(rng.uniform(0.5, 1.1, n), 3).tolist(),
        "gpu_type": np.where(np.asarray(plan.rack_kind) == 0, 0, -1).astype(float).tolist(),
    }
    metrics = {}
    for name, metric in floor_metrics().items():
        described = metric.describe()
        if metric.scale == "categorical":
            described["categories"] = ["h100-sxm"]
        metrics[name] = described
    assert set(values) == {m.name for m in DESIGN_METRICS}
    return {
        "design": 1,
        "name": f"bench {nodes} nodes",
        "rows": int(plan.hall_rows),
        "columns": int(plan.hall_cols),
        "racks": [
            {"id": i + 1, "name": plan.rack_name[i], "row": int(r), "col": int(c), "kind": int(k)}
            for i, (r, c, k) in enumerate(zip(plan.rack_row, plan.rack_col, plan.rack_kind, strict=True))
        ],
        "metrics": metrics,
        "values": values,
        "power": {"budget_kw": np.round(budget, 2).tolist(), "nameplate_kw": np.round(nameplate, 2).tolist()},
    }


def run_page(plan: dict, state: dict) -> str:
    """The run page as the server renders it, for a running step run (no database)."""
    from django.contrib.auth.models import AnonymousUser
    from django.template.loader import render_to_string

    from scenarios.models import Run, Scenario
    from topology.models import Design

    design = Design(pk=1, name=plan["name"])
    scenario = Scenario(pk=1, name="bench", design=design)
    run = Run(pk=1, scenario=scenario, kind="step", status="running", progress=0.1, stage="routing")
    context = {
        "run": run,
        "scenario": scenario,
        "design": design,
        "state": state,
        "floor_plan": plan,
        "metric": "link_util",
        "user": AnonymousUser(),
        "csrf_token": "bench",
    }
    return render_to_string("scenarios/run_detail.html", context)


def run_state() -> dict:
    return {
        "id": 1,
        "scenario": {"id": 1, "name": "bench"},
        "design": 1,
        "kind": "step",
        "kind_label": "Step time",
        "status": "running",
        "status_label": "Running",
        "progress": 0.1,
        "stage": "routing",
        "error": "",
        "summary": {},
        "created": None,
        "started": None,
        "finished": None,
        "duration_s": None,
        "active": True,
        "rack_values": {},
    }


def serve(html: str) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve the page at / and the project's static files (plotly not needed) at /static/."""
    static = ROOT / "static"
    body = html.encode()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):
            if self.path in ("/", "/index.html"):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            if self.path.startswith("/static/"):
                self.path = self.path[len("/static") :]
                return super().do_GET()
            self.send_error(404)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(static))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


FIRST_PAINT_JS = """() => new Promise((resolve) => {
  const wait = () => {
    const mark = performance.getEntriesByName("floorplan:first-paint")[0];
    if (!mark) return setTimeout(wait, 5);
    requestAnimationFrame(() => resolve({
      painted_ms: mark.startTime,
      frame_ms: performance.now(),
      fcp_ms: (performance.getEntriesByName("first-contentful-paint")[0] || {}).startTime ?? null,
      racks: window.twinFloorPlan.racks.length,
    }));
  };
  wait();
})"""

UPDATE_JS = """async ({messages}) => {
  const live = window.twinLive;
  live.close();  // no server socket here: messages are injected as the handler receives them
  const script = [], frame = [];
  for (const raw of messages) {
    const t0 = performance.now();
    live.receive(raw);
    const t1 = performance.now();
    await new Promise((r) => requestAnimationFrame(() => r()));
    script.push(t1 - t0);
    frame.push(performance.now() - t0);
  }
  return {script, frame, updates: window.twinFloorPlan.updates};
}"""


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=16384, help="DGX H100 nodes (16384 = 131,072 GPUs)")
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()

    plan = floor_plan_json(args.nodes)
    n_racks = len(plan["racks"])
    plan_text = json.dumps(plan, separators=(",", ":")).replace("</", "<\\/")
    html = run_page(plan, run_state())
    server, url = serve(html)
    rng = np.random.default_rng(1)
    messages = [
        json.dumps(
            {
                "type": "partial",
                "run": 1,
                "metric": "link_util",
                "values": np.round(rng.uniform(0, 1, n_racks), 3).tolist(),
                "summary": {"step_time_s": 1.0},
            }
        )
        for _ in range(args.updates)
    ]
    from playwright.sync_api import sync_playwright

    chromium = chromium_path()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        loads = []
        warm = browser.new_page()  # the first page of a fresh browser also pays for Chromium's own start-up
        warm.goto(url, wait_until="load")
        warm.close()
        for _ in range(args.loads):
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url, wait_until="load")
            loads.append(page.evaluate(FIRST_PAINT_JS))
            page.close()
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url, wait_until="load")
        page.evaluate(FIRST_PAINT_JS)
        result = page.evaluate(UPDATE_JS, {"messages": messages})
        tile = page.evaluate("window.twinFloorPlan.tile")
        browser.close()
    server.shutdown()

    print(
        f"floor plan: {n_racks:,} racks on a {plan['rows']} x {plan['columns']} grid "
        f"({args.nodes * 8:,} GPUs), {len(plan_text) / 1024:.0f} KiB of embedded JSON, tile {tile} px"
    )
    painted = [x["painted_ms"] for x in loads]
    framed = [x["frame_ms"] for x in loads]
    fcp = [x["fcp_ms"] for x in loads if x["fcp_ms"] is not None]
    print(
        f"first paint (navigation -> floor plan painted): median {statistics.median(painted):.0f} ms, "
        f"max {max(painted):.0f} ms over {len(loads)} loads; "
        f"next frame median {statistics.median(framed):.0f} ms"
        + (f"; first contentful paint median {statistics.median(fcp):.0f} ms" if fcp else "")
    )
    script, frame = result["script"], result["frame"]
    print(
        f"live update ({len(messages)} partial messages x {n_racks:,} values): "
        f"script p50 {percentile(script, 50):.1f} ms, "
        f"p95 {percentile(script, 95):.1f} ms, max {max(script):.1f} ms; to next frame p50 "
        f"{percentile(frame, 50):.1f} ms, p95 {percentile(frame, 95):.1f} ms"
    )
    ok = statistics.median(painted) < 1000 and percentile(script, 95) < 50
    print("targets (first paint < 1000 ms, update script < 50 ms):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
