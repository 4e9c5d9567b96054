"""Run and design consumers on the Redis channel layer: connect, refuse, resume, relay."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from scenarios import broadcast
from scenarios.choices import RunStatus
from scenarios.models import Run
from tests.scenarios.integration import redis_url

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


@pytest.fixture
def redis_layer(settings):
    """The Redis channel layer under a prefix of its own (other sessions share the server)."""
    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_url()], "prefix": f"test-{uuid.uuid4().hex[:8]}"},
        }
    }
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest_asyncio.fixture(autouse=True)
async def close_consumer_connections(transactional_db):
    """Consumers reach the database from asgiref's worker thread; close its connection after
    each test so the test database can be dropped at the end of the session."""
    yield
    from channels.db import database_sync_to_async
    from django.db import connections

    await database_sync_to_async(connections.close_all)()


@pytest.fixture
def live_scenario(transactional_db, catalog_db, team, user, job):
    from scenarios.services import scenario_create
    from tests.scenarios.conftest import make_design

    design = make_design(team=team, user=user)
    return scenario_create(design=design, name="live", job=job, what_if={}, user=user)


def communicator(path: str, user) -> WebsocketCommunicator:
    from scenarios.routing import websocket_urlpatterns

    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user
    return comm


async def test_run_consumer_sends_state_first(redis_layer, live_scenario, user):
    run = await sync_to_async(Run.objects.create)(
        scenario=live_scenario, status=RunStatus.RUNNING, progress=0.25, stage="routing"
    )
    comm = communicator(f"/ws/runs/{run.pk}/", user)
    connected, _ = await comm.connect()
    assert connected
    first = await comm.receive_json_from(timeout=5)
    assert first["type"] == "state"
    assert (
        first["run"]["id"] == run.pk
        and first["run"]["progress"] == 0.25
        and first["run"]["stage"] == "routing"
    )
    await comm.disconnect()


async def test_run_consumer_refuses_users_outside_the_team(redis_layer, live_scenario, outsider):
    from django.contrib.auth.models import AnonymousUser

    run = await sync_to_async(Run.objects.create)(scenario=live_scenario)
    for who in (outsider, AnonymousUser()):
        comm = communicator(f"/ws/runs/{run.pk}/", who)
        connected, code = await comm.connect()
        assert not connected and code == 4404  # another team's run looks like a missing one
    comm = communicator("/ws/runs/999999/", outsider)
    connected, code = await comm.connect()
    assert not connected and code == 4404


async def test_run_consumer_resumes_the_stored_state_after_a_reload(redis_layer, live_scenario, user):
    from scenarios import services

    run = await sync_to_async(Run.objects.create)(scenario=live_scenario, kind="step")
    await sync_to_async(services.run_execute)(run_id=run.pk)  # finishes while no page listens
    comm = communicator(f"/ws/runs/{run.pk}/", user)
    await comm.connect()
    state = (await comm.receive_json_from(timeout=5))["run"]
    assert state["status"] == "succeeded" and state["progress"] == 1.0
    assert (
        len(state["rack_values"]["link_util"])
        == await sync_to_async(lambda: live_scenario.design.halls.get().racks.count())()
    )
    await comm.send_json_to({"type": "state"})
    assert (await comm.receive_json_from(timeout=5))["type"] == "state"
    await comm.disconnect()


async def test_run_consumer_relays_worker_messages(redis_layer, live_scenario, user):
    run = await sync_to_async(Run.objects.create)(scenario=live_scenario, status=RunStatus.RUNNING)
    comm = communicator(f"/ws/runs/{run.pk}/", user)
    await comm.connect()
    await comm.receive_json_from(timeout=5)  # state
    await sync_to_async(broadcast.publish_progress)(run, 0.5, "routing collectives", force=True)
    message = await comm.receive_json_from(timeout=5)
    assert message["type"] == "progress" and message["run"] == run.pk and message["progress"] == 0.5
    await sync_to_async(broadcast.publish_partial)(
        run, metric="link_util", values=[0.1, 0.9, 0.0], force=True
    )
    message = await comm.receive_json_from(timeout=5)
    assert message == {**message, "type": "partial", "metric": "link_util", "values": [0.1, 0.9, 0.0]}
    run.status = RunStatus.SUCCEEDED
    await sync_to_async(broadcast.publish_status)(
        await sync_to_async(Run.objects.select_related("scenario").get)(pk=run.pk)
    )
    message = await comm.receive_json_from(timeout=5)
    assert message["type"] == "status" and message["design"] == live_scenario.design_id
    await comm.disconnect()


async def test_run_consumer_relays_at_most_ten_messages_per_second(redis_layer, live_scenario, user):
    run = await sync_to_async(Run.objects.create)(scenario=live_scenario, status=RunStatus.RUNNING)
    comm = communicator(f"/ws/runs/{run.pk}/", user)
    await comm.connect()
    await comm.receive_json_from(timeout=5)
    group = broadcast.run_group(run.pk)
    for i in range(60):  # several workers publishing at once, bypassing their own throttles
        await sync_to_async(broadcast.send)(group, {"type": "progress", "run": run.pk, "progress": i / 59})
    loop = asyncio.get_running_loop()
    received = []
    while not received or received[-1][1]["progress"] != 1.0:
        message = await comm.receive_json_from(timeout=10)
        received.append((loop.time(), message))
    times = [t for t, _ in received]
    assert len(received) < 60  # coalesced
    for start in times:
        assert sum(start <= t < start + 1.0 for t in times) <= broadcast.MAX_MESSAGES_PER_S
    await comm.disconnect()


async def test_design_consumer_lists_runs_and_relays_their_status(redis_layer, live_scenario, user, outsider):
    run = await sync_to_async(Run.objects.create)(scenario=live_scenario)
    design_id = live_scenario.design_id
    refused = communicator(f"/ws/designs/{design_id}/", outsider)
    assert (await refused.connect())[0] is False
    comm = communicator(f"/ws/designs/{design_id}/", user)
    await comm.connect()
    first = await comm.receive_json_from(timeout=5)
    assert first["type"] == "design_state" and [r["id"] for r in first["runs"]] == [run.pk]
    fresh = await sync_to_async(Run.objects.select_related("scenario").get)(pk=run.pk)
    await sync_to_async(broadcast.publish_status)(fresh)
    message = await comm.receive_json_from(timeout=5)
    assert message["type"] == "status" and message["run"] == run.pk
    await comm.disconnect()


async def test_full_asgi_stack_authenticates_by_session(redis_layer, live_scenario, user):
    from django.test import Client

    from twin.asgi import application

    run = await sync_to_async(Run.objects.create)(scenario=live_scenario)
    client = Client()
    await sync_to_async(client.force_login)(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie)]
    comm = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers=headers)
    connected, _ = await comm.connect()
    assert connected and (await comm.receive_json_from(timeout=5))["type"] == "state"
    await comm.disconnect()
    anonymous = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers=headers[:2])
    assert (await anonymous.connect())[0] is False


async def test_run_consumer_answers_a_frame_that_is_not_json_with_an_error(redis_layer, live_scenario, user):
    run = await sync_to_async(Run.objects.create)(scenario=live_scenario, status=RunStatus.RUNNING)
    comm = communicator(f"/ws/runs/{run.pk}/", user)
    await comm.connect()
    await comm.receive_json_from(timeout=5)  # state
    for frame in ({"text_data": "not json {"}, {"text_data": "[1, 2]"}, {"bytes_data": b"\xff\x00"}):
        await comm.send_to(**frame)
        answer = await comm.receive_json_from(timeout=5)
        assert answer["type"] == "error" and "JSON" in answer["error"]
    await comm.send_json_to({"type": "state"})
    assert (await comm.receive_json_from(timeout=5))["type"] == "state"  # still open
    await comm.disconnect()


@pytest.fixture
def named_redis_layer(settings):
    """The Redis channel layer with a client name, so a test can drop its connections."""
    from channels.layers import channel_layers

    name = f"twin-test-{uuid.uuid4().hex[:8]}"
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [{"address": redis_url(), "client_name": name}], "prefix": name},
        }
    }
    channel_layers.backends.clear()
    yield name
    channel_layers.backends.clear()


def drop_blocking_connections(client_name: str) -> int:
    """Close, from the Redis side, the layer's connections blocked reading a channel (what a
    Redis restart or a network blip does to a consumer's receive)."""
    import redis

    admin = redis.Redis.from_url(redis_url())
    ids = [c["id"] for c in admin.client_list() if c.get("name") == client_name and c["cmd"] == "bzpopmin"]
    for client_id in ids:
        admin.client_kill_filter(_id=client_id)
    admin.close()
    return len(ids)


