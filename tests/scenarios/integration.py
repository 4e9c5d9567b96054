"""Helpers of the integration tests: required services, a real Celery worker subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOY_KIND = "tests.scenarios.toy_kind"


def required() -> bool:
    """CI sets E2E_REQUIRED=1: then missing services fail the test instead of skipping it."""
    return os.environ.get("E2E_REQUIRED", "").strip() in {"1", "true", "yes"}


def need(condition: bool, reason: str) -> None:
    if condition:
        return
    if required():
        pytest.fail(f"E2E_REQUIRED=1 but {reason}")
    pytest.skip(reason)


def redis_url() -> str:
    url = os.environ.get("REDIS_URL", "").strip()
    need(bool(url), "needs REDIS_URL (Redis channel layer / broker); CI sets it")
    return url


def database_url_of_test_db() -> str:
    """A DATABASE_URL pointing at the database pytest-django created for this session."""
    from django.db import connection

    s = connection.settings_dict
    need(
        s["ENGINE"] == "django.db.backends.postgresql", "needs DATABASE_URL (PostgreSQL) for a worker process"
    )
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Worker:
    """``celery -A twin worker`` in its own process group, on the test database."""

    def __init__(
        self, *, queues: str = "celery", concurrency: int = 2, name: str = "test", env: dict | None = None
    ):
        env = {
            **os.environ,
            "DATABASE_URL": database_url_of_test_db(),
            "REDIS_URL": redis_url(),
            "DJANGO_SETTINGS_MODULE": "twin.settings",
            "LOG_LEVEL": "WARNING",
            # the test suite's plug-in kind (tests/scenarios/toy_kind.py), registered the way any
            # installation adds one
            "TWIN_EXTRA_RUN_KINDS": TOY_KIND,
            **(env or {}),
        }
        self.log_path = Path(f"/tmp/twin-test-worker-{name}-{os.getpid()}.log")
        self.log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop())
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "twin",
                "worker",
                "--pool",
                "prefork",
                "--concurrency",
                str(concurrency),
                "-Q",
                queues,
                "-n",
                f"{name}-{os.getpid()}@%h",
                "--without-gossip",
                "--without-mingle",
                "--loglevel",
                "WARNING",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            self._wait_ready()
        except BaseException:  # not ready, or the session interrupted meanwhile: leave nothing
            self.stop()
            raise

    def _wait_ready(self, timeout_s: float = 60.0) -> None:
        from twin.celery import app

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited: {self.log_path.read_text(errors='replace')[-2000:]}")
            replies = app.control.ping(timeout=0.5) or []
            if any(self.process_name_in(reply) for reply in replies):
                return
        raise RuntimeError(
            f"worker not ready after {timeout_s} s: {self.log_path.read_text(errors='replace')}"
        )

    def process_name_in(self, reply: dict) -> bool:
        return any(
            name.startswith(self.process.args[self.process.args.index("-n") + 1].split("@")[0])
            for name in reply
        )

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool children), as an OOM killer would."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log.close()
