"""A kind added through the registry alone (tests/scenarios/toy_kind.py plus one setting) runs
end to end: started from the scenario page's form, split into chunks on a real Celery worker,
merged, streamed over the Redis channel layer, and shown on the run page with its own figures and
chart -- no other file of the project names it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.urls import reverse

from scenarios.models import Run
from tests.scenarios.integration import TOY_KIND

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def toy_registered(settings):
    settings.TWIN_RUN_KINDS = [*settings.TWIN_RUN_KINDS, TOY_KIND]


def test_the_toy_kind_is_named_nowhere_in_the_project():
    for path in [
        *ROOT.glob("scenarios/**/*.py"),
        *ROOT.glob("templates/**/*.html"),
        *ROOT.glob("static/js/**/*.js"),
    ]:
        assert "toy" not in path.read_text(encoding="utf-8").lower(), path


async def _stream(run_id: int, user, until: float) -> list[dict]:
    """Every message of the run's socket until its final status."""
    from scenarios.routing import websocket_urlpatterns

    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run_id}/")
    comm.scope["user"] = user
    connected, _ = await comm.connect()
    assert connected
    messages = []
    while time.monotonic() < until:
        message = await comm.receive_json_from(timeout=until - time.monotonic())
        messages.append(message)
        status = message["run"]["status"] if message["type"] == "state" else message.get("status")
        if message["type"] in ("state", "status") and status in ("succeeded", "failed", "cancelled"):
            break
    await comm.disconnect()
    await database_sync_to_async(connections.close_all)()
    return messages


def test_a_plug_in_kind_runs_through_the_form_the_worker_the_stream_and_the_page(
    toy_registered,
    transactional_db,
    celery_worker_process,
    scenario,
    user,
    client,
    django_capture_on_commit_callbacks,
):
    client.force_login(user)
    page = client.get(scenario.get_absolute_url()).content.decode()
    assert 'data-run-kind="toy"' in page and "Toy sum of squares" in page
    bad = client.post(reverse("scenarios:run-start", args=[scenario.pk]), {"kind": "toy", "toy-count": "500"})
    assert bad.status_code == 400 and "500" not in Run.objects.values_list("options", flat=True)
    assert "options.count: must be an integer from 1 to 100 (got 500)" in bad.content.decode()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            reverse("scenarios:run-start", args=[scenario.pk]), {"kind": "toy", "toy-count": "8"}
        )
    run = Run.objects.get(kind="toy")
    assert response["Location"] == run.get_absolute_url() and run.options == {"count": 8}

    async def watch():
        task = asyncio.ensure_future(_stream(run.pk, user, time.monotonic() + 90))
        await asyncio.sleep(0.5)  # the socket is open and has the stored state: now enqueue
        await database_sync_to_async(lambda: [callback() for callback in callbacks])()
        return await task

    messages = asyncio.run(watch())
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.summary["total"] == sum(n * n for n in range(1, 9)) and run.summary["count"] == 8
    assert messages[0]["type"] == "state" and messages[0]["run"]["kind_label"] == "Toy sum of squares"
    partials = [m for m in messages if m["type"] == "partial"]
    assert partials and all("squares" in m["summary"] for m in partials)
    final = messages[-1]
    assert final["type"] == "status" and final["status"] == "succeeded"
    assert final["figures"][0] == {"key": "total", "label": "Sum of squares", "text": "204"}

    html = client.get(run.get_absolute_url()).content.decode()
    assert "Toy sum of squares #" in html and "Sum of squares" in html
    charts = client.get(reverse("scenarios:run-charts", args=[run.pk])).json()["charts"]
    assert [c["id"] for c in charts] == ["toy-squares"]
