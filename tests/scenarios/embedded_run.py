"""Run in a fresh interpreter WITHOUT REDIS_URL (embedded mode): start the in-process worker,
start runs through the service and print their outcome as JSON (used by test_embedded.py)."""

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
from django.db import transaction  # noqa: E402


def main() -> None:
    from scenarios.embedded import start_embedded_worker
    from scenarios.models import Run
    from scenarios.services import run_start, scenario_create
    from teams.services import team_create
    from tests.scenarios.conftest import SMALL_JOB, make_design

    assert settings.EMBEDDED_MODE, "REDIS_URL must be unset"
    call_command("migrate", verbosity=0)
    call_command("catalog", "import", verbosity=0)
    user = get_user_model().objects.create_user("embedded", password="pw-embedded-1")
    team = team_create(name="Embedded", users=[user])
    scenario = scenario_create(design=make_design(team=team, user=user), name="s", job=SMALL_JOB, user=user)
    orphan = Run.objects.create(scenario=scenario, status="running")  # left by a previous process
    start_embedded_worker()
    with transaction.atomic():
        runs = [
            run_start(scenario=scenario, kind="step", user=user),
            run_start(scenario=scenario, kind="sweep", user=user, options={"chunk_size": 1}),
        ]
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not all(r.is_final for r in runs):
        time.sleep(0.1)
        for run in runs:
            run.refresh_from_db()
    orphan.refresh_from_db()
    print(
        json.dumps(
            {
                "runs": [
                    {
                        "kind": r.kind,
                        "status": r.status,
                        "error": r.error,
                        "progress": r.progress,
                        "points": len(r.summary.get("points", [])),
                    }
                    for r in runs
                ],
                "orphan": {"status": orphan.status, "error": orphan.error},
            }
        )
    )


if __name__ == "__main__":
    main()
