"""Live-update latency: a worker publishing -> the browser receiving, p50/p95 over 200 messages.

Starts daphne (Redis channel layer) on a free loopback port against a throwaway SQLite
database, logs a Chromium (Playwright, the system browser) in, opens the run's WebSocket, and
publishes 200 progress messages from this process exactly as a Celery worker does
(``scenarios.broadcast.publish_progress``), one every 105 ms (the stream's limit is 10 per s).
Each message carries its publish time ``t`` (ms since the epoch); the page records
``performance.timeOrigin + performance.now()`` on receipt (same host, same clock).

Needs Redis (``REDIS_URL``, default ``redis://127.0.0.1:6379/9``) and Chromium
(``CHROMIUM_PATH``, default ``/usr/bin/chromium``). Target: p95 < 100 ms on loopback.
Usage: ``.venv/bin/python bench/live_latency.py [--messages 200]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from _servers import free_port, start_daphne

ROOT = Path(__file__).resolve().parents[1]


def setup_environment(var_dir: str) -> dict[str, str]:
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")
    os.environ.update(
        TWIN_VAR_DIR=var_dir,
        CHANNELS_PREFIX=f"bench-{uuid.uuid4().hex[:8]}",
        LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="twin.settings",
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    return dict(os.environ)


def seed():
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from scenarios.models import Run
    from scenarios.services import scenario_create
    from teams.services import team_create
    from tests.scenarios.conftest import SMALL_JOB, make_design

    call_command("migrate", verbosity=0)
    call_command("catalog", "import", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="bench-pass-123")
    team = team_create(name="Bench", users=[user])
    scenario = scenario_create(
        design=make_design(team=team, user=user), name="bench", job=SMALL_JOB, user=user
    )
    return Run.objects.create(scenario=scenario, status="running")


RECORDER = """
([path, expected]) => new Promise((resolve, reject) => {
  window.latencies = [];
  const ws = new WebSocket(`ws://${location.host}${path}`);
  ws.onmessage = (event) => {
    const now = performance.timeOrigin + performance.now();
    const message = JSON.parse(event.data);
    if (message.type === "state") { resolve("connected"); return; }
    if (message.type === "progress" && message.t) window.latencies.push(now - message.t);
  };
  ws.onerror = () => reject("websocket error");
  window.ws = ws;
})
"""


def logged_in_page(playwright, port: int):
    """Debian Chromium logged in as the seeded bench user on the daphne at ``port``:
    (browser, page)."""
    from tests.e2e.browser import CHROMIUM_ARGS, chromium_path

    browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
    page = browser.new_page()
    page.goto(f"http://127.0.0.1:{port}/login/")
    page.fill("input[name=username]", "bench")
    page.fill("input[name=password]", "bench-pass-123")
    page.click("button[type=submit]")
    page.wait_for_load_state()
    return browser, page


def publish(broadcast, run, messages: int, interval_ms: float) -> None:
    for i in range(messages):
        broadcast.publish_progress(run, (i + 1) / messages, f"message {i + 1}")
        time.sleep(interval_ms / 1000.0)


def percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(np.asarray(values), q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--interval-ms", type=float, default=105.0)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="twin-bench-") as var_dir:
        env = setup_environment(var_dir)
        run = seed()
        from scenarios import broadcast

        port = free_port()
        daphne = start_daphne(env, port)
        try:
            with sync_playwright() as p:
                browser, page = logged_in_page(p, port)
                page.evaluate(RECORDER, [f"/ws/runs/{run.pk}/", args.messages])
                # Publish from a thread of its own, as a worker process does (Playwright's sync API
                # keeps an event loop in this one).
                publisher = threading.Thread(
                    target=publish, args=(broadcast, run, args.messages, args.interval_ms)
                )
                publisher.start()
                publisher.join()
                try:
                    page.wait_for_function(f"window.latencies.length >= {args.messages}", timeout=10_000)
                except Exception:
                    print("received only", page.evaluate("window.latencies.length"), file=sys.stderr)
                    raise
                latencies = page.evaluate("window.latencies")
                browser.close()
        finally:
            daphne.terminate()
            daphne.wait(timeout=10)
    print(f"live latency, worker publish -> browser receive, {len(latencies)} messages")
    print("  (Redis channel layer, daphne, Chromium on loopback)")
    print(f"  p50 {percentile(latencies, 50):6.1f} ms")
    print(f"  p95 {percentile(latencies, 95):6.1f} ms   (target < 100 ms)")
    print(f"  max {max(latencies):6.1f} ms")


if __name__ == "__main__":
    main()
