"""The progress board: live progress of background work that runs inside one database
transaction (a design being saved), where the rows it would update are invisible until commit.

A task publishes ``{"progress": 0..1, "stage": "..."}`` under a key; a page polls it. In
embedded mode the worker is a thread of the web process, so a dictionary is shared by both; in
Redis mode the board is a Redis key (with a time to live) that every process sees.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from django.conf import settings

TTL_S = 3600
_PREFIX = "twin:progress:"
_local: dict[str, dict[str, Any]] = {}
_lock = threading.Lock()
_clients: dict[str, Any] = {}


def _redis():
    url = settings.REDIS_URL
    if url not in _clients:
        import redis

        _clients[url] = redis.Redis.from_url(url, socket_timeout=5)
    return _clients[url]


def progress_publish(key: str, *, progress: float, stage: str) -> None:
    """Publish the latest progress of ``key`` (best effort: a lost update only delays the bar)."""
    value = {"progress": max(0.0, min(1.0, float(progress))), "stage": str(stage)[:200]}
    if settings.EMBEDDED_MODE:
        with _lock:
            _local[key] = value
        return
    try:
        _redis().set(_PREFIX + key, json.dumps(value), ex=TTL_S)
    except Exception:  # the board is advisory; the build's row says how it ended
        return


def progress_read(key: str) -> dict[str, Any] | None:
    """The latest progress published under ``key``, or None."""
    if settings.EMBEDDED_MODE:
        with _lock:
            return _local.get(key)
    try:
        raw = _redis().get(_PREFIX + key)
    except Exception:
        return None
    return json.loads(raw) if raw else None


def progress_clear(key: str) -> None:
    """Forget ``key`` (the work finished; its row holds the outcome)."""
    if settings.EMBEDDED_MODE:
        with _lock:
            _local.pop(key, None)
        return
    try:
        _redis().delete(_PREFIX + key)
    except Exception:
        return
