"""The README's three-line curl session, run as written (bash, curl, jq) against a live server
of the test database: import a scenario file, start a run, read its result.

The worker is the only stand-in: the run is computed when its transaction commits, in the
server's thread, as the embedded worker of ``make run`` would a moment later.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- api-session:"


def readme_session() -> list[str]:
    """The lines of the fenced block right after the README's api-session marker."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text[text.index(MARKER) :]
    block = re.search(r"```sh\n(.*?)```", after, re.S)
    assert block, "no ```sh block after the api-session marker"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_session_is_three_curl_lines():
    lines = readme_session()
    assert len(lines) == 3 and all("curl " in line for line in lines)


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="needs curl and jq")
def test_readme_session_imports_runs_and_reads_a_result(live_server, catalog_db, monkeypatch):
    from django.contrib.auth import get_user_model

    from scenarios import queue
    from scenarios.services import run_execute
    from teams.permissions import ACTIONS
    from teams.services import team_create
    from teams.tokens import api_token_create
    from tests.api.conftest import role_granting, set_role

    monkeypatch.setattr(queue, "enqueue_run", lambda run_id, task_id: run_execute(run_id=run_id))
    demo = get_user_model().objects.create_user("demo", password="pw-demo-1234")
    set_role(demo, team_create(name="Demo team", users=[demo]), role_granting(*ACTIONS))
    env = {
        **os.environ,
        "API": f"{live_server.url}/api",
        "AUTH": f"Authorization: Token {api_token_create(user=demo).key}",
    }
    script = "set -euo pipefail\n" + "\n".join(readme_session()) + "\n"
    done = subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result
    assert result["summary"]["step_time_s"] > 0 and result["charts"] == []
    assert {a["name"] for a in result["arrays"]} >= {"link_utilization", "gpu_slowdown"}
