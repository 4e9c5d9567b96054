"""WebSocket consumers: one per run page and one per design page.

A consumer checks on connect, through the permission module, that the user may see the run or
design (refusing the handshake with close code 4404 otherwise: another team's run and a missing
one look the same), joins its group, sends the stored state first (so a reload resumes) and
relays what workers publish. Consumers only read. It relays at most ``MAX_MESSAGES_PER_S`` progress/partial
messages per second however many workers publish (newest value per kind kept), status
messages at once. A client may send ``{"type": "state"}`` to get the stored state again; any
other frame that is not a JSON object is answered ``{"type": "error", ...}``. A transient
channel-layer error never closes the socket: the consumer retries and resends the stored state.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from scenarios import broadcast

logger = logging.getLogger(__name__)

CLOSE_NOT_FOUND = 4404


class Relay:
    """Send messages through ``send`` at most ``rate`` per second per connection, whatever the
    number of workers publishing: the publisher's :class:`~scenarios.broadcast.RateGate`,
    driven by an asyncio task. Progress and partials coalesce by subkey; status goes at once."""

    def __init__(self, send, rate: float = broadcast.MAX_MESSAGES_PER_S):
        self.send = send
        self.gate = broadcast.RateGate(rate)
        self.task: asyncio.Task | None = None

    @staticmethod
    def subkey(message: dict[str, Any]) -> Any:
        point = (message.get("summary") or {}).get("point") or {}
        return message.get("type"), message.get("metric"), point.get("index")

    async def push(self, message: dict[str, Any]) -> None:
        if message.get("type") not in ("progress", "partial"):
            await self.flush()
            await self.send(message)
            return
        if self.gate.offer(self.subkey(message), message, asyncio.get_running_loop().time()):
            await self.send(message)
        elif self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while (wait := self.gate.wait_s(loop.time())) is not None:
            await asyncio.sleep(wait)
            message = self.gate.pop_due(loop.time())
            if message is not None:
                await self.send(message)

    async def flush(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self.task = None
        for message in self.gate.drain(asyncio.get_running_loop().time()):
            await self.send(message)

    def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()


def layer_errors() -> tuple[type[BaseException], ...]:
    """Transient errors of the channel layer: a Redis timeout or a dropped connection
    (channels_redis raises redis-py's errors; sockets raise OSError)."""
    try:
        from redis.exceptions import RedisError
    except ImportError:  # embedded mode without the redis package
        return (OSError, asyncio.TimeoutError)
    return (OSError, asyncio.TimeoutError, RedisError)


def retry_delay_s(failures: int) -> float:
    """Backoff after the ``failures``-th layer error in a row: 0.05 s doubling up to 2 s."""
    return min(2.0, 0.05 * 2 ** max(0, failures - 1))


class _LiveConsumer(AsyncJsonWebsocketConsumer):
    """Join a group, send the stored state, relay; survive transient channel-layer errors.

    A layer error while joining the group or receiving from it never closes the socket (with
    one Redis for 200 sockets a read may time out): the consumer waits with backoff, joins the
    group again and resends the stored state, which holds everything a lost message said.
    """

    group: str | None = None
    accepted = False
    _layer_failures = 0

    # channels' AsyncConsumer.__call__ stores the layer's receive here; its dispatch loop reads
    # it back, and gets the retrying receive below instead.
    @property
    def channel_receive(self):
        return self._receive_from_layer

    @channel_receive.setter
    def channel_receive(self, receive) -> None:
        self._layer_receive = receive

    async def _receive_from_layer(self) -> dict[str, Any]:
        try:
            message = await self._layer_receive()
        except layer_errors() as exc:
            self._layer_failures += 1
            logger.warning("stream %s: channel layer receive failed (%r); retrying", self.group, exc)
            await asyncio.sleep(retry_delay_s(self._layer_failures))
            return {"type": "live.resync"}
        self._layer_failures = 0
        return message

    async def connect(self) -> None:
        broadcast.register_server_loop(asyncio.get_running_loop())
        self.relay = Relay(self.send_json)
        allowed = await self.authorize()
        if allowed is not True:
            await self.close(code=allowed)
            return
        await self._join_group()
        await self.accept()
        self.accepted = True
        await self.send_json(await self.state())

    async def _join_group(self) -> None:
        """Join the group, retrying layer errors with backoff until it works."""
        failures = 0
        while True:
            try:
                await self.channel_layer.group_add(self.group, self.channel_name)
                return
            except layer_errors() as exc:
                failures += 1
                logger.warning("stream %s: joining the group failed (%r); retrying", self.group, exc)
                await asyncio.sleep(retry_delay_s(failures))

    async def live_resync(self, event: dict[str, Any]) -> None:
        """After a layer error: join again (a lost connection may have lost the membership) and
        resend the stored state (messages published meanwhile may be lost)."""
        if self.group is None:
            return
        await self._join_group()
        if self.accepted:
            await self.send_json(await self.state())

    async def disconnect(self, code: int) -> None:
        if getattr(self, "relay", None) is not None:
            self.relay.close()
        if self.group is not None:
            try:
                await self.channel_layer.group_discard(self.group, self.channel_name)
            except layer_errors():  # the group's expiry removes it anyway
                logger.warning("stream %s: leaving the group failed", self.group)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs) -> None:
        """A frame that is not a JSON object gets an error message, not a closed socket."""
        try:
            content = json.loads(text_data) if text_data is not None else None
        except ValueError:
            content = None
        if not isinstance(content, dict):
            await self.send_json({"type": "error", "error": 'messages are JSON objects: {"type": "state"}'})
            return
        await self.receive_json(content)

    async def receive_json(self, content: Any, **kwargs) -> None:
        if content.get("type") == "state":
            await self.send_json(await self.state())

    async def live_message(self, event: dict[str, Any]) -> None:
        """Handler of ``broadcast.EVENT_TYPE`` ("live.message")."""
        await self.relay.push(event["message"])

    async def authorize(self) -> bool | int:
        raise NotImplementedError

    async def state(self) -> dict[str, Any]:
        raise NotImplementedError


