"""The only module that talks to the channel layer: run and design groups, live messages.

Workers (and services) call ``publish_progress`` / ``publish_partial`` / ``publish_status``;
consumers join the groups named by ``run_group`` / ``design_group`` and relay. Messages are
JSON dicts with ``type`` first (see ``docs`` of the contract):

- ``{"type": "progress", "run": id, "progress": 0.42, "stage": "...", "t": ms}``
- ``{"type": "partial", "run": id, "metric": "link_util" | None, "values": [R] | None,
  "summary": {...} | None, "t": ms}`` (plus ``"figures"``: the partial result so far, worded,
  when a kind's computation published one)
- ``{"type": "status", "run": id, "design": id, "status": "succeeded", "progress": 1.0,
  "stage": "...", "summary": {...brief...}, "error": "", "t": ms}``

``t`` is the publish time (ms since the epoch) for latency measurements. Progress and partial
messages are throttled per run and per process to at most ``MAX_MESSAGES_PER_S`` (the newest
pending one is sent when the interval has passed, so the last value always arrives); status
messages are never dropped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from typing import Any

logger = logging.getLogger(__name__)

MAX_MESSAGES_PER_S = 10
#: Channel-layer message type; consumers implement ``live_message``.
EVENT_TYPE = "live.message"

_server_loop: asyncio.AbstractEventLoop | None = None


def run_group(run_id: int) -> str:
    """Group of one run's live messages."""
    return f"run-{int(run_id)}"


def design_group(design_id: int) -> str:
    """Group of the status messages of every run of one design."""
    return f"design-{int(design_id)}"


def register_server_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Remember the ASGI server's event loop (consumers call this on connect).

    The in-memory channel layer of embedded mode is plain asyncio queues owned by that loop; a
    worker thread must hand its sends to that loop instead of running them on a loop of its own
    (which would not wake the consumer up).
    """
    global _server_loop
    _server_loop = loop


def _now_ms() -> float:
    return round(time.time() * 1000.0, 3)


def send(group: str, message: dict[str, Any]) -> None:
    """Send one message to a group, from sync code in any thread (never raises)."""
    from channels.layers import InMemoryChannelLayer, get_channel_layer

    layer = get_channel_layer()
    if layer is None:
        return
    event = {"type": EVENT_TYPE, "message": message}
    try:
        loop = _server_loop
        if isinstance(layer, InMemoryChannelLayer) and loop is not None and loop.is_running():
            if _running_loop() is loop:
                loop.create_task(layer.group_send(group, event))
            else:
                asyncio.run_coroutine_threadsafe(layer.group_send(group, event), loop).result(timeout=5)
        else:
            future = asyncio.run_coroutine_threadsafe(layer.group_send(group, event), _publisher_loop())
            future.result(timeout=5)
    except Exception:  # live updates are best effort; the stored state is the truth
        logger.warning("could not publish to %s", group, exc_info=True)


_publisher: tuple[int, asyncio.AbstractEventLoop] | None = None
_publisher_lock = threading.Lock()


def _publisher_loop() -> asyncio.AbstractEventLoop:
    """This process's publishing event loop, on a daemon thread of its own.

    One long-lived loop keeps the channel layer's Redis connections open between messages
    (``async_to_sync`` would build a loop and a connection per message); it is per process id
    because a forked pool child does not inherit the parent's threads.
    """
    global _publisher
    with _publisher_lock:
        if _publisher is None or _publisher[0] != os.getpid() or not _publisher[1].is_running():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="live-publisher", daemon=True)
            thread.start()
            while not loop.is_running():
                time.sleep(0.001)
            _publisher = (os.getpid(), loop)
        return _publisher[1]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class RateGate:
    """The one rate rule of live messages: at most one message per interval; a message that comes
    too soon waits in the slot of its ``subkey`` (replacing an older pending one of that subkey),
    and pending slots leave oldest first, one per interval, so the newest value of every subkey
    always arrives. Not thread-safe and clock-free: its drivers (a thread timer in the publisher,
    an asyncio task in the consumer) hold the lock and pass the time."""

    def __init__(self, rate: float = MAX_MESSAGES_PER_S):
        self.interval_s = 1.001 / rate  # a hair over 1/rate: float sums never fit rate + 1 in a second
        self.last = -1e9
        self.pending: dict[Any, Any] = {}

    def offer(self, subkey: Any, item: Any, now: float) -> bool:
        """True: send ``item`` now. False: it waits (see :meth:`wait_s`)."""
        if not self.pending and now - self.last >= self.interval_s:
            self.last = now
            return True
        self.pending[subkey] = item
        return False

    def wait_s(self, now: float) -> float | None:
        """Seconds until the next pending item may leave (None when nothing waits)."""
        return max(0.0, self.last + self.interval_s - now) if self.pending else None

    def pop_due(self, now: float) -> Any | None:
        """The oldest pending item if its turn has come, else None (a timer set for
        :meth:`wait_s` may fire a rounding error early: that counts as on time)."""
        if not self.pending or now - self.last < self.interval_s - 1e-9:
            return None
        self.last = now
        return self.pending.pop(next(iter(self.pending)))

    def drain(self, now: float) -> list[Any]:
        """Every pending item, oldest first (a forced message goes after them)."""
        items, self.pending = list(self.pending.values()), {}
        if items:
            self.last = now
        return items


class Throttle:
    """At most ``rate`` messages per second per run (``key``), from any thread of a worker: one
    :class:`RateGate` per run, driven by a timer thread that sends the pending messages. A
    forced message first sends everything pending (keeping the order), then itself.
    """

    def __init__(
        self, rate: float = MAX_MESSAGES_PER_S, sender=None, clock=time.monotonic, timer=threading.Timer
    ):
        self.rate = rate
        self.interval_s = RateGate(rate).interval_s
        self.sender = sender or send
        self.clock = clock
        self.timer = timer
        self._lock = threading.Lock()
        self._gates: dict[Any, RateGate] = {}
        self._timers: dict[Any, threading.Timer] = {}

    def _gate(self, key: Any) -> RateGate:
        if key not in self._gates:
            self._gates[key] = RateGate(self.rate)
        return self._gates[key]

    def publish(
        self, key: Any, subkey: Any, group: str, message: dict[str, Any], *, force: bool = False
    ) -> bool:
        """Send now if allowed (or forced), else keep it pending. Returns whether it was sent now."""
        if force:
            self.flush(key, then=(group, message))
            return True
        with self._lock:
            gate = self._gate(key)
            now = self.clock()
            if not gate.offer(subkey, (group, message), now):
                self._schedule(key, gate.wait_s(now))
                return False
        self.sender(group, message)
        return True

    def _schedule(self, key: Any, wait_s: float | None) -> None:
        if wait_s is not None and key not in self._timers:
            timer = self.timer(wait_s, self._tick, args=(key,))
            timer.daemon = True
            self._timers[key] = timer
            timer.start()

    def _tick(self, key: Any) -> None:
        with self._lock:
            self._timers.pop(key, None)
            gate = self._gate(key)
            now = self.clock()
            item = gate.pop_due(now)
            self._schedule(key, gate.wait_s(now))
        if item is not None:
            self.sender(*item)

    def flush(self, key: Any, then: tuple[str, dict[str, Any]] | None = None) -> None:
        """Send every pending message of ``key`` now, oldest first (then ``then``)."""
        with self._lock:
            timer = self._timers.pop(key, None)
            if timer is not None:
                timer.cancel()
            gate = self._gate(key)
            now = self.clock()
            items = gate.drain(now)
            if then is not None:
                gate.last = now
                items.append(then)
        for group, message in items:
            self.sender(group, message)


_throttle = Throttle()


def publish_progress(run, progress: float, stage: str = "", *, force: bool = False) -> None:
    """Publish a run's progress (0..1) and stage label (throttled)."""
    message = {
        "type": "progress",
        "run": run.pk,
        "progress": round(float(progress), 4),
        "stage": stage,
        "t": _now_ms(),
    }
    _throttle.publish(run.pk, "progress", run_group(run.pk), message, force=force)


