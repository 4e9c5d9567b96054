"""The API under load: N concurrent token clients against list and detail endpoints.

Creates a throwaway PostgreSQL database (``--database-url``, default
``postgres://postgres@127.0.0.1:5432/twin_load``; dropped and created again), migrates it,
seeds a team with designs, scenarios and runs, starts the real server (daphne,
``twin.asgi:application``, ``DEBUG=0``, the settings' connection pool) on a free loopback port,
then for each client count drives that many threads (one ``requests`` session and API token
each) for ``--seconds``, each looping over the list and detail endpoints. Prints per endpoint the
requests, 5xx answers and p50/p95/p99 latency, and the peak number of PostgreSQL connections the
server held (sampled from ``pg_stat_activity`` every 100 ms). Goal: no 5xx, and p99 under 1 s at
30 clients, with the connections bounded by ``TWIN_DB_POOL_MAX``.

Usage: ``.venv/bin/python bench/load.py [--clients 30,100] [--seconds 20] [--pool-max 10]``
(about a minute with the defaults). Without PostgreSQL it says so and exits 0.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np
from _servers import free_port, start_daphne

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/twin_load"
#: Endpoint name -> path template (filled with the seeded ids).
ENDPOINTS = {
    "designs (list)": "/api/designs/",
    "design (detail)": "/api/designs/{design}/",
    "scenarios (list)": "/api/scenarios/",
    "scenario (detail)": "/api/scenarios/{scenario}/",
    "runs (list)": "/api/runs/",
    "run (detail)": "/api/runs/{run}/",
    "teams (list)": "/api/teams/",
}


def admin_url(url: str) -> tuple[str, str]:
    """The server's maintenance database URL and the bench database's name."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/postgres")), parts.path.lstrip("/")


def recreate_database(url: str) -> bool:
    import psycopg

    maintenance, name = admin_url(url)
    try:
        with psycopg.connect(maintenance, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as error:
        print(f"load: needs PostgreSQL at {maintenance} ({str(error).strip()[:120]}): skipped")
        return False
    return True


def server_environment(url: str, pool_max: int, var_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(
        DATABASE_URL=url,
        TWIN_DB_POOL_MAX=str(pool_max),
        TWIN_VAR_DIR=var_dir,
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0",
        SECURE_HSTS_SECONDS="0",
        SECURE_COOKIES="0",
        LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="twin.settings",
    )
    return env


SEED = """
import django, json
django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
from scenarios.models import Run
from scenarios.services import scenario_create
from teams.services import team_create
from teams.tokens import api_token_create
from tests.scenarios.conftest import SMALL_JOB, make_design

call_command("migrate", verbosity=0)
call_command("catalog", "import", verbosity=0)
user = get_user_model().objects.create_user("load", password="load-pw-12345")
team = team_create(name="Load team", users=[user])
designs = [make_design(team=team, user=user, name=f"Design {i}") for i in range(5)]
scenarios = [
    scenario_create(design=d, name=f"Scenario {i}", job=dict(SMALL_JOB), what_if={}, user=user)
    for d in designs for i in range(4)
]
runs = [
    Run.objects.create(scenario=s, kind="step", status="succeeded", progress=1.0)
    for s in scenarios for _ in range(3)
]
tokens = [api_token_create(user=user).key for _ in range(NCLIENTS)]
print(json.dumps({"design": designs[0].pk, "scenario": scenarios[0].pk, "run": runs[0].pk, "tokens": tokens}))
"""


def seed(env: dict[str, str], clients: int) -> dict:
    import json

    done = subprocess.run(
        [sys.executable, "-c", SEED.replace("NCLIENTS", str(clients))],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"load: seeding failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class ConnectionSampler:
    """The peak of PostgreSQL connections to the bench database (pg_stat_activity)."""

    def __init__(self, url: str):
        self.url, self.peak, self.stop = url, 0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psycopg

        maintenance, name = admin_url(self.url)
        with psycopg.connect(maintenance, autocommit=True) as conn:
            while not self.stop.is_set():
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                    (name,),
                ).fetchone()
                self.peak = max(self.peak, int(row[0]))
                self.stop.wait(0.1)


def client_loop(base: str, token: str, paths: dict[str, str], until: float, out: list) -> None:
    """One client: every endpoint in turn until ``until``; (endpoint, status, seconds) in ``out``."""
    import requests

    session = requests.Session()
    session.headers["Authorization"] = f"Token {token}"
    names = list(paths)
    index = 0
    while time.monotonic() < until:
        name = names[index % len(names)]
        index += 1
        started = time.perf_counter()
        try:
            status = session.get(base + paths[name], timeout=30).status_code
        except requests.RequestException:
            status = 599  # no answer: counted with the 5xx
        out.append((name, status, time.perf_counter() - started))


def drive(base: str, tokens: list[str], paths: dict[str, str], clients: int, seconds: float) -> list:
    results: list[tuple[str, int, float]] = []
    until = time.monotonic() + seconds
    threads = [
        threading.Thread(target=client_loop, args=(base, tokens[i], paths, until, results), daemon=True)
        for i in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    return results


def report(results: list, clients: int, seconds: float, peak: int, pool_max: int) -> None:
    by_endpoint: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for name, status, took in results:
        by_endpoint[name].append((status, took))
    total_5xx = sum(1 for _, status, _ in results if status >= 500)
    print(
        f"\n{clients} clients, {seconds:.0f} s: {len(results)} requests ({len(results) / seconds:.0f}/s), "
        f"{total_5xx} 5xx, peak PostgreSQL connections {peak} (pool max {pool_max})"
    )
    print(f"  {'endpoint':<20} {'requests':>8} {'5xx':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for name in ENDPOINTS:
        rows = by_endpoint.get(name, [])
        if not rows:
            continue
        took = np.array([t for _, t in rows]) * 1000
        errors = sum(1 for status, _ in rows if status >= 500)
        p50, p95, p99 = np.percentile(took, [50, 95, 99])
        print(f"  {name:<20} {len(rows):>8} {errors:>5} {p50:>8.0f} {p95:>8.0f} {p99:>8.0f}")
    others = {status for _, status, _ in results if status >= 300}
    if others:
        print(f"  non-2xx statuses seen: {sorted(others)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="30,100", help="comma-separated client counts")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds per client count")
    parser.add_argument("--pool-max", type=int, default=10, help="TWIN_DB_POOL_MAX of the server")
    parser.add_argument("--database-url", default=os.environ.get("TWIN_LOAD_DATABASE_URL", DEFAULT_URL))
    args = parser.parse_args()
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    if not recreate_database(args.database_url):
        return
    with tempfile.TemporaryDirectory() as var_dir:
        env = server_environment(args.database_url, args.pool_max, var_dir)
        ids = seed(env, max(counts))
        port = free_port()
        server = start_daphne(env, port)
        try:
            paths = {name: path.format(**ids) for name, path in ENDPOINTS.items()}
            base = f"http://127.0.0.1:{port}"
            for clients in counts:
                sampler = ConnectionSampler(args.database_url)
                sampler.thread.start()
                results = drive(base, ids["tokens"], paths, clients, args.seconds)
                sampler.stop.set()
                sampler.thread.join(5)
                report(results, clients, args.seconds, sampler.peak, args.pool_max)
        finally:
            os.killpg(server.pid, 15)
            server.wait(10)


if __name__ == "__main__":
    main()
