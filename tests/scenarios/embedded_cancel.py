"""Run in a fresh interpreter WITHOUT REDIS_URL (embedded mode): start a long failures run on
the in-process worker, cancel it mid-computation, start a short step run at once and print, as
JSON, how long the short run waited for the worker (used by test_embedded.py)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

#: Enough trials that the Monte Carlo alone takes far longer than the test's bound.
LONG_FAILURES = {"trials": 100_000, "window_days": 60, "seed": 1}


def _wait(run, until, timeout_s: float) -> float:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if until(run):
            return time.monotonic()
        time.sleep(0.02)
    raise SystemExit(f"run {run.pk} never reached the state (status {run.status}, stage {run.stage!r})")


def main() -> None:
    from scenarios.embedded import start_embedded_worker
    from scenarios.services import run_cancel, run_start, scenario_create
    from teams.services import team_create
    from tests.scenarios.conftest import SMALL_JOB, make_design

    assert settings.EMBEDDED_MODE, "REDIS_URL must be unset"
    call_command("migrate", verbosity=0)
    call_command("catalog", "import", verbosity=0)
    user = get_user_model().objects.create_user("embedded", password="pw-embedded-1")
    team = team_create(name="Embedded", users=[user])
    design = make_design(team=team, user=user)
    long = scenario_create(design=design, name="long", job=SMALL_JOB, failures=LONG_FAILURES, user=user)
    short = scenario_create(design=design, name="short", job=SMALL_JOB, user=user)
    start_embedded_worker()
    long_run = run_start(scenario=long, kind="failures", user=user, options={"chunks": 1})
    _wait(long_run, lambda r: r.status == "running" and r.progress > 0.2, 120)
    time.sleep(0.5)  # well inside the Monte Carlo
    cancelled_at = time.monotonic()
    run_cancel(run=long_run, user=user)
    short_run = run_start(scenario=short, kind="step", user=user)
    started_at = _wait(short_run, lambda r: r.started is not None, 60)
    _wait(short_run, lambda r: r.is_final, 60)
    long_run.refresh_from_db()
    print(
        json.dumps(
            {
                "long": {"status": long_run.status, "progress": long_run.progress},
                "short": {"status": short_run.status},
                "short_waited_s": started_at - cancelled_at,
            }
        )
    )


if __name__ == "__main__":
    main()