class RunConsumer(_LiveConsumer):
    """``ws/runs/<run_id>/``: the state of one run, then its progress, partials and status."""

    async def authorize(self) -> bool | int:
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if not await _allowed("run", self.run_id, self.scope.get("user")):
            return CLOSE_NOT_FOUND
        self.group = broadcast.run_group(self.run_id)
        return True

    async def state(self) -> dict[str, Any]:
        return {"type": "state", "run": await _run_state(self.run_id)}


class DesignConsumer(_LiveConsumer):
    """``ws/designs/<design_id>/``: the design's latest runs, then their status messages."""

    async def authorize(self) -> bool | int:
        self.design_id = int(self.scope["url_route"]["kwargs"]["design_id"])
        if not await _allowed("design", self.design_id, self.scope.get("user")):
            return CLOSE_NOT_FOUND
        self.group = broadcast.design_group(self.design_id)
        return True

    async def state(self) -> dict[str, Any]:
        return {"type": "design_state", "design": self.design_id, "runs": await _design_runs(self.design_id)}


@database_sync_to_async
def _allowed(what: str, pk: int, user) -> bool:
    """Whether ``user`` may see the run or design ``pk`` (a missing one and another team's look
    the same: both close with 4404)."""
    from scenarios.models import Run
    from teams.permissions import restrict
    from topology.models import Design

    model = Run if what == "run" else Design
    return restrict(model.objects.filter(pk=pk), user, "view").exists()


@database_sync_to_async
def _run_state(run_id: int) -> dict[str, Any]:
    from scenarios.models import Run
    from scenarios.selectors import run_state

    return run_state(run=Run.objects.select_related("scenario").get(pk=run_id))


@database_sync_to_async
def _design_runs(design_id: int) -> list[dict[str, Any]]:
    from scenarios.selectors import design_run_states
    from topology.models import Design

    return design_run_states(design=Design.objects.get(pk=design_id))
