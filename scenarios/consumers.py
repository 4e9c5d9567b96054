"""WebSocket consumers: one per run page and one per design page.

A consumer checks on connect, through the permission module, that the user may see the run or
design (refusing the handshake with close code 4404 otherwise: another team's run and a missing
one look the same), joins its group, sends the stored state first (so a reload resumes) and
relays what workers publish. Consumers only read. It relays at most ``MAX_MESSAGES_PER_S`` progress/partial
messages per second however many workers publish (newest value per kind kept), status
messages at once. A client may send ``{"type": "state"}`` to get the stored state again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from scenarios import broadcast

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


class _LiveConsumer(AsyncJsonWebsocketConsumer):
    group: str | None = None

    async def connect(self) -> None:
        broadcast.register_server_loop(asyncio.get_running_loop())
        self.relay = Relay(self.send_json)
        allowed = await self.authorize()
        if allowed is not True:
            await self.close(code=allowed)
            return
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json(await self.state())

    async def disconnect(self, code: int) -> None:
        if getattr(self, "relay", None) is not None:
            self.relay.close()
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs) -> None:
        if isinstance(content, dict) and content.get("type") == "state":
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
    from topology.models import Design
    from twin.permissions import restrict

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