def publish_partial(
    run,
    *,
    metric: str | None,
    values: list[float] | None,
    summary: dict[str, Any] | None = None,
    force: bool = False,
    figures: list[dict[str, str]] | None = None,
) -> None:
    """Publish partial results: a floor-plan metric's per-rack values (rounded, racks by pk)
    and/or a few summary numbers (throttled together with progress, unless forced); ``figures``
    (``[{"key", "label", "text"}]``) word the run's partial result so far, when given."""
    message = {
        "type": "partial",
        "run": run.pk,
        "metric": metric,
        "values": values,
        "summary": summary,
        "t": _now_ms(),
    }
    if figures is not None:
        message["figures"] = figures
    # Sweep points are distinct results: each keeps its own pending slot (never coalesced).
    point = (summary or {}).get("point") or {}
    _throttle.publish(
        run.pk, ("partial", metric, point.get("index")), run_group(run.pk), message, force=force
    )


def status_message(run) -> dict[str, Any]:
    """The status message of a run (also what the design group receives): the same fields and
    labels as the stored state (``selectors.run_state_brief``), so a page shows the same words
    live and after a reload."""
    from scenarios.selectors import brief_summary, run_kind_label, summary_figures

    return {
        "type": "status",
        "run": run.pk,
        "design": run.scenario.design_id,
        "scenario": run.scenario_id,
        "kind": run.kind,
        "kind_label": run_kind_label(run),
        "status": run.status,
        "status_label": run.get_status_display(),
        "progress": round(float(run.progress), 4),
        "stage": run.stage,
        "summary": brief_summary(run.kind, run.summary or {}),
        "figures": summary_figures(run.kind, run.summary or {}),
        "error": run.error,
        "t": _now_ms(),
    }


def publish_status(run) -> None:
    """Publish a run's status change to its group and its design's group (never throttled)."""
    _throttle.flush(run.pk)
    message = status_message(run)
    send(run_group(run.pk), message)
    send(design_group(run.scenario.design_id), message)
