"""The stream under load: N WebSocket clients (200 by default) on one run all receive its final state.

Starts daphne (Redis channel layer) on a free loopback port against a throwaway SQLite database
(``live_latency.py``'s set-up), logs a Chromium in, opens N WebSockets on one queued run from
that page, then plays a worker: marks the run running, publishes progress for two seconds
(``scenarios.broadcast``, as a Celery worker does), saves it succeeded and publishes its status.
Prints the time each client took to get its first state, how many clients received the final
state (a status message or a resent state saying "succeeded"), how many sockets closed and why,
and the final-state latency (publish -> receipt, same host clock), p50/p99.

Needs Redis (``REDIS_URL``, default ``redis://127.0.0.1:6379/9``) and Chromium
(``CHROMIUM_PATH``, default ``/usr/bin/chromium``). Target: every client gets the final state.
Usage: ``.venv/bin/python bench/stream.py [--clients 200]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from live_latency import free_port, logged_in_page, percentile, seed, setup_environment, start_daphne

CLIENTS = """
([path, count]) => new Promise((resolve) => {
  const t0 = performance.timeOrigin + performance.now();
  window.clients = [];
  let settled = 0;
  const settle = () => { if (++settled === count) resolve(); };
  for (let i = 0; i < count; i++) {
    const c = {connect_ms: null, final_at: null, closed: null, messages: 0};
    const ws = new WebSocket(`ws://${location.host}${path}`);
    ws.onmessage = (event) => {
      const now = performance.timeOrigin + performance.now();
      const m = JSON.parse(event.data);
      c.messages++;
      if (m.type === "state" && c.connect_ms === null) { c.connect_ms = now - t0; settle(); }
      const done = (m.type === "status" && m.status === "succeeded")
        || (m.type === "state" && m.run.status === "succeeded");
      if (done && c.final_at === null) c.final_at = now;
    };
    ws.onclose = (event) => { c.closed = event.code; if (c.connect_ms === null) settle(); };
    window.clients.push(c);
  }
  setTimeout(resolve, 60000);
})
"""


FINISHED = "window.clients.every((c) => c.final_at !== null || c.closed !== null)"


def play_worker(run, seconds: float) -> float:
    """Run, publish progress for ``seconds``, succeed; return the status publish time (ms)."""
    from scenarios import broadcast
    from scenarios.models import Run

    Run.objects.filter(pk=run.pk).update(status="running")
    start = time.monotonic()
    while (elapsed := time.monotonic() - start) < seconds:
        broadcast.publish_progress(run, min(0.99, elapsed / seconds), "computing")
        time.sleep(0.02)
    Run.objects.filter(pk=run.pk).update(status="succeeded", progress=1.0, stage="done")
    published_ms = time.time() * 1000.0
    broadcast.publish_status(Run.objects.select_related("scenario").get(pk=run.pk))
    return published_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--progress-s", type=float, default=2.0)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="twin-bench-") as var_dir:
        env = setup_environment(var_dir)
        run = seed()
        from scenarios.models import Run

        Run.objects.filter(pk=run.pk).update(status="queued")

        port = free_port()
        daphne = start_daphne(env, port)
        try:
            with sync_playwright() as p:
                browser, page = logged_in_page(p, port)
                page.evaluate(CLIENTS, [f"/ws/runs/{run.pk}/", args.clients])
                # The worker plays in a thread of its own (Playwright's sync API keeps an event
                # loop in this one, where Django refuses database calls).
                with ThreadPoolExecutor(1) as pool:
                    published_ms = pool.submit(play_worker, run, args.progress_s).result()
                try:
                    page.wait_for_function(FINISHED, timeout=30_000)
                except Exception:
                    print("not every client finished within 30 s", file=sys.stderr)
                clients = page.evaluate("window.clients")
                browser.close()
        finally:
            daphne.terminate()
            daphne.wait(timeout=10)
    report(clients, published_ms)


def report(clients: list[dict], published_ms: float) -> None:
    connect = [c["connect_ms"] for c in clients if c["connect_ms"] is not None]
    delivered = [c["final_at"] - published_ms for c in clients if c["final_at"] is not None]
    closed = [c["closed"] for c in clients if c["closed"] is not None]
    print(f"stream under load: {len(clients)} WebSocket clients on one run (daphne, Redis layer, Chromium)")
    if connect:
        print(
            f"  connect (first state): p50 {percentile(connect, 50):7.1f} ms   "
            f"p99 {percentile(connect, 99):7.1f} ms   max {max(connect):7.1f} ms"
        )
    print(f"  final state delivered: {len(delivered)}/{len(clients)}   (target: all)")
    print(f"  sockets closed: {len(closed)} {sorted(set(closed))}")
    if delivered:
        print(
            f"  final-state latency:   p50 {percentile(delivered, 50):7.1f} ms   "
            f"p99 {percentile(delivered, 99):7.1f} ms   max {max(delivered):7.1f} ms"
        )
    if len(delivered) < len(clients):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
