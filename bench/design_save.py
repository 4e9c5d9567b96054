"""Benchmark: save a 2,048-node (16,384-GPU) rail-optimized design with bulk_create, with
history on, through the service the browser's background save calls (``design_generate``).

Prints the generate and save times on the embedded SQLite database and, when PostgreSQL answers
on 127.0.0.1:5432 (or BENCH_POSTGRES_URL), on PostgreSQL too, with the number of history entries
written (one "created from generator X with parameters Y" line, not one per row) and of progress
steps reported. Target: save < 30 s on both.

    .venv/bin/python bench/design_save.py [--nodes 2048]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_one(database_url: str, nodes: int) -> str:
    """Migrate a fresh database, import the catalog and time generate + save in a child process."""
    code = f"""
import time, django
django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
call_command("migrate", verbosity=0)
call_command("catalog", "import", verbosity=0)
from topology.models import DesignChange, Gpu, Link
from teams.services import team_create
from topology.services import design_generate, generator_plan
user = get_user_model().objects.create_user("bench")
team = team_create(name="bench", users=[user])
params = {{"server": "dgx-h100", "nodes": {nodes}}}
t0 = time.perf_counter()
generator_plan(generator="rail-optimized", params=params)
t1 = time.perf_counter()
steps = []
design = design_generate(generator="rail-optimized", params=params, name="bench", team=team, user=user,
                         on_progress=lambda fraction, stage: steps.append(fraction))
t2 = time.perf_counter()
entries = DesignChange.objects.filter(design=design).count()
print(f"generate {{t1 - t0:.2f}} s, save with history {{t2 - t1:.2f}} s "
      f"({{Gpu.objects.count():,}} GPUs, {{Link.objects.count():,}} links, {{entries}} history entry, "
      f"{{len(steps)}} progress steps)")
"""
    env = {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "twin.settings"}
    env.pop("REDIS_URL", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        return "failed: " + out.stderr.strip().splitlines()[-1]
    return out.stdout.strip()


def postgres_url() -> str | None:
    url = os.environ.get("BENCH_POSTGRES_URL")
    if url:
        return url
    ready = subprocess.run(["pg_isready", "-h", "127.0.0.1", "-q"], capture_output=True)
    if ready.returncode:
        return None
    name = "twin_bench"
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", name], capture_output=True)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", name], check=True)
    return f"postgres://postgres@127.0.0.1:5432/{name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2048)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"sqlite     {args.nodes} nodes: {run_one(f'sqlite:///{tmp}/bench.sqlite3', args.nodes)}")
    url = postgres_url()
    if url:
        print(f"postgresql {args.nodes} nodes: {run_one(url, args.nodes)}")
    else:
        print("postgresql: not reachable on 127.0.0.1:5432, skipped")


if __name__ == "__main__":
    main()
