"""A test session stopped by SIGTERM leaves no Celery worker behind (tests/conftest.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.scenarios.integration import ROOT, need, redis_url

pytestmark = pytest.mark.slow

DB_URL = "postgres://postgres@127.0.0.1:5432/twin_sigterm"


def _workers_of(pid: int) -> list[int]:
    """Pids of the Celery worker processes a pytest process ``pid`` started (named after it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if b"celery" in cmdline and f"tasks-{pid}@".encode() in cmdline:
                found.append(int(proc.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_sigterm_to_pytest_stops_the_worker_it_started(tmp_path):
    need(os.environ.get("DATABASE_URL", "").startswith("postgres"), "needs PostgreSQL")
    # Its own database and Redis database: its worker must not take this session's tasks.
    broker = urlsplit(redis_url())
    other_db = (int(broker.path.strip("/") or 0) + 8) % 16
    env = {
        **os.environ,
        "DATABASE_URL": DB_URL,
        "REDIS_URL": urlunsplit(broker._replace(path=f"/{other_db}")),
        "E2E_REQUIRED": "1",
    }
    inner = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--create-db",
         "tests/scenarios/test_tasks.py::test_worker_cancel_stops_the_work"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _workers_of(inner.pid) and time.monotonic() < deadline and inner.poll() is None:
            time.sleep(0.2)
        assert _workers_of(inner.pid), "the inner session never started its worker"
        inner.send_signal(signal.SIGTERM)
        inner.wait(timeout=60)
        deadline = time.monotonic() + 30
        while _workers_of(inner.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _workers_of(inner.pid) == []
    finally:
        if inner.poll() is None:
            os.killpg(inner.pid, signal.SIGKILL)
        for pid in _workers_of(inner.pid):
            os.kill(pid, signal.SIGKILL)