async def test_run_consumer_survives_a_dropped_layer_connection_and_resends_the_state(
    named_redis_layer, live_scenario, user
):
    run = await sync_to_async(Run.objects.create)(scenario=live_scenario, status=RunStatus.RUNNING)
    comm = communicator(f"/ws/runs/{run.pk}/", user)
    await comm.connect()
    await comm.receive_json_from(timeout=5)  # state
    await asyncio.sleep(0.3)  # the consumer is blocked reading its channel
    assert await sync_to_async(drop_blocking_connections)(named_redis_layer) >= 1
    resent = await comm.receive_json_from(timeout=10)
    assert resent["type"] == "state" and resent["run"]["id"] == run.pk
    await sync_to_async(broadcast.publish_progress)(run, 0.5, "after the blip", force=True)
    message = await comm.receive_json_from(timeout=5)
    assert message["type"] == "progress" and message["stage"] == "after the blip"
    await comm.disconnect()


def final(message: dict) -> bool:
    """Whether a stream message says the run succeeded (its status, or a resent state)."""
    if message.get("type") == "status":
        return message["status"] == RunStatus.SUCCEEDED
    return message.get("type") == "state" and message["run"]["status"] == RunStatus.SUCCEEDED


async def test_thirty_clients_on_one_run_all_receive_the_final_state(redis_layer, live_scenario, user):
    run = await sync_to_async(Run.objects.create)(scenario=live_scenario, status=RunStatus.QUEUED)
    clients = [communicator(f"/ws/runs/{run.pk}/", user) for _ in range(30)]
    connected = await asyncio.gather(*(c.connect(timeout=10) for c in clients))
    assert all(ok for ok, _ in connected)
    await asyncio.gather(*(c.receive_json_from(timeout=10) for c in clients))  # states

    await sync_to_async(Run.objects.filter(pk=run.pk).update)(status=RunStatus.SUCCEEDED, progress=1.0)
    done = await sync_to_async(Run.objects.select_related("scenario").get)(pk=run.pk)
    await sync_to_async(broadcast.publish_status)(done)

    async def until_final(comm) -> bool:
        while not final(await comm.receive_json_from(timeout=10)):
            pass
        return True

    assert all(await asyncio.gather(*(until_final(c) for c in clients)))
    await asyncio.gather(*(c.disconnect() for c in clients))
